"""S3 key layout: the only place memory keys are built, parsed and validated.

    <prefix>agents/<agent_id>/{SOUL.md,AGENTS.md,TOOLS.md}
    <prefix>users/<user_id>/USER.md
    <prefix>workspace/<relative path>.md
    <prefix>sessions/<agent_id>/<session_id>/...   (a runner's scratch space)
    <prefix>_history/<file_id>/<revision number>-<sha256>.md
    <prefix>_prompts/<sha256>.txt      (the exact prompts pre hooks returned, each once)

where <prefix> is `projects/<project_id>/` unless the project names its own prefix. Keys are
built from immutable ids only; the one piece a person or an agent types, a workspace path, is
validated here and refused with a message that says what is wrong. Pure: no Django models,
no I/O.
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

from projects.memory import lookalikes

SCOPE_AGENT = "agent"
SCOPE_USER = "user"
SCOPE_WORKSPACE = "workspace"

AGENT_FILES = ("SOUL.md", "AGENTS.md", "TOOLS.md")
USER_FILE = "USER.md"

MAX_PATH_CHARS = 300
MAX_PATH_BYTES = 600  # S3 allows 1024 bytes per key; leave room for the prefixes
MAX_SEGMENT_CHARS = 100
MAX_DEPTH = 8

# Characters that are legal in S3 but break a sandbox folder on some OS or read as another
# character: Windows-reserved punctuation and look-alikes of the path separators.
_FORBIDDEN_CHARS = set('<>:"|?*') | {"\u2215", "\u2044", "\u29f8", "\uff0f", "\uff3c", "\u2216"}
# Unicode categories that never belong in a file name: control, format (bidi overrides,
# zero-width joiners), surrogates, private use, unassigned, line/paragraph separators.
_FORBIDDEN_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
# Names that mislead inside the workspace: the agent's and the profile's own files as they are
# spelled (a workspace/USER.md reads as the employee's profile; logs/tools.md, a log of tool
# calls, does not) and Windows device names, which no sandbox folder on Windows can hold.
_RESERVED_NAMES = {*AGENT_FILES, USER_FILE}
_DEVICE_NAMES = {"CON", "PRN", "AUX", "NUL", *(f"COM{n}" for n in range(10)), *(f"LPT{n}" for n in range(10))}
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_PREFIX_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*/\Z")
_SNAPSHOT_RE = re.compile(r"\A(?P<number>[1-9][0-9]*)-(?P<sha>[0-9a-f]{64})\.md\Z")
_SHA256_RE = re.compile(r"[0-9a-f]{64}")
_PROMPT_RE = re.compile(r"([0-9a-f]{64})\.txt")


def nfc(text: str) -> str:
    """The one spelling of a path that is stored and matched (Unicode NFC): a name typed with
    combining accents and the same name typed precomposed are one file, one rule, one glob."""
    return unicodedata.normalize("NFC", text)


def _invalid(message: str, code: str, **params) -> ValidationError:
    return ValidationError(message, code=code, params=params or None)


def validate_workspace_path(path: object) -> str:
    """Return the NFC form of a workspace-relative Markdown path, or raise ValidationError."""
    if not isinstance(path, str):
        raise _invalid(_("The path must be text."), "path_type")
    if path == "":
        raise _invalid(_("The path is empty."), "path_empty")
    if "\x00" in path:
        raise _invalid(_("The path contains a NUL character."), "path_control")
    path = nfc(path)
    if unicodedata.normalize("NFKC", path) != path:
        # Full-width dots and slashes, ligatures and the like read as other characters.
        raise _invalid(
            _("The path contains look-alike (compatibility) characters; type them plainly."),
            "path_unicode",
        )
    if len(path) > MAX_PATH_CHARS or len(path.encode("utf-8")) > MAX_PATH_BYTES:
        raise _invalid(
            _("The path is too long (at most %(max)s characters)."), "path_length", max=MAX_PATH_CHARS
        )
    if "\\" in path:
        raise _invalid(_("Use / to separate folders, not a backslash."), "path_backslash")
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        raise _invalid(_("The path must be relative, not absolute."), "path_absolute")
    for char in path:
        if unicodedata.category(char) in _FORBIDDEN_CATEGORIES or lookalikes.is_default_ignorable(char):
            raise _invalid(
                _("The path contains an invisible or control character (U+%(codepoint)s)."),
                "path_control",
                codepoint=f"{ord(char):04X}",
            )
        if char in _FORBIDDEN_CHARS:
            raise _invalid(_("The path may not contain %(char)r."), "path_char", char=char)
        if char.isspace() and char != " ":
            raise _invalid(_("The path may not contain tabs or other special spaces."), "path_space")
        if lookalikes.is_bracket_lookalike(char) or lookalikes.is_full_stop_lookalike(char):
            raise _invalid(
                _(
                    "The path contains %(char)r (U+%(codepoint)s), which reads as another "
                    "character (a bracket or a full stop); type it plainly."
                ),
                "path_lookalike",
                char=char,
                codepoint=f"{ord(char):04X}",
            )
    if _PERCENT_ESCAPE.search(path):
        raise _invalid(
            _("The path contains a percent-encoded character (like %(example)s); type the character itself."),
            "path_percent",
            example="%2e",
        )
    segments = path.split("/")
    if len(segments) > MAX_DEPTH:
        raise _invalid(
            _("The path is nested too deep (at most %(max)s levels)."), "path_depth", max=MAX_DEPTH
        )
    for segment in segments:
        if segment == "":
            raise _invalid(_("The path has an empty folder name (// or a trailing /)."), "path_empty_segment")
        if segment in {".", ".."}:
            raise _invalid(_("The path may not contain '.' or '..' segments."), "path_dots")
        if segment.startswith("."):
            raise _invalid(_("Names may not start with a dot."), "path_hidden")
        if segment != segment.strip():
            raise _invalid(_("Names may not start or end with a space."), "path_space")
        if len(segment) > MAX_SEGMENT_CHARS:
            raise _invalid(
                _("A name in the path is longer than %(max)s characters."),
                "path_segment_length",
                max=MAX_SEGMENT_CHARS,
            )
        if segment.endswith("."):
            raise _invalid(_("Names may not end with a dot."), "path_trailing_dot")
        if lookalikes.reads_as(segment) in _RESERVED_NAMES:
            raise _invalid(
                _(
                    "%(name)s is the name of an agent's or a person's own memory file; "
                    "inside the workspace it would mislead a reader. Pick another "
                    "name."
                ),
                "path_reserved",
                name=segment,
            )
        if segment.split(".", 1)[0].upper() in _DEVICE_NAMES:
            raise _invalid(
                _("%(name)s is a device name on Windows; a sandbox folder there could not hold it."),
                "path_reserved",
                name=segment,
            )
    if not path.endswith(".md") or len(segments[-1]) <= len(".md"):
        raise _invalid(_("Memory files are Markdown: the name must end with .md."), "path_extension")
    return path


DEFAULT_PREFIX_ROOT = "projects/"


def project_prefix(project_id: uuid.UUID, override: str = "") -> str:
    """The key prefix of one project: its own override, or projects/<project_id>/."""
    if override:
        if not _PREFIX_RE.match(override) or ".." in override:
            raise _invalid(
                _("A key prefix is letters, digits, '.', '_', '-' in folders ending with '/'."),
                "prefix_invalid",
            )
        if override.startswith(DEFAULT_PREFIX_ROOT):
            # projects/<id>/ is where every project without its own prefix lives.
            raise _invalid(
                _(
                    "Prefixes under projects/ belong to the console's default layout "
                    "(projects/<id>/); pick another folder."
                ),
                "prefix_reserved",
            )
        return override
    return f"{DEFAULT_PREFIX_ROOT}{_uuid(project_id)}/"


def prefixes_overlap(a: str, b: str) -> bool:
    """True when two prefixes (ending with '/') are equal or one lies inside the other."""
    return a.startswith(b) or b.startswith(a)


def agent_file_key(prefix: str, agent_id: uuid.UUID, name: str) -> str:
    if name not in AGENT_FILES:
        raise _invalid(
            _("An agent's memory files are %(names)s."), "agent_file", names=", ".join(AGENT_FILES)
        )
    return f"{prefix}agents/{_uuid(agent_id)}/{name}"


def users_root(prefix: str) -> str:
    """Where every member's profile folder lies."""
    return f"{prefix}users/"


def sessions_root(prefix: str) -> str:
    return f"{prefix}sessions/"


def agent_prefix(prefix: str, agent_id: uuid.UUID) -> str:
    return f"{prefix}agents/{_uuid(agent_id)}/"


def user_prefix(prefix: str, user_id: int) -> str:
    return f"{users_root(prefix)}{_user_id(user_id)}/"


def user_file_key(prefix: str, user_id: int) -> str:
    return f"{user_prefix(prefix, user_id)}{USER_FILE}"


def workspace_prefix(prefix: str) -> str:
    return f"{prefix}workspace/"


def workspace_file_key(prefix: str, relative_path: str) -> str:
    return f"{workspace_prefix(prefix)}{validate_workspace_path(relative_path)}"


def agent_sessions_prefix(prefix: str, agent_id: uuid.UUID) -> str:
    """Where one agent's runners keep session scratch: under the agent's id, so that its S3
    credentials can be confined to its own sessions (IAM cannot name sessions that do not
    exist yet)."""
    return f"{sessions_root(prefix)}{_uuid(agent_id)}/"


def session_prefix(prefix: str, agent_id: uuid.UUID, session_id: uuid.UUID) -> str:
    return f"{agent_sessions_prefix(prefix, agent_id)}{_uuid(session_id)}/"


def refused_workspace_patterns(prefix: str) -> list[str]:
    """Key patterns, in IAM's wildcards (`*` any run of characters, `?` one), of workspace
    keys that `validate_workspace_path` refuses, for Deny statements in runners' S3 policies.

    Only what a pattern can say: hidden names and `..`, names starting with a space, the
    agent's and the person's own file names at any depth, and characters that are never in
    a name (Windows-reserved punctuation, backslashes, look-alike slashes, line breaks and
    tabs). Look-alike letters, compatibility characters, sizes and content cannot be named by
    a key pattern: adoption refuses those (`adoption`, refused writes)."""
    root = workspace_prefix(prefix)
    patterns = [f"{root}.*", f"{root}*/.*", f"{root} *", f"{root}*/ *", f"{root}* /*"]
    for name in sorted(_RESERVED_NAMES):
        patterns += [f"{root}{name}", f"{root}*/{name}"]
    never = sorted((set('<>:"|\\') | {"\t", "\n", "\r"} | _FORBIDDEN_CHARS) - {"*", "?"})
    patterns += [f"{root}*{char}*" for char in never]
    return patterns


def prompt_key(prefix: str, sha256: str) -> str:
    """Where the exact prompt with this sha256 is kept. Beside `_history/`, not under
    `sessions/`: runners' S3 credentials may write their session scratch space, and must not
    be able to plant or replace a receipt."""
    if not _SHA256_RE.fullmatch(sha256):
        raise _invalid(_("Not a sha256: %(value)r."), "sha256", value=sha256)
    return f"{prompts_root(prefix)}{sha256}.txt"


def prompts_root(prefix: str) -> str:
    """Where every kept prompt of a project lies (see prompt_key)."""
    return f"{prefix}_prompts/"


def history_root(prefix: str) -> str:
    """Where every file's snapshots lie, a folder per file id (see history_prefix)."""
    return f"{prefix}_history/"


def history_prefix(prefix: str, file_id: uuid.UUID) -> str:
    return f"{history_root(prefix)}{_uuid(file_id)}/"


def snapshot_key(prefix: str, file_id: uuid.UUID, number: int, sha256: str) -> str:
    if not isinstance(number, int) or number < 1:
        raise _invalid(_("Revision numbers start at 1."), "revision_number")
    if not re.fullmatch(r"[0-9a-f]{64}", sha256):
        raise _invalid(_("Not a sha256 hex digest."), "sha256")
    return f"{history_prefix(prefix, file_id)}{number}-{sha256}.md"


def file_key(prefix: str, scope: str, *, agent_id=None, user_id=None, path: str = "") -> str:
    """The head key of a memory file given its scope (the one dispatch the store uses)."""
    if scope == SCOPE_AGENT:
        return agent_file_key(prefix, agent_id, path)
    if scope == SCOPE_USER:
        if path != USER_FILE:
            raise _invalid(_("A user's memory file is USER.md."), "user_file")
        return user_file_key(prefix, user_id)
    if scope == SCOPE_WORKSPACE:
        return workspace_file_key(prefix, path)
    raise _invalid(_("Unknown scope %(scope)r."), "scope", scope=scope)


@dataclass(frozen=True)
class ParsedKey:
    """What a key under a project prefix means; kind is a scope, 'session', 'history' or None."""

    kind: str | None
    agent_id: uuid.UUID | None = None
    user_id: int | None = None
    path: str = ""
    file_id: uuid.UUID | None = None
    number: int | None = None
    sha256: str = ""
    session_id: uuid.UUID | None = None


def parse_key(prefix: str, key: str) -> ParsedKey:
    """Inverse of the builders above; kind None means the key lies outside the layout."""
    outside = ParsedKey(kind=None, path=key)
    if not key.startswith(prefix):
        return outside
    rest = key[len(prefix) :]
    head, _, tail = rest.partition("/")
    try:
        if head == "agents":
            agent, _, name = tail.partition("/")
            if name in AGENT_FILES:
                return ParsedKey(kind=SCOPE_AGENT, agent_id=uuid.UUID(agent), path=name)
        elif head == "users":
            user, _, name = tail.partition("/")
            if name == USER_FILE and user.isascii() and user.isdigit() and str(int(user)) == user:
                return ParsedKey(kind=SCOPE_USER, user_id=int(user), path=name)
        elif head == "workspace":
            if validate_workspace_path(tail) == tail:
                return ParsedKey(kind=SCOPE_WORKSPACE, path=tail)
        elif head == "sessions":
            # sessions/<agent_id>/<session_id>/..., or the older sessions/<session_id>/...
            first, _, rest = tail.partition("/")
            second, _, deeper = rest.partition("/")
            try:
                return ParsedKey(
                    kind="session", agent_id=uuid.UUID(first), session_id=uuid.UUID(second), path=deeper
                )
            except ValueError:
                return ParsedKey(kind="session", session_id=uuid.UUID(first), path=rest)
        elif head == "_prompts":
            match = _PROMPT_RE.fullmatch(tail)
            if match:
                return ParsedKey(kind="prompt", sha256=match[1])
        elif head == "_history":
            file_part, _, name = tail.partition("/")
            match = _SNAPSHOT_RE.match(name)
            if match:
                return ParsedKey(
                    kind="history",
                    file_id=uuid.UUID(file_part),
                    number=int(match["number"]),
                    sha256=match["sha"],
                )
    except (ValueError, ValidationError):
        return outside
    return outside


def _uuid(value) -> str:
    try:
        return str(value if isinstance(value, uuid.UUID) else uuid.UUID(str(value)))
    except ValueError:
        raise _invalid(_("Not an id: %(value)r."), "id", value=value) from None


def _user_id(value) -> str:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _invalid(_("Not a user id: %(value)r."), "user_id", value=value)
    return str(value)
