"""Who wrote what, in an object's metadata: the `mgc-*` metadata a save puts on its snapshot and
its head object (author, session, base, message, a write id), and what that metadata names when
it is read back. With it a half-done save is finished faithfully and a retry recognises its own
write. Metadata is whatever an object carries: a value that names no one reads as `external`."""

from __future__ import annotations

import uuid
from urllib.parse import quote, unquote

from django.contrib.auth import get_user_model

from projects.audit import Actor
from projects.models import Agent, MemoryFile, Revision
from projects.system_text import Message


def write_metadata(
    actor: Actor,
    message: str | Message,
    base: int | None,
    restored_from: int | None,
    renamed_from: MemoryFile | None = None,
) -> dict[str, str]:
    """Who wrote a revision and on which base, on its snapshot and its head object, so a
    half-done save can be finished faithfully and a retry can recognise its own write."""
    meta = {
        "mgc-author-kind": actor.kind,
        "mgc-author-label": quote(actor.label),
        "mgc-message": quote(str(message)[:500]),
        **(message.metadata() if isinstance(message, Message) else {}),
        "mgc-base": "" if base is None else str(base),
        "mgc-write": uuid.uuid4().hex,  # this attempt; the snapshot and head share it
    }
    if actor.user is not None:
        meta["mgc-author-user"] = str(actor.user.pk)
    if actor.agent is not None:
        meta["mgc-author-agent"] = str(actor.agent.pk)
    if actor.session_ref:
        meta["mgc-session"] = actor.session_ref
    if actor.via:
        meta["mgc-via"] = actor.via
    if restored_from is not None:
        meta["mgc-restored-from"] = str(restored_from)
    if renamed_from is not None:
        meta["mgc-renamed-from"] = str(renamed_from.pk)
    return meta


_SAME_SAVE = (
    "mgc-author-kind",
    "mgc-author-user",
    "mgc-author-agent",
    "mgc-session",
    "mgc-via",
    "mgc-base",
    "mgc-restored-from",
    "mgc-renamed-from",
)


def same_save(found: dict[str, str], ours: dict[str, str]) -> bool:
    """The object was written by the same author, in the same session, on the same base: a
    retry of this very save (its bytes are compared separately)."""
    return all(found.get(name, "") == ours.get(name, "") for name in _SAME_SAVE)


def whole_number(text: str) -> bool:
    """ASCII digits only: str.isdigit() also accepts "²", which int() refuses."""
    return text.isascii() and text.isdigit()


def _agent_named(value: str) -> Agent | None:
    """The agent a metadata value names, None for anything that is not one's id."""
    try:
        return Agent.objects.filter(pk=uuid.UUID(value)).first() if value else None
    except ValueError:
        return None


def actor_from_metadata(meta: dict[str, str]) -> Actor:
    """The author a snapshot's metadata names. Metadata is whatever the object carries, so any
    value that names no one falls back to `external`."""
    kind = meta.get("mgc-author-kind", Revision.AuthorKind.EXTERNAL)
    if kind == Revision.AuthorKind.PERSON and whole_number(meta.get("mgc-author-user", "")):
        user = get_user_model().objects.filter(pk=int(meta["mgc-author-user"])).first()
        if user is not None:
            return Actor.person(user)
    if kind == Revision.AuthorKind.AGENT:
        agent = _agent_named(meta.get("mgc-author-agent", ""))
        if agent is not None:
            # An agent acting for a signed-in person (the MCP endpoint) names them too.
            person = None
            if whole_number(meta.get("mgc-author-user", "")):
                person = get_user_model().objects.filter(pk=int(meta["mgc-author-user"])).first()
            return Actor.for_agent(
                agent, meta.get("mgc-session", ""), on_behalf_of=person, via=meta.get("mgc-via", "")[:10]
            )
    if kind == Revision.AuthorKind.SYSTEM:
        return Actor.system(unquote(meta.get("mgc-author-label", "")).removeprefix("system:"))
    agent = _agent_named(meta.get("mgc-author-agent", ""))
    return Actor.external(agent, meta.get("mgc-session", "") if agent else "")


def file_named(project_id, value: str) -> MemoryFile | None:
    """The project's file a metadata value names (a rename's source), None for anything else."""
    try:
        return (
            MemoryFile.objects.filter(pk=uuid.UUID(value), project_id=project_id).first() if value else None
        )
    except ValueError:
        return None
