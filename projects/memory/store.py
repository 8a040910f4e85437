"""Saving memory files in S3: create, save, append, restore. (Reads: memory/reading.py and
history.py; delete and rename: removal.py; what the bucket holds unrecorded: adoption.py and
catchup.py; the revision row and its audit event: recording.py.)

The order of a save is what keeps every head readable whatever fails:

1. under a row lock on the MemoryFile, check the base revision is still the head;
2. write the immutable snapshot `_history/<file_id>/<n>-<sha256>.md` (with who/why metadata);
3. write the head object conditionally: IfMatch the head's known ETag, or IfNoneMatch='*'
   for a new (or deleted) file. The head carries the same metadata, with a write id;
4. insert the Revision row, move the head, append the AuditEvent, commit.

A save recognises its own write. When step 3 answers 412, or never answers, the head object
is read: if it holds this save's bytes, written by the same author on the same base (a retry
whose first answer was lost, or the retry of a save whose worker died before step 4), that is
this save's success and it is recorded once, as its author's. Anything else at the key is
someone else's write: it is recorded as an `external` revision and the caller gets a conflict.
The same holds once the database knows the write: a save whose answer was lost and that was
recorded since (the next pre hook, reconcile) is recognised when its author saves the same
text on the same base again (`_saved_before`), instead of a conflict with their own text.
A refused save removes its snapshot only when the head does not hold its bytes (then no
other attempt can own it); any orphan left behind is a warning that reconcile clears.

A failure after 3 but before the commit leaves a head object the database does not know:
reads keep serving the old head's snapshot (the GET is conditional on the known ETag), and
the next save, the next pre hook or reconcile adopts it as the revision it was meant to be
(memory/adoption.py).
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from projects.audit import Actor
from projects.memory import consent, layout, quarantine
from projects.memory.adoption import adopt_s3_state, put_head_back
from projects.memory.content import appended, decode, encode, sha256
from projects.memory.errors import SaveConflict, StorageUnavailable
from projects.memory.metadata import same_save, write_metadata
from projects.memory.reading import read_snapshot, revision_texts
from projects.memory.recording import (
    expected_etag,
    expiry_pending,
    finish_expiry,
    holds_over,
    lock_file,
    record_revision,
    refresh_head,
)
from projects.memory.records import file_ensure
from projects.memory.storage import MemoryStorage, PreconditionFailed, storage_for
from projects.models import Agent, MemoryFile, Project, Revision
from projects.system_text import Message
from projects.system_text import message as system_message


class HeadChanged(Exception):
    """The conditional head write found another object than the one the console wrote."""


_APPEND_ROUNDS = 5  # direct writes landing between our read and our write, in a row


def file_create(
    *,
    project: Project,
    scope: str,
    agent: Agent | None = None,
    user=None,
    path: str,
    content: str | bytes,
    actor: Actor,
    message: str = "",
) -> Revision:
    """Create a file with its first revision (or revive a deleted one)."""
    record = file_ensure(project=project, scope=scope, agent=agent, user=user, path=path)
    base = record.head.number if record.head is not None and record.head.is_deletion else None
    return file_save(file=record, content=content, actor=actor, message=message, base_revision=base)


def file_save(
    *,
    file: MemoryFile,
    content: str | bytes,
    actor: Actor,
    message: str | Message = "",
    base_revision: int | None,
    restored_from: int | None = None,
    merged_base: int | None = None,
    request: str = "",
    released: dict | None = None,
) -> Revision:
    """Save new content on top of base_revision; SaveConflict if the file moved on.
    `merged_base`: the text settles a three-way merge over that revision (the one the person
    had opened), so the lines it kept from there keep their authors.

    Content identical to the head's makes no revision: the head is returned (its number is
    `base_revision`, where a new revision's is one more), once a read of the head object has
    shown that the bucket still holds it (a direct write there is a conflict, as for any
    save). A restore always makes its revision.

    `request` names the runner request (and write) this save belongs to: a retry of it that
    finds a revision made by that request, recorded by whichever save came first, is that
    write, done.

    An agent's text that the poisoning scanner flags is not saved: Quarantined, carrying the
    quarantined proposal it became (memory/quarantine.py). `released`: who released such a
    write (an approved quarantined proposal); the revision keeps it beside the findings."""
    data = encode(content)
    storage = storage_for(file.project)
    conflict_reason = ""
    held = None
    with transaction.atomic():
        locked = lock_file(file)
        done = _made_by(locked, request)
        if done is not None:
            refresh_head(file, locked)
            return done
        head = locked.head
        head_number = head.number if head else None
        if base_revision != head_number:
            earlier = _saved_before(locked, data, actor, base_revision, restored_from)
            if earlier is not None:
                refresh_head(file, locked)
                return earlier
            conflict_reason = "stale_base"
        elif (
            restored_from is None
            and head is not None
            and not head.is_deletion
            and sha256(data) == head.sha256
        ):
            if adopt_s3_state(storage, locked) is None:
                if locked.refused_etag:  # a refused write sits at the key: put the head back
                    put_head_back(storage, locked)
                revision = head
            else:
                conflict_reason = "external_change"
        else:
            try:
                revision = write_revision(
                    storage,
                    locked,
                    data,
                    actor=actor,
                    message=message,
                    restored_from=restored_from,
                    merged_base=merged_base,
                    request=request,
                    released=released,
                )
            except HeadChanged:
                adopted = adopt_s3_state(storage, locked)
                if adopted is not None and request and adopted.request_ref == request:
                    revision = adopted  # this request's own write, left by an attempt that died
                else:
                    conflict_reason = "external_change"
            except quarantine.Quarantined as exc:
                held = exc  # nothing was written: the proposal is made once the lock is let go
    if held is not None:
        raise quarantine.hold(
            held, file=file, actor=actor, mode="replace", content=decode(data), base_revision=base_revision
        )
    if conflict_reason:
        raise save_conflict(storage, file, conflict_reason, data, base_revision)
    refresh_head(file, locked)
    return revision


def _made_by(locked: MemoryFile, request: str) -> Revision | None:
    """The revision a runner request's write made, if it was recorded (by its own attempt,
    or, when that attempt's worker died after its S3 write, by the next save, pre hook or
    reconcile that met the head it left, from its metadata)."""
    if not request:
        return None
    return Revision.objects.filter(file=locked, request_ref=request).order_by("number").first()


def _saved_before(
    locked: MemoryFile, data: bytes, actor: Actor, base_revision: int | None, restored_from: int | None
) -> Revision | None:
    """This very save, made before: the revision right after `base_revision` holds these
    bytes, written by the same author (and session) on that base. A save whose answer was
    lost (503, outcome unknown) did land, and was recorded since (by the next pre hook, a
    save, reconcile); the same person saving the same text on the same base again is that
    save, not a conflict with their own text."""
    number = 1 if base_revision is None else base_revision + 1
    found = Revision.objects.filter(file=locked, number=number).first()
    if (
        found is None
        or found.is_deletion
        or found.sha256 != sha256(data)
        or found.restored_from != restored_from
        or found.renamed_from_id is not None
    ):
        return None
    same_author = (
        found.author_kind == actor.kind
        and found.author_user_id == (actor.user.pk if actor.user is not None else None)
        and found.author_agent_id == (actor.agent.pk if actor.agent is not None else None)
        and found.session_ref == actor.session_ref
        and (actor.kind != Revision.AuthorKind.SYSTEM or found.author_label == actor.label)
    )
    return found if same_author else None


def file_append(
    *,
    file: MemoryFile,
    addition: str,
    actor: Actor,
    message: str | Message = "",
    request: str = "",
    released: dict | None = None,
) -> Revision:
    """Add `addition` at the end of whatever the head is now, under the file's row lock: an
    append commutes with every other write, so concurrent appenders all succeed and none is
    asked to retry. A direct write to the bucket found on the way is recorded first (as
    external) and the append goes on top of it. Quarantined as file_save."""
    storage = storage_for(file.project)
    held = None
    with transaction.atomic():
        locked = lock_file(file)
        done = _made_by(locked, request)
        if done is not None:  # this very append, made before its answer was lost (file_save)
            refresh_head(file, locked)
            return done
        if addition == "" and locked.head is not None and not locked.head.is_deletion:
            return locked.head  # nothing to add: no revision (as a save of the head's text)
        for _round in range(_APPEND_ROUNDS):
            head = locked.head
            text = "" if head is None or head.is_deletion else revision_texts(locked.project, [head])[head.pk]
            data = encode(appended(text, addition))
            try:
                revision = write_revision(
                    storage,
                    locked,
                    data,
                    actor=actor,
                    message=message,
                    restored_from=None,
                    request=request,
                    released=released,
                )
                break
            except HeadChanged:
                adopted = adopt_s3_state(storage, locked)  # moves locked.head to what S3 holds
                if adopted is not None and request and adopted.request_ref == request:
                    revision = adopted  # this request's own append, left by an attempt that died
                    break
            except quarantine.Quarantined as exc:
                held = exc
                break
        else:
            raise StorageUnavailable(
                _("The file kept changing in storage while appending; nothing was appended. Try again.")
            )
    if held is not None:
        raise quarantine.hold(
            held, file=file, actor=actor, mode="append", content=addition, base_revision=None
        )
    refresh_head(file, locked)
    return revision


def file_restore(
    *, file: MemoryFile, number: int, actor: Actor, message: str | Message = "", base_revision: int | None
) -> Revision:
    """Write an old revision's content as a new revision; history only grows."""
    old = Revision.objects.filter(file=file, number=number).first()
    if old is None:
        raise ValidationError(
            _("Revision %(number)s does not exist."), code="no_revision", params={"number": number}
        )
    if old.is_deletion:
        raise ValidationError(
            _("Revision %(number)s is a deletion; pick one with content."),
            code="restore_deletion",
            params={"number": number},
        )
    data = read_snapshot(storage_for(file.project), old)
    return file_save(
        file=file,
        content=data,
        actor=actor,
        message=message or system_message("restore", number=number),
        base_revision=base_revision,
        restored_from=number,
    )


def save_conflict(
    storage: MemoryStorage, file: MemoryFile, reason: str, data: bytes, base_revision: int | None
) -> SaveConflict:
    current = MemoryFile.objects.select_related("head", "project").get(pk=file.pk)
    refresh_head(file, current)
    head = current.head
    head_text = "" if head is None or head.is_deletion else decode(read_snapshot(storage, head))
    return SaveConflict(
        reason=reason, head=head, head_text=head_text, your_text=decode(data), base_revision=base_revision
    )


def write_revision(
    storage: MemoryStorage,
    locked: MemoryFile,
    data: bytes,
    *,
    actor: Actor,
    message: str | Message,
    restored_from: int | None,
    renamed_from: MemoryFile | None = None,
    merged_base: int | None = None,
    request: str = "",
    released: dict | None = None,
) -> Revision:
    """Steps 2-4 of a save, under the row lock. HeadChanged when someone else wrote the head.
    ConsentWithdrawn when an agent writes the profile of a person who withdrew consent.
    Step 1, before anything is written: the poisoning scanner (Quarantined for an agent's
    write it flags, unless `released`; the findings go on the revision)."""
    consent.refuse_agent_write(locked, actor)
    renamed = renamed_from is not None
    poisoned = quarantine.screen_write(locked, data, actor, released=released, renamed=renamed)
    head = locked.head
    number = head.number + 1 if head else 1
    sha = sha256(data)
    snap = layout.snapshot_key(locked.project.prefix, locked.pk, number, sha)
    metadata = write_metadata(
        actor,
        message,
        head.number if head else None,
        restored_from,
        renamed_from,
        merged_base,
        request=request,
    )
    held = holds_over(locked)  # new versions of what a legal hold covers are held from birth
    if expiry_pending(locked) and not held:  # (a hold keeps what an unfinished expiry left)
        finish_expiry(storage, locked)
    try:  # a failure here changed nothing visible
        storage.write(snap, data, metadata=metadata, if_none_match=True, legal_hold=bool(held))
    except PreconditionFailed:
        pass  # an earlier attempt's snapshot of the same bytes: it may be needed to finish
        #       that attempt (its metadata names its author), so it is kept as it is
    expected = expected_etag(locked)
    try:
        etag = storage.write(
            locked.key,
            data,
            metadata=metadata,
            if_none_match=not expected,
            if_match=expected,
            ambiguous="unknown",
            legal_hold=bool(held),
        )
    except PreconditionFailed:
        # A 412: someone else's write, or this very save's (an answer lost, then retried).
        found = storage.read(locked.key, max_bytes=settings.MGC_MAX_FILE_BYTES)
        if found is not None and found.body == data and same_save(found.metadata, metadata):
            etag = found.etag
        else:
            if found is None or found.body != data:
                _forget_snapshot(storage, snap)
            raise HeadChanged() from None
    except StorageUnavailable as exc:
        if exc.outcome != "unknown":
            raise
        etag = _settle(storage, locked, data, metadata, exc, snap)
    if renamed_from is not None:
        action, details = "file.rename_in", {"renamed_from": renamed_from.source_path}
    else:
        action, details = ("file.restore" if restored_from else "file.save"), None
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
        data=data,
        renamed_from=renamed_from,
        details=details,
        merged_base=merged_base,
        request_ref=request,
        poisoning=poisoned,
    )


def _settle(
    storage: MemoryStorage,
    locked: MemoryFile,
    data: bytes,
    metadata: dict[str, str],
    lost: StorageUnavailable,
    snap: str,
) -> str:
    """The head PUT got no answer: read the head to learn what happened. Our bytes: success.
    The head we knew: nothing was written. Someone else's: HeadChanged. No answer: unknown."""
    try:
        found = storage.read(locked.key, max_bytes=settings.MGC_MAX_FILE_BYTES)
    except StorageUnavailable:
        raise lost from None
    if found is not None and found.body == data and same_save(found.metadata, metadata):
        return found.etag
    if found is None or found.body != data:
        _forget_snapshot(storage, snap)
    expected = expected_etag(locked)
    if (found is None and not expected) or (found is not None and found.etag == expected):
        raise StorageUnavailable.nothing_changed() from None
    raise HeadChanged()


def _forget_snapshot(storage: MemoryStorage, snap: str) -> None:
    """Remove the snapshot of a save that did not land. Only when the head does not hold its
    bytes: then no attempt can own `<n>-<sha>` (attempts on one file are serialized by the
    row lock, and one whose head write landed with these bytes would be in the head). Best
    effort: an orphan left behind is a warning that reconcile clears."""
    try:
        storage.remove(snap)
    except StorageUnavailable:
        pass
