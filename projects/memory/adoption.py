"""What the bucket holds at a file's key that the console did not record, adopted: as the
revision a save of ours was meant to be, as someone else's write, or refused.

A failure after a save's head write but before its commit leaves a head object the database
does not know: reads keep serving the old head's snapshot (the GET is conditional on the known
ETag), and the next save, the next pre hook or reconcile adopts it here, as its author's. What
a save would refuse is recorded as a RefusedWrite and never adopted; an admin may delete it.
"""

from __future__ import annotations

from urllib.parse import unquote

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from projects.audit import Actor, audit_record
from projects.memory import direct_rules, holding, holds, layout, provenance, quarantine, refusals
from projects.memory.content import decode, sha256
from projects.memory.errors import Held, StorageUnavailable
from projects.memory.metadata import actor_from_metadata, file_named, request_of, whole_number, write_metadata
from projects.memory.reading import read_snapshot, revision_texts
from projects.memory.recording import expiry_pending, holds_over, lock_file, record_revision
from projects.memory.storage import MemoryStorage, PreconditionFailed, storage_for
from projects.models import MemoryFile, Project, RefusedWrite, Revision
from projects.system_text import Message
from projects.system_text import message as system_message


def adopt_s3_state(storage: MemoryStorage, locked: MemoryFile) -> Revision | None:
    """Record what S3 holds at the file's key if it is not the recorded head.

    A snapshot `<head+1>-<sha>` carrying the console's metadata on the recorded head means a
    save of ours wrote the head object but never committed: finish it as its author's
    revision (the snapshot is under `_history/`, which no runner credential may write, so its
    metadata is the console's own). Anything else is an external write (or deletion). Call
    with the row locked.
    """
    head = locked.head
    head_live = head is not None and not head.is_deletion
    found = storage.read(locked.key, max_bytes=settings.MGC_MAX_FILE_BYTES)
    if found is not None and expiry_pending(locked) and found.etag == locked.head_etag:
        return None  # an expiry whose deletions did not finish (lifecycle finishes it)
    if found is None:
        if not head_live:
            if locked.refused_etag:  # the refused object went (someone with bucket access)
                refusals.replaced(locked)
                locked.save(update_fields=["refused_etag"])
            return None
        _hold_written(storage, locked)
        return record_revision(
            locked,
            number=head.number + 1,
            sha=sha256(b""),
            size=0,
            actor=Actor.external(),
            message=system_message("external_delete"),
            snapshot_key="",
            etag="",
            is_deletion=True,
            action="file.external_delete",
        )
    data, etag = found.body, found.etag
    if (head_live and etag == locked.head_etag) or etag == locked.refused_etag:
        return None  # the recorded head, or a write already refused
    refusal = refusals.refusal_of(found)
    if refusal is not None:  # what a save would refuse is not adopted either
        _hold_written(storage, locked)
        refusals.record(
            storage,
            project=locked.project,
            key=locked.key,
            found=found,
            reason=refusal[0],
            detail=refusal[1],
            file=locked,
        )
        return None
    if head_live and sha256(data) == head.sha256:
        # The head's own bytes, written again (the head put back, or the same text copied
        # in): the head it is, at its new ETag; no revision for no change.
        _hold_written(storage, locked)
        locked.head_etag = etag
        refusals.replaced(locked)
        locked.save(update_fields=["head_etag", "refused_etag"])
        return None
    number = head.number + 1 if head else 1
    sha = sha256(data)
    snap = layout.snapshot_key(locked.project.prefix, locked.pk, number, sha)
    metadata = storage.metadata(snap)
    details, request, poisoned = {}, "", None
    recovered = (
        metadata
        and metadata.get("mgc-base", "") == (str(head.number) if head else "")
        and found.metadata.get("mgc-write") == metadata.get("mgc-write")
    )
    if not recovered and locked.scope == MemoryFile.Scope.WORKSPACE:
        # A direct write where a stricter rule than the runners' granted glob governs (an
        # append-only log): adopted only as an append it allows, else refused.
        refused, governed = direct_rules.direct_refusal(
            locked.project,
            locked.source_path,
            lambda: read_snapshot(storage, head) if head_live else b"",
            data,
        )
        if refused is not None:
            _hold_written(storage, locked)
            refusals.record(
                storage,
                project=locked.project,
                key=locked.key,
                found=found,
                reason=RefusedWrite.Reason.NOT_DIRECT,
                detail=refused,
                file=locked,
            )
            return None
        if governed:
            details = {"mode": "append"}
    if recovered:
        # The snapshot and the head object come from the same attempt (same write id).
        actor = actor_from_metadata(metadata)
        message = Message.from_metadata(metadata) or unquote(metadata.get("mgc-message", ""))
        restored = metadata.get("mgc-restored-from", "")
        restored_from = int(restored) if whole_number(restored) else None
        merged = metadata.get("mgc-merged-base", "")
        merged_base = int(merged) if whole_number(merged) and head and int(merged) <= head.number else None
        renamed_from = file_named(locked.project_id, metadata.get("mgc-renamed-from", ""))
        request = request_of(metadata)
        action = "file.save_recovered"
    else:
        # Written past the console: a runner's direct sandbox (attributed when its proof
        # checks out, see projects.provenance) or anyone else with bucket access. What the
        # poisoning scanner flags is refused, as an oversized object is: never adopted.
        screening = quarantine.screen(locked, decode(data), lambda: _head_text(locked))
        if screening.suspect:
            _hold_written(storage, locked)
            refusals.record(
                storage,
                project=locked.project,
                key=locked.key,
                found=found,
                reason=RefusedWrite.Reason.POISONED,
                detail={"families": screening.families, "poisoning": screening.as_dict()},
                file=locked,
            )
            return None
        poisoned = screening.as_dict()
        claim = provenance.verified_writer(
            project_id=locked.project_id, key=locked.key, data=data, metadata=found.metadata
        )
        actor = Actor.external(claim.agent, claim.session) if claim else Actor.external()
        message, restored_from, renamed_from = system_message("external_change"), None, None
        merged_base = None
        action = "file.external_change"
        storage.write(
            snap,
            data,
            metadata=write_metadata(actor, message, None, None),
            legal_hold=bool(_hold_written(storage, locked)),
        )
    return record_revision(
        locked,
        number=number,
        sha=sha,
        size=len(data),
        actor=actor,
        message=message,
        snapshot_key=snap,
        etag=etag,
        restored_from=restored_from,
        action=action,
        details=details,
        data=data,
        renamed_from=renamed_from,
        merged_base=merged_base,
        request_ref=request,
        poisoning=poisoned,
    )


def _head_text(locked: MemoryFile) -> str:
    head = locked.head
    if head is None or head.is_deletion:
        return ""
    try:
        return revision_texts(locked.project, [head])[head.pk]
    except StorageUnavailable:
        return ""


def _hold_written(storage: MemoryStorage, locked: MemoryFile) -> list:
    """Something was written at the file's key past the console. Under a legal hold, every
    version of the key written since the holds were last swept is held now, not only the one
    found: a direct write overwritten again before anyone looked is a version too. Returns
    the holds standing over the file."""
    standing = holds_over(locked)
    enforced = holding.needs_holding(standing)
    if enforced:
        holding.hold_key_versions(storage, locked.key, holding.since_of(enforced))
    return standing


def adopt(file: MemoryFile) -> Revision | None:
    """Under the file's row lock, record what S3 holds at its key if it is not the head."""
    with transaction.atomic():
        return adopt_s3_state(storage_for(file.project), lock_file(file))


def refuse_name(project: Project, key: str) -> RefusedWrite | None:
    """Record an object whose name the console refuses (found by a catch-up or reconcile)."""
    storage = storage_for(project)
    found = storage.describe(key)
    if found is None:
        return None
    return refusals.record(storage, project=project, key=key, found=found, reason=RefusedWrite.Reason.NAME)


def put_head_back(storage: MemoryStorage, locked: MemoryFile) -> None:
    """Write the recorded head's bytes over a refused object at the file's key (conditional on
    the refused object's ETag), so the key holds the head again. Under the row lock."""
    head = locked.head
    data = read_snapshot(storage, head)
    try:
        etag = storage.write(
            locked.key,
            data,
            metadata=storage.metadata(head.snapshot_key) or {},
            if_match=locked.refused_etag,
            ambiguous="unknown",
            legal_hold=bool(holds_over(locked)),
        )
    except PreconditionFailed:
        raise StorageUnavailable.nothing_changed() from None  # changed again: try again
    locked.head_etag = etag
    refusals.replaced(locked)
    locked.save(update_fields=["head_etag", "refused_etag"])


def refused_write_delete(*, refused: RefusedWrite, by) -> None:
    """Take a refused write out of storage (an admin's decision, audited). At a file's key the
    recorded head is written back over it (or the key emptied when the file has no content);
    a refused name is deleted. If the bucket keeps versions, the refused version is deleted
    too, so its bytes are gone. Safe to repeat. Held while a legal hold covers the key: what
    was written there is kept like anything else it covers."""
    project = refused.project
    storage = storage_for(project)
    standing = holds.covering_key(project, refused.key)
    if standing:
        raise Held(holds.refusal(standing))
    with transaction.atomic():
        locked = lock_file(refused.file) if refused.file_id else None
        if locked is not None and locked.refused_etag == refused.etag:
            if locked.head is not None and not locked.head.is_deletion:
                put_head_back(storage, locked)
            else:
                storage.remove(refused.key)
                refusals.replaced(locked)
                locked.save(update_fields=["refused_etag"])
        elif locked is None:
            current = storage.describe(refused.key)
            if current is not None and current.etag == refused.etag:
                storage.remove(refused.key)
        if refused.version_id and refused.version_id != "null":
            storage.remove(refused.key, refused.version_id)
        RefusedWrite.objects.filter(pk=refused.pk).update(
            state=RefusedWrite.State.DELETED, resolved_by=by, resolved_at=timezone.now()
        )
        audit_record(
            actor=Actor.person(by),
            action="file.refused_delete",
            project=project,
            obj=locked if locked is not None else refused,
            details={
                "key": refused.key,
                "reason": refused.reason,
                "size": refused.size,
                "written_by": refused.writer_label,
            },
        )
