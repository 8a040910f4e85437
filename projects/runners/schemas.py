"""An agent's two settings, one schema each: the injection manifest (ordered sections and a
budget) and the hook policy (write rules per path; where tool calls and errors are logged).

Everything that reads them goes through here: the hooks (`injection.parse_manifest`; and
`agent_settings`, which saves them), the settings forms (each field by the same rule: `tag`,
`source`, `exclude`, `target`, `rule`, `log`) and the runner API (its write modes, and how a
move goes). Paths are made NFC here, once (`layout.nfc`): what passes is stored and matched.

A refusal is Django's ValidationError with the message a person reads: the first problem in
the order the setting is read, and where pydantic found it (`setting_errors.SettingError`).
"""

from __future__ import annotations

import re
from contextvars import ContextVar
from typing import Annotated, Any, Literal, get_args

import pydantic
from django.core.exceptions import ValidationError
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from projects.memory import layout
from projects.memory.globs import WORKSPACE_PREFIX, glob_sample
from projects.runners.setting_errors import Invalid, Problem, invalid, refusal

WriteMode = Literal["append", "replace", "delete", "rename"]  # the post hook's; the API's schema
ContentMode = Literal["append", "replace"]  # a rule's "modes": writes that carry content
How = Literal["direct", "proposal", "never"]  # how a delete or a rename goes
Trust = Literal["trusted", "untrusted"]  # a section's: untrusted ones are fenced as data
Language = Literal["en", "ru"]  # of a manifest's default preface
MAX_PREFACE = 4000  # characters
MODES: tuple[str, ...] = get_args(WriteMode)
CONTENT_MODES: tuple[str, ...] = get_args(ContentMode)
MOVE_MODES = ("delete", "rename")  # each a key of its own in a rule: how, or absent for never
HOW: tuple[str, ...] = get_args(How)

MAX_SECTIONS = 20
MAX_TOKENS = 10_000_000  # a cap or budget beyond any model's window (and any database integer)
MAX_EXCLUDES = 10  # globs one section leaves out
MAX_RULES = 50  # write rules in one hook policy
_TAG_RE = re.compile(r"\A[a-z][a-z0-9_]{0,49}\Z")

_LIMITS = {
    "sections_max": MAX_SECTIONS,
    "exclude": MAX_EXCLUDES,
    "cap": MAX_TOKENS,
    "total": MAX_TOKENS,
    "rules_max": MAX_RULES,
    "preface": MAX_PREFACE,
}


# --- One value at a time (the forms check each field with these) -----------------------------


def valid_tag(tag: str) -> bool:
    """A section tag: lower-case letters, digits and _, starting with a letter."""
    return bool(_TAG_RE.match(tag))


def valid_source(source: str) -> bool:
    """A manifest source or hook-policy target: an agent file, USER.md, or a workspace glob."""
    if source in layout.AGENT_FILES or source == layout.USER_FILE:
        return True
    if not source.startswith(WORKSPACE_PREFIX) or not source.endswith(".md"):
        return False
    # A glob is held to the rules of the paths it selects: with each wildcard read as a
    # letter it must be a valid workspace path (no '.' segments, hidden names, invisible or
    # look-alike characters, ...), or it would be saved and silently match nothing.
    try:
        layout.validate_workspace_path(glob_sample(source[len(WORKSPACE_PREFIX) :]))
    except ValidationError:
        return False
    return True


def _inside_workspace(source: str) -> bool:
    """The looser rule manifests were once saved under: an agent file, USER.md, or a
    workspace glob that cannot leave the workspace."""
    if source in layout.AGENT_FILES or source == layout.USER_FILE:
        return True
    pattern = source[len(WORKSPACE_PREFIX) :]
    return (
        source.startswith(WORKSPACE_PREFIX)
        and source.endswith(".md")
        and bool(pattern)
        and ".." not in pattern.split("/")
        and not pattern.startswith("/")
        and "\\" not in pattern
        and "\x00" not in pattern
    )


def tag(value: str, *, saving: bool = True) -> str:
    """A section's tag. `saving=False`: as manifests saved before are read."""
    if not saving:
        value = value.removesuffix("\n")  # `$` once let a final newline through
    if not valid_tag(value):
        raise Invalid("tag")
    return value


def source(value: str, *, saving: bool = True) -> str:
    """A section's source, NFC. `saving=False`: the looser rule of manifests saved before."""
    value = layout.nfc(value)
    if not (valid_source(value) if saving else _inside_workspace(value)):
        raise Invalid("source")
    return value


def exclude(globs: list[str], *, saving: bool = True) -> list[str]:
    """The workspace globs a section leaves out, NFC."""
    globs = [layout.nfc(glob) for glob in globs]
    if len(globs) > MAX_EXCLUDES or not all(
        glob.startswith(WORKSPACE_PREFIX) and (valid_source(glob) if saving else _inside_workspace(glob))
        for glob in globs
    ):
        raise Invalid("exclude")
    return globs


def tokens(value: int, *, saving: bool = True, key: str = "cap") -> int:
    """A cap or a budget. Saved before the upper bound existed, a larger one reads as it."""
    if value < 1 or (saving and value > MAX_TOKENS):
        raise Invalid(key)
    return min(value, MAX_TOKENS)


def target(value: str) -> str:
    """The path or workspace glob a write rule is for, NFC."""
    value = layout.nfc(value)
    if not valid_source(value):
        raise Invalid("target")
    return value


def log(value: str) -> str:
    """Where tool calls or errors are logged: workspace/<path>.md, NFC."""
    if not value.startswith(WORKSPACE_PREFIX):
        raise Invalid("log_prefix")
    try:
        return WORKSPACE_PREFIX + layout.validate_workspace_path(value[len(WORKSPACE_PREFIX) :])
    except ValidationError as exc:
        raise Invalid("log_path", error=exc) from None


def rule(path: str, data: dict) -> RuleSchema:
    """One write rule for `path` (as the policy editor's row makes it); Invalid if it allows
    nothing, or a rename of a file that is not in the workspace."""
    noted = _TARGET.set(path)
    try:
        return RuleSchema.model_validate(data)
    except pydantic.ValidationError as exc:
        raise next((found for error in exc.errors() if (found := invalid(error))), Invalid("rule")) from None
    finally:
        _TARGET.reset(noted)


# --- The manifest ----------------------------------------------------------------------------

# The tags of the sections read so far: pydantic reads a list's items in order, so a tag met
# again is told at the section that repeats it, before anything later is.
_TAGS: ContextVar[set[str] | None] = ContextVar("manifest_tags", default=None)


def _saving(info: ValidationInfo) -> bool:
    """Whether the rules are those for a setting saved now (the default), or the looser rules
    a stored one is read under (`context={"saving": False}`)."""
    return (info.context or {}).get("saving", True)


class _Schema(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    def stored(self) -> dict:
        """The setting as it is stored: the keys it was given, normalised."""
        return self.model_dump(mode="json", exclude_unset=True)


class SectionSchema(_Schema):
    """One section: its tag, the source it draws from, a cap on its tokens, and (for a
    workspace glob) the globs it leaves out."""

    tag: str
    source: str
    max_tokens: int | None = None
    exclude: list[str] | None = None
    # Whether its lines may speak as the operator: by default the workspace (agents write it)
    # is untrusted and fenced, the agent's files and the profile trusted (injection.section_trust).
    trust: Trust | None = None

    @model_validator(mode="before")
    @classmethod
    def _exclude_needs_a_workspace_source(cls, data: Any) -> Any:
        # Read off the section as given: an exclude beside a source that is not a workspace
        # glob is the section's problem whatever else is wrong with the source.
        if (
            isinstance(data, dict)
            and not set(data) - set(cls.model_fields)
            and data.get("exclude") not in ([], None)
        ):
            given = data.get("source")
            if not isinstance(given, str) or not given.startswith(WORKSPACE_PREFIX):
                raise Invalid("exclude")
        return data

    @field_validator("tag")
    @classmethod
    def _tag(cls, value: str, info: ValidationInfo) -> str:
        value = tag(value, saving=_saving(info))
        seen = _TAGS.get()
        if seen is not None:
            if value in seen:
                raise Invalid("tag_twice", tag=value)
            seen.add(value)
        return value

    @field_validator("source")
    @classmethod
    def _source(cls, value: str, info: ValidationInfo) -> str:
        return source(value, saving=_saving(info))

    @field_validator("max_tokens")
    @classmethod
    def _cap(cls, value: int | None, info: ValidationInfo) -> int | None:
        return None if value is None else tokens(value, saving=_saving(info))

    @field_validator("exclude")
    @classmethod
    def _exclude(cls, value: list[str] | None, info: ValidationInfo) -> list[str] | None:
        return None if value is None else exclude(value, saving=_saving(info))


class ManifestSchema(_Schema):
    """Sections in the order they are injected, and a total budget of tokens."""

    sections: list[SectionSchema] = Field(min_length=1, max_length=MAX_SECTIONS)
    total_tokens: int | None = None
    # The prompt's opening text (None: the default in `language`; "": none).
    preface: str | None = Field(None, max_length=MAX_PREFACE)
    language: Language | None = None  # of the default preface and the fences' notes

    @model_validator(mode="wrap")
    @classmethod
    def _each_tag_once(cls, data: Any, handler):
        seen = _TAGS.set(set())
        try:
            return handler(data)
        finally:
            _TAGS.reset(seen)

    @field_validator("total_tokens")
    @classmethod
    def _budget(cls, value: int | None, info: ValidationInfo) -> int | None:
        return None if value is None else tokens(value, saving=_saving(info), key="total")


def manifest(data: object, *, saving: bool = True) -> ManifestSchema:
    """A manifest checked, its paths NFC. `saving=False` (the pre hook, simulate): a manifest
    saved under the earlier, looser rules still serves (a source glob need only stay inside
    the workspace, a cap or budget above MAX_TOKENS reads as MAX_TOKENS), so tightening the
    rules never turns an agent's pre hook into an error."""
    try:
        return ManifestSchema.model_validate(data, context={"saving": saving})
    except pydantic.ValidationError as exc:
        raise refusal(exc, data, _manifest_problem) from None


# --- The hook policy -------------------------------------------------------------------------

# The path of the rule being read: pydantic reads a dict's key, then its value, so a rule can
# say that only a workspace path may be renamed.
_TARGET: ContextVar[str | None] = ContextVar("policy_target", default=None)


def _noted(value: Any) -> Any:
    _TARGET.set(value if isinstance(value, str) else None)
    return value


Target = Annotated[str, BeforeValidator(_noted), pydantic.AfterValidator(target)]


class RuleSchema(_Schema):
    """What an agent may do to the files of one path or glob: the content writes it may make
    (`modes`, each a proposal when `approval`), and how a delete and a rename go."""

    modes: list[ContentMode] = []
    approval: bool = False
    delete: How = "never"
    rename: How = "never"

    @model_validator(mode="after")
    def _allows_something(self) -> RuleSchema:
        if not self.modes and self.delete == "never" and self.rename == "never":
            raise Invalid("rule_empty")
        path = _TARGET.get()
        if self.rename != "never" and path is not None and not path.startswith(WORKSPACE_PREFIX):
            raise Invalid("rule_rename")
        return self


class LogSchema(_Schema):
    """Where the tool or error hook appends a line for each call (none: not logged)."""

    log: str | None = None

    @field_validator("log")
    @classmethod
    def _log(cls, value: str | None) -> str | None:
        return None if value is None else log(value)


class PolicySchema(_Schema):
    """Write rules by path or workspace glob (the post hook's), and the tool and error logs."""

    post: dict[Target, RuleSchema] = Field(default_factory=dict, max_length=MAX_RULES)
    tool: LogSchema = LogSchema()
    error: LogSchema = LogSchema()

    @model_validator(mode="wrap")
    @classmethod
    def _rules_know_their_path(cls, data: Any, handler):
        noted = _TARGET.set(None)
        try:
            return handler(data)
        finally:
            _TARGET.reset(noted)


def policy(data: object) -> PolicySchema:
    """A hook policy checked, its paths NFC."""
    try:
        return PolicySchema.model_validate(data)
    except pydantic.ValidationError as exc:
        raise refusal(exc, data, _policy_problem) from None


# --- Which problem each of pydantic's errors is (`setting_errors` tells the first) -----------


def _problem(order: tuple, loc: tuple, key: str, **params) -> Problem:
    if key in _LIMITS:
        params["max"] = _LIMITS[key]
    return Problem(order, loc, key, params)


_SECTION_ORDER = ("section", "exclude", "tag", "source", "cap", "trust")  # a section's checks, in turn
_SECTION_FIELDS = {
    "tag": "tag",
    "source": "source",
    "max_tokens": "cap",
    "exclude": "exclude",
    "trust": "trust",
}


def _manifest_problem(error: dict, data: object) -> Problem:
    loc, refused = tuple(error["loc"]), invalid(error)
    if not loc:
        return _problem((0, 0, 0), loc, "manifest_type")
    if loc[0] == "sections" and len(loc) == 1:
        return _problem((0, 0, 2), loc, "sections_max" if error["type"] == "too_long" else "sections_empty")
    if loc[0] == "sections":
        index = loc[1]
        if refused is not None:
            key = refused.key
        elif error["type"] == "extra_forbidden" or len(loc) == 2:
            key = "section"
        else:
            key = _SECTION_FIELDS[loc[2]]
        rank = _SECTION_ORDER.index("tag" if key == "tag_twice" else key)
        return _problem((1, index, rank), loc, key, n=index + 1, **(refused.params if refused else {}))
    if loc[0] == "total_tokens":
        return _problem((2, 0, 0), loc, "total")
    if loc[0] in ("preface", "language"):
        return _problem((3, 0, 0), loc, loc[0])
    return _problem((0, 0, 1), loc, "keys")  # a key the manifest does not have


def _policy_problem(error: dict, data: object) -> Problem:
    loc, refused = tuple(error["loc"]), invalid(error)
    if not loc or loc[0] not in PolicySchema.model_fields:
        return _problem((0, 0, 0), loc, "policy_shape")
    if loc[0] == "post":
        if len(loc) == 1:
            return _problem((0, 0, 1), loc, "rules_max" if error["type"] == "too_long" else "post")
        path = loc[1]  # as it was given
        position = list(data["post"]).index(path) if path in data["post"] else 0
        if loc[2:] == ("[key]",):
            return _problem((1, position, 0), loc, "target", target=path)
        return _problem((1, position, 1), loc, refused.key if refused else "rule", target=path)
    kind, order = loc[0], 2 if loc[0] == "tool" else 3
    if loc[1:2] != ("log",):  # not an object, or holding more than a log
        return _problem((order, 0, 0), loc, "log_shape", kind=kind)
    if refused is not None and refused.error is not None:  # the layout's own message
        return Problem((order, 0, 1), loc, refused.key, error=refused.error)
    return _problem((order, 0, 1), loc, "log_prefix", kind=kind)
