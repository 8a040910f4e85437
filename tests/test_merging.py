"""Three-way merge of a conflicting save (projects.memory.merging): pure, no Django needed."""

from projects.memory import merging

BASE = "# Maria\n\n- Prefers short reports.\n- Works in Berlin.\n- Likes tables.\n"


def test_changes_that_do_not_overlap_are_both_kept():
    theirs = BASE.replace("short", "long")
    yours = BASE.replace("tables", "charts")
    result = merging.merge(BASE, theirs, yours)
    assert result.clean and result.unresolved == 0
    assert result.text == "# Maria\n\n- Prefers long reports.\n- Works in Berlin.\n- Likes charts.\n"


def test_overlapping_changes_are_marked_until_chosen():
    theirs = BASE.replace("Berlin", "Munich")
    yours = BASE.replace("Berlin", "Hamburg")
    result = merging.merge(BASE, theirs, yours, theirs_label="revision 3", yours_label="yours")
    assert [(h.theirs, h.yours) for h in result.hunks] == [("- Works in Munich.\n", "- Works in Hamburg.\n")]
    # Counted: the lines that open and close it.
    assert result.unresolved == 1 and merging.unresolved_markers(result.text) == 2
    assert (
        "<<<<<<< revision 3\n- Works in Munich.\n=======\n- Works in Hamburg.\n>>>>>>> yours\n" in result.text
    )
    for choice, line in (("theirs", "Munich"), ("yours", "Hamburg")):
        chosen = merging.merge(BASE, theirs, yours, choices={0: choice})
        assert chosen.unresolved == 0 and merging.unresolved_markers(chosen.text) == 0
        assert chosen.text == BASE.replace("Berlin", line)
    both = merging.merge(BASE, theirs, yours, choices={0: "both"})
    assert "- Works in Munich.\n- Works in Hamburg.\n" in both.text


def test_two_appends_at_the_end_can_both_be_kept_and_an_unended_line_stays_whole():
    result = merging.merge("a\n", "a\nfrom the agent", "a\nfrom the person\n", choices={0: "both"})
    assert result.text == "a\nfrom the agent\nfrom the person\n"
    marked = merging.merge("a\n", "a\nfrom the agent", "a\nfrom the person\n")
    assert "from the agent\n=======\n" in marked.text  # the marker keeps a line of its own


def test_identical_changes_are_not_a_conflict():
    same = BASE + "- New line.\n"
    assert merging.merge(BASE, same, same).text == same
    assert merging.merge(BASE, same, same).clean


def test_marker_lookalikes_in_prose_are_not_counted():
    assert merging.unresolved_markers("a <<<<<<< b\n=== heading\n") == 0
    # A Markdown heading's underline of seven = is the separator's shape, not a marker.
    assert merging.unresolved_markers("Profile\n=======\n\ntext\n") == 0
