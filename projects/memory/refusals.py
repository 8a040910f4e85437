"""Objects in the bucket that a save would have refused: found, recorded, never adopted.

Runners may write the bucket with their own S3 credentials, and S3 has no condition on the
size of a PUT, so anything can land at a key the console reads: 20 MiB in a workspace file,
bytes that are not UTF-8, a name the layout refuses. What the console would refuse to save
it refuses to adopt: such an object is recorded here as a refused write (with its size and
who wrote it: its signed metadata, else `external`), the file's recorded head stays its head,
nothing of it is injected or shown, and admins can delete it (adoption.refused_write_delete).

An object is read for this at most `MGC_MAX_FILE_BYTES` + 1 bytes at a time; its whole body is
only hashed, in chunks, to check a runner's proof (provenance) when it is not too large for
that.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.formats import number_format
from django.utils.translation import gettext as _

from projects import metrics
from projects.audit import Actor, audit_record
from projects.memory import layout, provenance
from projects.memory.storage import MemoryStorage, StoredObject
from projects.models import MemoryFile, Project, RefusedWrite

# Past this many bytes a refused object's proof is not checked (it would take reading it all);
# its writer is then recorded as `external`, unverified.
PROOF_MAX_BYTES = 64 * 1024 * 1024


def refusal_of(found: StoredObject) -> tuple[str, dict] | None:
    """(reason, detail) if the content breaks what a save allows (`content.encode`'s rules);
    `found` is a bounded read (storage.read with max_bytes)."""
    limit = settings.MGC_MAX_FILE_BYTES
    if found.size > limit:
        return RefusedWrite.Reason.TOO_LARGE, {"limit": limit}
    if b"\x00" in found.body:
        return RefusedWrite.Reason.BINARY, {"position": found.body.index(b"\x00")}
    try:
        found.body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return RefusedWrite.Reason.NOT_TEXT, {"position": exc.start}
    return None


def record(
    storage: MemoryStorage,
    *,
    project: Project,
    key: str,
    found: StoredObject,
    reason: str,
    detail: dict | None = None,
    file: MemoryFile | None = None,
) -> RefusedWrite:
    """Record a refused object once (per key and ETag), with who wrote it, and audit it. When
    `file` is given, the caller holds its row lock: it keeps the object's ETag as its
    `refused_etag`, so reads, saves and catch-ups know what is at its key."""
    existing = RefusedWrite.objects.filter(project=project, key=key, etag=found.etag).first()
    if existing is None:
        claim = _writer(storage, project, key, found)
        actor = Actor.external(claim.agent, claim.session) if claim else Actor.external()
        with transaction.atomic():
            existing, created = RefusedWrite.objects.get_or_create(
                project=project,
                key=key,
                etag=found.etag,
                defaults={
                    "file": file,
                    "version_id": found.version_id,
                    "size": found.size,
                    "reason": reason,
                    "detail": detail or {},
                    "writer_agent": actor.agent,
                    "writer_session": actor.session_ref,
                    "writer_label": actor.label[:200],
                },
            )
            if created:
                transaction.on_commit(lambda: metrics.write_counted("refused"))
                _others_replaced(project, key, found.etag)
                audit_record(
                    actor=actor,
                    # a poisoned one is memory.poisoning.detected for webhooks and the SIEM
                    action="file.external_poisoned"
                    if reason == RefusedWrite.Reason.POISONED
                    else "file.external_refused",
                    project=project,
                    obj=file if file is not None else existing,
                    details={"key": key, "reason": reason, "size": found.size, **(detail or {})},
                )
    if file is not None and file.refused_etag != found.etag:
        file.refused_etag = found.etag
        file.save(update_fields=["refused_etag"])
    return existing


def _writer(storage: MemoryStorage, project: Project, key: str, found: StoredObject):
    """The runner that provably wrote the object (its proof checks out), or None."""
    if not found.metadata.get(provenance.META_PROOF):
        return None
    if found.whole:
        body_sha = provenance.sha256_hex(found.body)
    else:
        body_sha = storage.sha256_of(key, found.etag, PROOF_MAX_BYTES)
        if body_sha is None:
            return None
    return provenance.verified_writer(
        project_id=project.pk, key=key, body_sha256=body_sha, metadata=found.metadata
    )


def _others_replaced(project: Project, key: str, etag: str) -> None:
    RefusedWrite.objects.filter(project=project, key=key, state=RefusedWrite.State.PRESENT).exclude(
        etag=etag
    ).update(state=RefusedWrite.State.REPLACED, resolved_at=timezone.now())


def replaced(file: MemoryFile) -> None:
    """The object at the file's key was replaced (a save, an adopted write, a deletion): a
    refused write that was there is gone. Call under the file's row lock."""
    if file.refused_etag:
        _others_replaced(file.project, file.key, "")
        file.refused_etag = ""


def present_keys(project: Project) -> set[tuple[str, str]]:
    """(key, ETag) of the project's refused writes still in storage."""
    return set(
        RefusedWrite.objects.filter(project=project, state=RefusedWrite.State.PRESENT).values_list(
            "key", "etag"
        )
    )


def present(project: Project) -> list[RefusedWrite]:
    """The project's refused writes still in storage, newest first."""
    return list(
        RefusedWrite.objects.filter(project=project, state=RefusedWrite.State.PRESENT).select_related(
            "file", "file__agent", "file__user", "writer_agent"
        )
    )


def name_refused(prefix: str, key: str) -> bool:
    """A key under a memory folder (an agent's, a person's, the workspace) that the layout does
    not take as a memory file: a name the console refuses."""
    if layout.parse_key(prefix, key).kind is not None:
        return False
    rest = key[len(prefix) :] if key.startswith(prefix) else ""
    return rest.startswith(("agents/", "users/", "workspace/"))


def explain(refused: RefusedWrite) -> str:
    """Why the console refused it, in the reader's language."""
    detail = refused.detail or {}
    if refused.reason == RefusedWrite.Reason.TOO_LARGE:
        return _("%(size)s bytes, over the limit of %(limit)s bytes for a memory file.") % {
            "size": number_format(refused.size, force_grouping=True),
            "limit": number_format(detail.get("limit", settings.MGC_MAX_FILE_BYTES), force_grouping=True),
        }
    if refused.reason == RefusedWrite.Reason.NOT_TEXT:
        return _("Not UTF-8 text (an invalid byte at position %(position)s).") % {
            "position": detail.get("position", "?")
        }
    if refused.reason == RefusedWrite.Reason.BINARY:
        return _("Holds a NUL byte (at position %(position)s): a binary file, not Markdown.") % {
            "position": detail.get("position", "?")
        }
    if refused.reason == RefusedWrite.Reason.NOT_DIRECT:
        if detail.get("appends"):
            return _(
                "Not an append: under the hook policy rule %(rule)s (agent %(agent)s) a direct write "
                "may only add to the end of the file; other changes go through the post hook."
            ) % {"rule": detail.get("rule", "?"), "agent": detail.get("agent", "?")}
        return _(
            "Not a direct write the hook policy allows: the rule %(rule)s (agent %(agent)s) allows no "
            "direct change to this file; changes go through the post hook."
        ) % {"rule": detail.get("rule", "?"), "agent": detail.get("agent", "?")}
    if refused.reason == RefusedWrite.Reason.POISONED:
        from projects.memory.poisoning import LABELS

        families = [str(LABELS.get(f, f)) for f in detail.get("families", [])]
        return _("Instructions planted in memory: %(families)s.") % {"families": ", ".join(families)}
    return _("The name: %(why)s") % {"why": _name_problem(refused.project.prefix, refused.key)}


def _name_problem(prefix: str, key: str) -> str:
    rest = key[len(prefix) :] if key.startswith(prefix) else key
    folder, _slash, tail = rest.partition("/")
    if folder == "workspace":
        try:
            layout.validate_workspace_path(tail)
        except ValidationError as exc:
            return " ".join(exc.messages)
    if folder == "agents":
        return _("an agent's folder holds only %(names)s.") % {"names": ", ".join(layout.AGENT_FILES)}
    if folder == "users":
        return _("a person's folder holds only %(name)s.") % {"name": layout.USER_FILE}
    return _("not a memory file's key.")
