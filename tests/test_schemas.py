"""runners.schemas: the manifest's and the hook policy's one schema each. What passes (paths
made NFC, the keys given kept), what is refused (the message people read, its code, where it
is), and which problem is told first when there are several."""

import unicodedata

import pytest
from django.core.exceptions import ValidationError

from projects.runners import schemas
from projects.runners.setting_errors import SettingError

NFD = unicodedata.normalize("NFD", "café")
NFC = unicodedata.normalize("NFC", "café")


def _refused(check, data, **options) -> SettingError:
    with pytest.raises(ValidationError) as info:
        check(data, **options)
    assert isinstance(info.value, SettingError)
    return info.value


# --- The manifest ----------------------------------------------------------------------------


def test_a_manifest_passes_with_its_paths_made_nfc_and_its_keys_as_given():
    data = {
        "sections": [
            {"tag": "agent_identity", "source": "SOUL.md"},
            {
                "tag": "notes",
                "source": f"workspace/{NFD}/**.md",
                "exclude": [f"workspace/{NFD}/x.md"],
                "max_tokens": 300,
            },
        ],
        "total_tokens": 1000,
    }
    manifest = schemas.manifest(data)
    assert [s.source for s in manifest.sections] == ["SOUL.md", f"workspace/{NFC}/**.md"]
    assert manifest.sections[1].exclude == [f"workspace/{NFC}/x.md"]
    assert manifest.stored() == {
        "sections": [
            {"tag": "agent_identity", "source": "SOUL.md"},
            {
                "tag": "notes",
                "source": f"workspace/{NFC}/**.md",
                "exclude": [f"workspace/{NFC}/x.md"],
                "max_tokens": 300,
            },
        ],
        "total_tokens": 1000,
    }


def test_a_manifest_saved_under_the_looser_rules_still_reads():
    data = {
        "sections": [
            {"tag": "rules\n", "source": "workspace/.old/*.md", "max_tokens": schemas.MAX_TOKENS * 10}
        ],
        "total_tokens": schemas.MAX_TOKENS + 1,
    }
    manifest = schemas.manifest(data, saving=False)
    section = manifest.sections[0]
    assert (section.tag, section.max_tokens) == ("rules", schemas.MAX_TOKENS)
    assert manifest.total_tokens == schemas.MAX_TOKENS
    # Saved now, the same manifest is refused at its first problem: the tag.
    assert _refused(schemas.manifest, data).code == "manifest_tag"


@pytest.mark.parametrize(
    "data, code, message, loc",
    [
        ([], "manifest_type", "The manifest must be a JSON object.", ()),
        (
            {"sections": [{"tag": "a", "source": "SOUL.md"}], "zeta": 1, "alpha": 2},
            "manifest_keys",
            "Unknown manifest keys: alpha, zeta.",
            ("zeta",),
        ),
        ({}, "manifest_sections", "The manifest needs a non-empty list of sections.", ("sections",)),
        (
            {"sections": []},
            "manifest_sections",
            "The manifest needs a non-empty list of sections.",
            ("sections",),
        ),
        (
            {"sections": [{"tag": f"t{n}", "source": "SOUL.md"} for n in range(21)]},
            "manifest_sections",
            "At most 20 sections.",
            ("sections",),
        ),
        (
            {"sections": ["SOUL.md"]},
            "manifest_section",
            "Section 1 must be an object with tag, source, max_tokens and (for a workspace glob) exclude.",
            ("sections", 0),
        ),
        (
            {"sections": [{"tag": "a", "source": "SOUL.md", "extra": 1}]},
            "manifest_section",
            "Section 1 must be an object with tag, source, max_tokens and (for a workspace glob) exclude.",
            ("sections", 0, "extra"),
        ),
        (
            {"sections": [{"tag": "Bad Tag", "source": "SOUL.md"}]},
            "manifest_tag",
            "Section 1: the tag must be lower-case letters, digits and _ (like agent_rules).",
            ("sections", 0, "tag"),
        ),
        (
            {"sections": [{"source": "SOUL.md"}]},
            "manifest_tag",
            "Section 1: the tag must be lower-case letters, digits and _ (like agent_rules).",
            ("sections", 0, "tag"),
        ),
        (
            {"sections": [{"tag": "a", "source": "SOUL.md"}, {"tag": "a", "source": "USER.md"}]},
            "manifest_tag",
            "Section 2: tag a is used twice.",
            ("sections", 1, "tag"),
        ),
        (
            {"sections": [{"tag": "a", "source": "workspace/../x.md"}]},
            "manifest_source",
            "Section 1: the source must be SOUL.md, AGENTS.md, TOOLS.md, USER.md or "
            "workspace/<path or glob>.md.",
            ("sections", 0, "source"),
        ),
        (
            {"sections": [{"tag": "a", "source": "SOUL.md", "max_tokens": 0}]},
            "manifest_cap",
            "Section 1: max_tokens must be a whole number from 1 to 10000000.",
            ("sections", 0, "max_tokens"),
        ),
        (
            {"sections": [{"tag": "a", "source": "SOUL.md", "max_tokens": True}]},
            "manifest_cap",
            "Section 1: max_tokens must be a whole number from 1 to 10000000.",
            ("sections", 0, "max_tokens"),
        ),
        (
            {"sections": [{"tag": "a", "source": "SOUL.md", "max_tokens": 2.0}]},
            "manifest_cap",
            "Section 1: max_tokens must be a whole number from 1 to 10000000.",
            ("sections", 0, "max_tokens"),
        ),
        (
            {"sections": [{"tag": "a", "source": "SOUL.md", "exclude": ["workspace/x.md"]}]},
            "manifest_exclude",
            "Section 1: exclude is a list of up to 10 workspace/<glob>.md, for a workspace source.",
            ("sections", 0),
        ),
        (
            {"sections": [{"tag": "a", "source": "workspace/**.md", "exclude": ["SOUL.md"]}]},
            "manifest_exclude",
            "Section 1: exclude is a list of up to 10 workspace/<glob>.md, for a workspace source.",
            ("sections", 0, "exclude"),
        ),
        (
            {"sections": [{"tag": "a", "source": "SOUL.md"}], "total_tokens": -5},
            "manifest_total",
            "total_tokens must be a whole number from 1 to 10000000.",
            ("total_tokens",),
        ),
    ],
)
def test_a_refused_manifest_says_what_and_where(data, code, message, loc):
    error = _refused(schemas.manifest, data)
    assert (error.code, error.messages, error.loc) == (code, [message], loc)


def test_of_several_problems_the_first_in_reading_order_is_told():
    # Section 2 repeats a tag and section 3 has a bad source: the repeat comes first.
    twice = _refused(
        schemas.manifest,
        {
            "sections": [
                {"tag": "a", "source": "SOUL.md"},
                {"tag": "a", "source": "USER.md"},
                {"tag": "b", "source": "../x.md"},
            ]
        },
    )
    assert twice.messages == ["Section 2: tag a is used twice."]
    # Within a section: its shape, then exclude, tag, source and cap, in that order.
    section = {"tag": "Bad", "source": "nowhere.md", "max_tokens": 0, "exclude": ["x"]}
    assert _refused(schemas.manifest, {"sections": [section]}).code == "manifest_exclude"
    assert _refused(schemas.manifest, {"sections": [{**section, "exclude": []}]}).code == "manifest_tag"
    assert _refused(schemas.manifest, {"sections": [{**section, "other": 1}]}).code == "manifest_section"
    # An unknown key is told before anything about the sections.
    assert _refused(schemas.manifest, {"sections": [], "x": 1}).code == "manifest_keys"


def test_a_section_alone_is_checked_by_the_same_schema():
    section = schemas.SectionSchema.model_validate({"tag": "a", "source": f"workspace/{NFD}.md"})
    assert section.source == f"workspace/{NFC}.md"


# --- The hook policy -------------------------------------------------------------------------


def test_a_policy_passes_with_its_paths_made_nfc_and_its_keys_as_given():
    data = {
        "post": {
            f"workspace/{NFD}/*.md": {"modes": ["append", "replace"], "approval": True},
            "AGENTS.md": {"modes": [], "delete": "proposal"},
        },
        "tool": {"log": f"workspace/logs/{NFD}.md"},
        "error": {},
    }
    assert schemas.policy(data).stored() == {
        "post": {
            f"workspace/{NFC}/*.md": {"modes": ["append", "replace"], "approval": True},
            "AGENTS.md": {"modes": [], "delete": "proposal"},
        },
        "tool": {"log": f"workspace/logs/{NFC}.md"},
        "error": {},
    }
    assert schemas.policy({}).stored() == {}


@pytest.mark.parametrize(
    "data, code, message, loc",
    [
        ([], "policy_shape", "The policy is an object with post, tool and error.", ()),
        ({"other": {}}, "policy_shape", "The policy is an object with post, tool and error.", ("other",)),
        ({"post": []}, "policy_post", "post maps file paths or workspace globs to rules.", ("post",)),
        (
            {"post": {f"workspace/r{n}.md": {"modes": ["append"]} for n in range(51)}},
            "policy_post",
            "At most 50 write rules.",
            ("post",),
        ),
        (
            {"post": {"../x.md": {"modes": ["append"]}}},
            "policy_target",
            "../x.md: use SOUL.md, AGENTS.md, TOOLS.md, USER.md or workspace/<path or glob>.md.",
            ("post", "../x.md", "[key]"),
        ),
        (
            {"post": {"USER.md": {"modes": ["delete"]}}},
            "policy_rule",
            'USER.md: a rule is {"modes": ["append"|"replace", ...], "approval": true|false, '
            '"delete": "direct"|"proposal"|"never", "rename": "direct"|"proposal"|"never"}.',
            ("post", "USER.md", "modes", 0),
        ),
        (
            {"post": {"USER.md": {"modes": ["append"], "approval": "yes"}}},
            "policy_rule",
            'USER.md: a rule is {"modes": ["append"|"replace", ...], "approval": true|false, '
            '"delete": "direct"|"proposal"|"never", "rename": "direct"|"proposal"|"never"}.',
            ("post", "USER.md", "approval"),
        ),
        (
            {"post": {"USER.md": {"modes": []}}},
            "policy_rule",
            "USER.md: the rule allows nothing; allow append, replace, delete or rename.",
            ("post", "USER.md"),
        ),
        (
            {"post": {"USER.md": {"modes": ["append"], "rename": "direct"}}},
            "policy_rule",
            "USER.md: only workspace files can be renamed (an agent's files and USER.md keep their names).",
            ("post", "USER.md"),
        ),
        (
            {"tool": {"log": "workspace/x.md", "keep": True}},
            "policy_log",
            'tool is {"log": "workspace/<path>.md"} or {}.',
            ("tool", "keep"),
        ),
        ({"error": []}, "policy_log", 'error is {"log": "workspace/<path>.md"} or {}.', ("error",)),
        (
            {"tool": {"log": "elsewhere.md"}},
            "policy_log",
            "tool log must be a workspace/ path.",
            ("tool", "log"),
        ),
        (
            {"tool": {"log": "workspace/../x.md"}},
            "path_dots",
            "The path may not contain '.' or '..' segments.",
            ("tool", "log"),
        ),
    ],
)
def test_a_refused_policy_says_what_and_where(data, code, message, loc):
    error = _refused(schemas.policy, data)
    assert (error.code, error.messages, error.loc) == (code, [message], loc)


def test_of_several_rules_the_first_problem_in_reading_order_is_told():
    policy = {
        "post": {
            "workspace/a.md": {"modes": ["append"]},
            "USER.md": {"modes": ["append"], "rename": "direct"},
            "../b.md": {"modes": "append"},
        },
        "tool": {"log": "nowhere"},
    }
    assert _refused(schemas.policy, policy).loc == ("post", "USER.md")
    # The path of a rule is told before its rule.
    assert _refused(schemas.policy, {"post": {"../b.md": {"modes": "append"}}}).code == "policy_target"
    # Rules before logs, the tool's log before the error's.
    assert (
        _refused(schemas.policy, {"error": {"log": "x"}, "tool": {"log": "y"}, "post": {"USER.md": {}}}).code
        == "policy_rule"
    )
    assert _refused(schemas.policy, {"error": {"log": "x"}, "tool": {"log": "y"}}).loc == ("tool", "log")


def test_a_rule_alone_is_checked_with_its_path():
    assert schemas.rule("workspace/a.md", {"modes": [], "rename": "proposal"}).rename == "proposal"
    with pytest.raises(schemas.Invalid) as info:
        schemas.rule("AGENTS.md", {"modes": ["append"], "rename": "direct"})
    assert info.value.key == "rule_rename"
    with pytest.raises(schemas.Invalid) as info:
        schemas.rule("AGENTS.md", {"modes": []})
    assert info.value.key == "rule_empty"
    # Without a path (a rule read on its own) only the path's own check is left out.
    assert schemas.RuleSchema.model_validate({"rename": "direct"}).rename == "direct"


# --- One value at a time ---------------------------------------------------------------------


def test_each_field_is_checked_and_made_nfc_by_its_own_rule():
    assert schemas.source(f"workspace/{NFD}.md") == f"workspace/{NFC}.md"
    assert schemas.target(f"workspace/{NFD}/*.md") == f"workspace/{NFC}/*.md"
    assert schemas.exclude([f"workspace/{NFD}.md"]) == [f"workspace/{NFC}.md"]
    assert schemas.log(f"workspace/{NFD}.md") == f"workspace/{NFC}.md"
    assert schemas.tag("agent_rules") == "agent_rules"
    for check, value in [
        (schemas.tag, "Agent"),
        (schemas.source, "workspace/.x.md"),
        (schemas.target, "notes.md"),
        (schemas.log, "logs/x.md"),
        (schemas.exclude, ["workspace/x.md"] * 11),
    ]:
        with pytest.raises(schemas.Invalid):
            check(value)
    with pytest.raises(schemas.Invalid) as info:
        schemas.log("workspace/a//b.md")
    assert info.value.error.code == "path_empty_segment"  # the layout's own message
