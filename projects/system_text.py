"""Words the console itself writes into records (a revision's message when a hook, an approval
or a direct write in storage made it; the label of an audited object), stored as a code with
parameters and shown in the reader's language. The English text is stored beside the code, for
exports, object metadata and rows older than the codes, which keep their text as it was.

Foundation: models and audit use it; it imports no model."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from django.utils import translation
from django.utils.translation import gettext_lazy as _

# A revision's message, by code.
MESSAGES = {
    "post_hook": _("Post hook of session %(session)s"),
    "tool_hook": _("tool hook"),
    "error_hook": _("error hook"),
    "approved": _("Approved by %(user)s"),
    "approved_note": _("Approved by %(user)s: %(note)s"),
    "external_change": _("Changed directly in storage"),
    "external_delete": _("Deleted directly in storage"),
    "restore": _("Restore revision %(number)s"),
    "expired": _("Expired under the retention rule %(rule)s on %(date)s"),
}

# An audited object's label, by code (objects whose str() would be an English sentence).
LABELS = {
    "proposal": _("%(mode)s to %(path)s by %(agent)s"),
    "membership": _("%(user)s in %(project)s as %(role)s"),
    "session": _("session %(id)s of %(agent)s"),
    "credential": _("S3 credentials %(key)s of %(token)s"),
    "webhook": _("%(kind)s to %(url)s"),
    "legal_hold": _("legal hold #%(id)s (%(covers)s %(what)s)"),
    "group_mapping": _("group %(group)s → %(project)s as %(role)s"),
    "subject_request": _("subject request #%(id)s (%(kind)s)"),
    "subject_document": _("%(kind)s of subject request #%(id)s"),
}

# Parameters that are themselves words of the console (a write mode, a role).
_WORDS = {
    "mode": {"append": _("append"), "replace": _("replace")},
    "role": {"admin": _("Admin"), "compliance": _("Compliance"), "employee": _("Employee")},
    "kind": {
        "webhook": _("Webhook"),
        "audit": _("Audit stream"),
        "access": _("access"),
        "copy": _("copy"),
        "correction": _("correction"),
        "erasure": _("erasure"),
        "restriction": _("restriction"),
        "withdrawal": _("withdrawal of consent"),
        "package": _("answer package"),
        "act": _("destruction act"),
    },
    "covers": {"person": _("person"), "file": _("file"), "glob": _("files"), "project": _("project")},
}

# What a system actor was doing ("system:sign-in"), by the note the console records.
SYSTEM_NOTES = {
    "sign-in": _("sign-in"),
    "retention": _("retention"),
    "retention command": _("the retention command"),
    "events": _("event delivery"),
    "webhooks command": _("the webhooks command"),
    "reminders": _("subject request reminders"),
}


def render(table: dict, code: str, params: dict | None, fallback: str = "") -> str:
    """The text of `code` in the active language; `fallback` (the stored English) for a code
    this version does not know or parameters that do not fit it."""
    template = table.get(code)
    if template is None:
        return fallback
    values = {name: str(_WORDS.get(name, {}).get(value, value)) for name, value in (params or {}).items()}
    try:
        return str(template) % values if values else str(template)
    except (KeyError, TypeError, ValueError):
        return fallback


@dataclass(frozen=True)
class Message:
    """A revision message the console writes: `str()` is its English text (what is stored in
    Revision.message and in object metadata); the code and parameters are stored beside it."""

    code: str
    params: dict = field(default_factory=dict)

    def __str__(self) -> str:
        with translation.override("en"):
            return render(MESSAGES, self.code, self.params, self.code)

    def metadata(self) -> dict[str, str]:
        return {
            "mgc-message-code": self.code,
            "mgc-message-params": json.dumps(self.params, ensure_ascii=True),
        }

    @classmethod
    def from_metadata(cls, meta: dict[str, str]) -> Message | None:
        """The message a snapshot's metadata names, None for anything that is not one."""
        code = meta.get("mgc-message-code", "")
        if code not in MESSAGES:
            return None
        try:
            params = json.loads(meta.get("mgc-message-params", "") or "{}")
        except ValueError:
            return None
        return cls(code, params) if isinstance(params, dict) else None


def message(code: str, **params) -> Message:
    assert code in MESSAGES, code
    return Message(code, {name: str(value) for name, value in params.items()})


def actor_shown(label: str) -> str:
    """A recorded author or actor label in the reader's language: 'external',
    'external (agent:slug)' and 'system:note' are the console's words; names stay as they are."""
    if label == "external":
        return str(_("external"))
    if label.startswith("external (agent:") and label.endswith(")"):
        return str(_("external (agent:%(slug)s)") % {"slug": label[len("external (agent:") : -1]})
    if label.startswith("system:"):
        note = label[len("system:") :]
        return str(_("system: %(note)s") % {"note": SYSTEM_NOTES.get(note, note)})
    if label.startswith("agent:") and label.endswith(" via MCP"):  # audit.Actor.label
        agent, _sep, person = label[len("agent:") : -len(" via MCP")].partition(" for ")
        if person:
            return str(_("agent:%(slug)s for %(person)s via MCP") % {"slug": agent, "person": person})
        return str(_("agent:%(slug)s via MCP") % {"slug": agent})
    return label


def actor_stored(typed: str) -> str:
    """What a person typed into an actor filter, as actors are stored: the words the pages
    show for the console's own actors ("извне", "система: вход") find them too."""
    typed = typed.strip()
    if typed.casefold() == str(_("external")).casefold():
        return "external"
    prefix = str(_("system: %(note)s") % {"note": ""}).strip()
    if prefix and typed.casefold().startswith(prefix.casefold()):
        note = typed[len(prefix) :].strip()
        found = next(
            (code for code, shown in SYSTEM_NOTES.items() if str(shown).casefold() == note.casefold()), note
        )
        return f"system:{found}"
    return typed


def word(kind: str, value: str) -> str:
    """A console word stored as its code (a role, a write mode, what a hold covers) in the
    reader's language; any other value as it is."""
    return str(_WORDS.get(kind, {}).get(value, value))


# How the console wrote a hold's target and a group mapping before either had a code (still
# the stored English of every row: LegalHold.target, audit details "covers" and "mapping").
_HOLD_TARGET = re.compile(r"\A(person|file|files|project) (.+)\Z", re.S)
_MAPPING = re.compile(r"\Agroup (.+) -> (\S+) as (admin|compliance|employee)\Z", re.S)


def hold_covers(target: str) -> str:
    """'person maria' (a hold's stored target) as the reader reads it."""
    found = _HOLD_TARGET.match(target or "")
    if found is None:
        return target
    kind = "glob" if found[1] == "files" else found[1]
    return f"{word('covers', kind)} {found[2]}"


def mapping_shown(text: str) -> str:
    """'group sre -> incidents as employee' (a mapping as audit details name it) as the
    reader reads it."""
    found = _MAPPING.match(text or "")
    if found is None:
        return text
    return render(LABELS, "group_mapping", {"group": found[1], "project": found[2], "role": found[3]}, text)
