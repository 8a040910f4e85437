"""How a refused agent setting reads (`runners.schemas`): pydantic finds every problem and
where it is; a person reads one message, the first problem in the order the setting is read
(section by section, rule by rule), in their language, as Django's ValidationError. The
messages and their codes are here; which problem a pydantic error is, the schemas say."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pydantic
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

# What a person reads, by the name a problem goes by (a validator raises it as `Invalid`): the
# code and the message. Section numbers, rule paths, log kinds and limits are its parameters.
MESSAGES = {
    # The manifest
    "manifest_type": ("manifest_type", _("The manifest must be a JSON object.")),
    "keys": ("manifest_keys", _("Unknown manifest keys: %(keys)s.")),
    "sections_empty": ("manifest_sections", _("The manifest needs a non-empty list of sections.")),
    "sections_max": ("manifest_sections", _("At most %(max)s sections.")),
    "section": (
        "manifest_section",
        _("Section %(n)s must be an object with tag, source, max_tokens and (for a workspace glob) exclude."),
    ),
    "exclude": (
        "manifest_exclude",
        _("Section %(n)s: exclude is a list of up to %(max)s workspace/<glob>.md, for a workspace source."),
    ),
    "tag": (
        "manifest_tag",
        _("Section %(n)s: the tag must be lower-case letters, digits and _ (like agent_rules)."),
    ),
    "tag_twice": ("manifest_tag", _("Section %(n)s: tag %(tag)s is used twice.")),
    "source": (
        "manifest_source",
        _(
            "Section %(n)s: the source must be SOUL.md, AGENTS.md, TOOLS.md, USER.md or "
            "workspace/<path or glob>.md."
        ),
    ),
    "cap": ("manifest_cap", _("Section %(n)s: max_tokens must be a whole number from 1 to %(max)s.")),
    "total": ("manifest_total", _("total_tokens must be a whole number from 1 to %(max)s.")),
    "trust": ("manifest_trust", _("Section %(n)s: trust is trusted or untrusted.")),
    "preface": ("manifest_preface", _("preface is text of at most %(max)s characters.")),
    "language": ("manifest_language", _("language is en or ru.")),
    # The hook policy
    "policy_shape": ("policy_shape", _("The policy is an object with post, tool and error.")),
    "post": ("policy_post", _("post maps file paths or workspace globs to rules.")),
    "rules_max": ("policy_post", _("At most %(max)s write rules.")),
    "target": (
        "policy_target",
        _("%(target)s: use SOUL.md, AGENTS.md, TOOLS.md, USER.md or workspace/<path or glob>.md."),
    ),
    "rule": (
        "policy_rule",
        _(
            '%(target)s: a rule is {"modes": ["append"|"replace", ...], '
            '"approval": true|false, "delete": "direct"|"proposal"|'
            '"never", "rename": "direct"|"proposal"|"never"}.'
        ),
    ),
    "rule_empty": (
        "policy_rule",
        _("%(target)s: the rule allows nothing; allow append, replace, delete or rename."),
    ),
    "rule_rename": (
        "policy_rule",
        _("%(target)s: only workspace files can be renamed (an agent's files and USER.md keep their names)."),
    ),
    "log_shape": ("policy_log", _('%(kind)s is {"log": "workspace/<path>.md"} or {}.')),
    "log_prefix": ("policy_log", _("%(kind)s log must be a workspace/ path.")),
}


class Invalid(ValueError):
    """A validator's refusal: the name of its message (`MESSAGES`) and parameters, or a
    ValidationError from elsewhere passed on as it is (`layout`'s, for a log path)."""

    def __init__(self, key: str, *, error: ValidationError | None = None, **params):
        super().__init__(key)
        self.key, self.error, self.params = key, error, params


class SettingError(ValidationError):
    """A setting refused: one message, and where it was found (pydantic's location, such as
    `("sections", 1, "tag")`)."""

    def __init__(self, message, *, code: str | None, params: dict | None, loc: tuple):
        super().__init__(message, code=code, params=params)
        self.loc = loc


@dataclass(frozen=True)
class Problem:
    """One problem pydantic found, as a person is told it."""

    order: tuple  # where it comes when the setting is read from the top
    loc: tuple
    key: str  # its message in MESSAGES
    params: dict = field(default_factory=dict)
    error: ValidationError | None = None  # told as it is instead


def invalid(error: dict) -> Invalid | None:
    """The validator's own refusal behind one of pydantic's errors, if it is one."""
    found = (error.get("ctx") or {}).get("error")
    return found if isinstance(found, Invalid) else None


def refusal(
    exc: pydantic.ValidationError, data: object, place: Callable[[dict, object], Problem]
) -> SettingError:
    """The first of the problems pydantic found, in the order the setting is read."""
    problems = [place(error, data) for error in exc.errors()]
    first = min(problems, key=lambda problem: problem.order)
    if first.error is not None:
        return SettingError(
            first.error.message, code=first.error.code, params=first.error.params, loc=first.loc
        )
    params = dict(first.params)
    if first.key == "keys":  # every key the setting should not have, in one message
        params["keys"] = ", ".join(sorted(str(p.loc[0]) for p in problems if p.key == "keys"))
    code, message = MESSAGES[first.key]
    return SettingError(message, code=code, params=params or None, loc=first.loc)
