"""Key layout and path validation: pure, no S3, no database."""

import fnmatch
import uuid

import pytest
from django.core.exceptions import ValidationError

from projects.memory import layout

pytestmark = pytest.mark.db_independent

PID = uuid.UUID("11111111-1111-1111-1111-111111111111")
AID = uuid.UUID("22222222-2222-2222-2222-222222222222")
FID = uuid.UUID("33333333-3333-3333-3333-333333333333")
PREFIX = layout.project_prefix(PID)
SHA = "a" * 64


def test_keys_follow_the_design_layout():
    assert PREFIX == f"projects/{PID}/"
    assert layout.agent_file_key(PREFIX, AID, "SOUL.md") == f"projects/{PID}/agents/{AID}/SOUL.md"
    assert layout.user_file_key(PREFIX, 7) == f"projects/{PID}/users/7/USER.md"
    assert layout.workspace_file_key(PREFIX, "a/b.md") == f"projects/{PID}/workspace/a/b.md"
    assert layout.agent_sessions_prefix(PREFIX, AID) == f"projects/{PID}/sessions/{AID}/"
    assert layout.session_prefix(PREFIX, AID, FID) == f"projects/{PID}/sessions/{AID}/{FID}/"
    assert layout.snapshot_key(PREFIX, FID, 3, SHA) == f"projects/{PID}/_history/{FID}/3-{SHA}.md"


@pytest.mark.parametrize(
    "key",
    [
        f"projects/{PID}/agents/{AID}/SOUL.md",
        f"projects/{PID}/users/7/USER.md",
        f"projects/{PID}/workspace/решения/итог.md",
        f"projects/{PID}/_history/{FID}/12-{SHA}.md",
    ],
)
def test_parse_key_inverts_the_builders(key):
    parsed = layout.parse_key(PREFIX, key)
    assert parsed.kind is not None
    rebuilt = {
        "agent": lambda p: layout.agent_file_key(PREFIX, p.agent_id, p.path),
        "user": lambda p: layout.user_file_key(PREFIX, p.user_id),
        "workspace": lambda p: layout.workspace_file_key(PREFIX, p.path),
        "history": lambda p: layout.snapshot_key(PREFIX, p.file_id, p.number, p.sha256),
    }[parsed.kind](parsed)
    assert rebuilt == key


@pytest.mark.parametrize(
    "key",
    [
        f"projects/{PID}/agents/{AID}/EVIL.md",
        f"projects/{PID}/agents/not-a-uuid/SOUL.md",
        f"projects/{PID}/users/007/USER.md",
        f"projects/{PID}/users/7/OTHER.md",
        f"projects/{PID}/workspace/../x.md",
        f"projects/{PID}/workspace/x.txt",
        f"projects/{PID}/_history/{FID}/0-{SHA}.md",
        f"projects/{PID}/stray.bin",
        "projects/other/workspace/a.md",
    ],
)
def test_parse_key_reports_keys_outside_the_layout(key):
    assert layout.parse_key(PREFIX, key).kind is None


@pytest.mark.parametrize(
    "path",
    [
        "today.md",
        "events/2026/12/01.md",
        "заметки/итоги дня.md",
        "a-b_c.d.md",
        "x" * 97 + ".md",
        "logs/tools.md",
        "agents-notes.md",
        "AGENTS.md.md",
        "console.md",
        "100% done.md",
        "нагрузка/пик.md",
        "नमस्ते.md",
    ],
)
def test_good_workspace_paths_are_accepted(path):
    assert layout.validate_workspace_path(path) == path


def test_paths_are_normalized_to_nfc():
    decomposed = "й.md".replace("й", "и\u0306")
    assert layout.validate_workspace_path(decomposed) == "й.md"


@pytest.mark.parametrize(
    "path,code",
    [
        ("", "path_empty"),
        ("../secrets.md", "path_dots"),
        ("a/../../b.md", "path_dots"),
        ("./a.md", "path_dots"),
        ("/etc/passwd.md", "path_absolute"),
        ("C:/x.md", "path_absolute"),
        ("a\\b.md", "path_backslash"),
        ("a\x00.md", "path_control"),
        ("a\nb.md", "path_control"),
        ("a\x1b[31m.md", "path_control"),
        ("notes.txt", "path_extension"),
        ("notes.MD", "path_extension"),
        (".md", "path_hidden"),
        ("a//b.md", "path_empty_segment"),
        ("a/b/", "path_empty_segment"),
        (".hidden/a.md", "path_hidden"),
        (" a.md", "path_space"),
        ("a\tb.md", "path_control"),
        ("x" * 101 + ".md", "path_segment_length"),
        ("/".join(["d"] * 9) + ".md", "path_depth"),
        ("a" * 400 + ".md", "path_length"),
        ("evil\u202egnp.md", "path_control"),  # right-to-left override
        ("zero\u200bwidth.md", "path_control"),  # zero-width space
        ("\ufeffbom.md", "path_control"),
        ("\uff0e\uff0e/x.md", "path_unicode"),  # full-width dots read as ..
        ("a\u2215b.md", "path_char"),  # division slash
        ("a\uff0fb.md", "path_unicode"),  # full-width solidus
        ("what?.md", "path_char"),
        ("x/a:b.md", "path_char"),
        ("ﬁle.md", "path_unicode"),  # ligature
        # tag text in a name: bracket look-alikes and ignorables refused like other bad paths
        ("x\u2039/user_profile\u203a.md", "path_lookalike"),
        ("x\u2329user_profile\u232a.md", "path_lookalike"),
        ("x\u27e8a\u27e9.md", "path_lookalike"),
        ("x\u3008a.md", "path_lookalike"),
        ("\u00abq\u00bb.md", "path_lookalike"),
        ("a\u276eb.md", "path_lookalike"),
        ("a\u02c2b.md", "path_lookalike"),
        ("user\u2066_profile.md", "path_control"),  # bidi isolate
        ("a\ufe0f.md", "path_control"),  # variation selector
        ("a\U000e0041.md", "path_control"),  # tag character
        ("a\u115fb.md", "path_control"),  # Hangul filler
        # names that mislead a reader
        ("AGENTS.md", "path_reserved"),
        ("notes/SOUL.md", "path_reserved"),
        ("USER.md", "path_reserved"),
        ("x/TOOLS.md", "path_reserved"),
        ("\u0410GENTS.md", "path_reserved"),  # Cyrillic A
        ("USER.md/x.md", "path_reserved"),
        ("CON.md", "path_reserved"),
        ("x/lpt1.md", "path_reserved"),
        ("nul.notes.md", "path_reserved"),
        ("%2e%2e/x.md", "path_percent"),
        ("a%2fb.md", "path_percent"),
        ("a%5Cb.md", "path_percent"),
        ("x\u3002md.md", "path_lookalike"),  # ideographic full stop
        ("a\u3002b/c.md", "path_lookalike"),
        ("a\ufe52b.md", "path_unicode"),  # small full stop: NFKC catches it first
        ("a\u06d4b.md", "path_lookalike"),  # Arabic full stop
        ("dots./x.md", "path_trailing_dot"),
    ],
)
def test_bad_workspace_paths_are_refused_with_a_reason(path, code):
    with pytest.raises(ValidationError) as info:
        layout.validate_workspace_path(path)
    assert info.value.code == code
    assert info.value.messages[0]


def test_non_text_path_is_refused():
    with pytest.raises(ValidationError):
        layout.validate_workspace_path(b"a.md")


def test_agent_files_are_only_the_three_procedural_and_semantic_files():
    with pytest.raises(ValidationError):
        layout.agent_file_key(PREFIX, AID, "USER.md")


@pytest.mark.parametrize("bad", [0, -1, True, "7", None])
def test_user_ids_must_be_positive_integers(bad):
    with pytest.raises(ValidationError):
        layout.user_file_key(PREFIX, bad)


def test_prefix_override_is_validated():
    assert layout.project_prefix(PID, "tenders/2026/") == "tenders/2026/"
    for bad in ["../x/", "/abs/", "no-slash", "a//b/", "sp ace/"]:
        with pytest.raises(ValidationError):
            layout.project_prefix(PID, bad)


def test_keys_a_deny_pattern_names_are_keys_the_layout_refuses():
    """Every pattern in runners' Deny statements names only keys that validate_workspace_path
    refuses (a wildcard read as a plain letter, or as nothing), and common good keys pass."""
    root = layout.workspace_prefix(PREFIX)
    patterns = layout.refused_workspace_patterns(PREFIX)
    assert patterns and all(p.startswith(root) for p in patterns)
    for pattern in patterns:
        for fill in ("a", "", "a/b"):
            sample = pattern.replace("*", fill).replace("?", "a")[len(root) :]
            if not sample.endswith(".md"):
                sample += ".md"
            with pytest.raises(ValidationError):
                layout.validate_workspace_path(sample)
    good = [
        f"{root}notes/a.md",
        f"{root}logs/tools.md",
        f"{root}MY-AGENTS.md",
        f"{root}решения/итог.md",
        f"{root}a b/c.md",
    ]
    assert not [key for key in good for p in patterns if fnmatch.fnmatchcase(key, p)]
