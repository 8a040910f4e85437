"""Server-side diffs: line and word level, everything escaped."""

import pytest

from projects.memory.diffing import diff_texts

pytestmark = pytest.mark.db_independent


def test_identical_texts_have_no_rows():
    diff = diff_texts("a\nb\n", "a\nb\n")
    assert diff.identical and diff.rows == [] and diff.unified == []


def test_changed_words_are_highlighted_inside_a_changed_line():
    diff = diff_texts("Prefers short reports\n", "Prefers long reports\n")
    (row,) = diff.rows
    assert row.kind == "replace"
    assert row.old_html == 'Prefers <del class="deletion">short</del> reports'
    assert row.new_html == 'Prefers <ins class="addition">long</ins> reports'
    assert (diff.added, diff.removed) == (1, 1)
    assert [line.kind for line in diff.unified] == ["delete", "insert"]


def test_inserted_and_deleted_lines_keep_their_numbers():
    diff = diff_texts("a\nb\nc\n", "a\nc\nd\n")
    kinds = [(r.kind, r.old_number, r.new_number) for r in diff.rows]
    assert ("delete", 2, None) in kinds and ("insert", None, 3) in kinds
    assert (diff.added, diff.removed) == (1, 1)


def test_html_in_either_text_is_escaped():
    diff = diff_texts("<b>x</b>\n", "<script>alert(1)</script>\n")
    html = "".join(r.old_html + r.new_html for r in diff.rows)
    assert "<script" not in html and "<b>" not in html and "&lt;" in html


def test_long_unchanged_runs_are_folded():
    old = "\n".join(f"line {i}" for i in range(1, 41))
    new = old.replace("line 20", "line twenty")
    diff = diff_texts(old, new, context=2)
    kinds = [r.kind for r in diff.rows]
    assert kinds[0] == "skip" and kinds[-1] == "skip"
    assert len(diff.rows) == 1 + 2 + 1 + 2 + 1


def test_cyrillic_words_are_diffed_as_words():
    diff = diff_texts("Часовой пояс: Москва\n", "Часовой пояс: Новосибирск\n")
    assert '<ins class="addition">Новосибирск</ins>' in diff.rows[0].new_html
