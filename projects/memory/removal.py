"""Taking a file's head away from its path: delete (a tombstone revision; the history stays) and
rename (a new revision at the target, then a tombstone at the old path)."""

from __future__ import annotations

from django.db import transaction
from django.utils.translation import gettext as _

from projects.audit import Actor
from projects.memory import consent, holds
from projects.memory.adoption import adopt_s3_state
from projects.memory.content import sha256
from projects.memory.errors import FileDeleted, Held, StorageUnavailable, TargetExists
from projects.memory.reading import read_snapshot, revision_texts
from projects.memory.recording import (
    expected_etag,
    holds_over,
    lock_file,
    record_revision,
    refresh_head,
)
from projects.memory.storage import MemoryStorage, storage_for
from projects.memory.store import HeadChanged, save_conflict, write_revision
from projects.models import MemoryFile, Revision
from projects.system_text import Message


def file_delete(
    *, file: MemoryFile, actor: Actor, message: str | Message = "", base_revision: int | None
) -> Revision:
    """Delete the head object and record a tombstone revision; history stays."""
    storage = storage_for(file.project)
    conflict_reason = ""
    with transaction.atomic():
        locked = lock_file(file)
        head = locked.head
        if head is None or head.is_deletion:
            raise FileDeleted(_("The file is already deleted."))
        standing = holds_over(locked)
        if standing:
            raise Held(holds.refusal(standing))
        consent.refuse_agent_write(locked, actor)
        if base_revision != head.number:
            conflict_reason = "stale_base"
        elif adopt_s3_state(storage, locked) is not None:
            conflict_reason = "external_change"
        else:
            _remove_settled(storage, locked)
            revision = record_revision(
                locked,
                number=head.number + 1,
                sha=sha256(b""),
                size=0,
                actor=actor,
                message=message,
                snapshot_key="",
                etag="",
                is_deletion=True,
                action="file.delete",
            )
    if conflict_reason:
        raise save_conflict(storage, file, conflict_reason, b"", base_revision)
    refresh_head(file, locked)
    return revision


def file_rename(
    *, file: MemoryFile, target: MemoryFile, actor: Actor, message: str = "", base_revision: int | None
) -> tuple[Revision, Revision]:
    """Move a file's head to another path: a new revision at `target` that names where it came
    from (`renamed_from`), then a tombstone at the old path that names where it went
    (`renamed_to`). Both histories stay; restoring the old path's last revision (or renaming
    back) undoes it. Returns (tombstone, new revision).

    Under both row locks (taken in id order, so two renames of a pair cannot deadlock): the
    base must be the head, S3 must hold what was recorded (a direct write is a conflict, as
    for any save), and the target may not hold a live file (TargetExists). The target is
    written first, conditionally like a new file, then the old head object is removed: a
    failure in between leaves two copies, never none. A retry after a lost answer recognises
    its own copy at the target (same bytes, author, session and source) and only finishes the
    removal."""
    if file.pk == target.pk:
        raise TargetExists(_("A file cannot be renamed to itself."))
    storage = storage_for(file.project)
    conflict_reason = ""
    with transaction.atomic():
        locked_rows = {f.pk: lock_file(f) for f in sorted((file, target), key=lambda f: str(f.pk))}
        locked, dest = locked_rows[file.pk], locked_rows[target.pk]
        head = locked.head
        if head is None or head.is_deletion:
            raise FileDeleted(_("The file is already deleted."))
        standing = holds_over(locked)  # a rename deletes the old path's head
        if standing:
            raise Held(holds.refusal(standing))
        if base_revision != head.number:
            conflict_reason = "stale_base"
        elif adopt_s3_state(storage, locked) is not None:
            conflict_reason = "external_change"
        else:
            adopt_s3_state(storage, dest)  # a direct write at the target counts as a file there
            dest_head = dest.head
            copied = (
                dest_head is not None
                and not dest_head.is_deletion
                and dest_head.renamed_from_id == locked.pk
                and dest_head.sha256 == head.sha256
                and (
                    dest_head.author_kind,
                    dest_head.author_user_id,
                    dest_head.author_agent_id,
                    dest_head.session_ref,
                )
                == (
                    actor.kind,
                    actor.user.pk if actor.user else None,
                    actor.agent.pk if actor.agent else None,
                    actor.session_ref,
                )
            )
            moved = dest_head if copied else None  # an earlier attempt's copy, recovered
            if dest_head is not None and not dest_head.is_deletion and not copied:
                conflict_reason = "target_exists"
            elif moved is None:
                data = revision_texts(locked.project, [head])[head.pk].encode("utf-8")
                if sha256(data) != head.sha256:  # never copy anything but the head's bytes
                    data = read_snapshot(storage, head)
                try:
                    moved = write_revision(
                        storage,
                        dest,
                        data,
                        actor=actor,
                        message=message,
                        restored_from=None,
                        renamed_from=locked,
                    )
                except HeadChanged:
                    adopt_s3_state(storage, dest)
                    conflict_reason = "target_exists"
            if moved is not None:
                try:
                    _remove_settled(storage, locked)
                except StorageUnavailable:
                    # The copy at the target landed: "nothing was changed" would be untrue.
                    # The same rename again adopts that copy as its own and finishes.
                    raise StorageUnavailable.outcome_unknown() from None
                tombstone = record_revision(
                    locked,
                    number=head.number + 1,
                    sha=sha256(b""),
                    size=0,
                    actor=actor,
                    message=message,
                    snapshot_key="",
                    etag="",
                    is_deletion=True,
                    action="file.rename",
                    renamed_to=dest,
                    details={"renamed_to": dest.source_path},
                )
    if conflict_reason == "target_exists":  # after the commit: what was adopted stays recorded
        raise TargetExists(
            _("%(path)s exists already; nothing was renamed. Delete it first or choose another name.")
            % {"path": target.source_path}
        )
    if conflict_reason:
        raise save_conflict(storage, file, conflict_reason, b"", base_revision)
    refresh_head(file, locked)
    refresh_head(target, dest)
    return tombstone, moved


def _remove_settled(storage: MemoryStorage, locked: MemoryFile) -> None:
    """DELETE the head object under the row lock. Without an answer, read the key: gone means
    this DELETE did it (the head was there, unchanged, just before, and no save can run
    meanwhile), so the deletion is recorded as the person's; still the recorded head means
    nothing happened (503, "nothing was changed"); no answer to the read either leaves the
    outcome unknown (503), and the same delete again settles it."""
    try:
        storage.remove(locked.key)
        return
    except StorageUnavailable as exc:
        lost = exc
    try:
        found = storage.describe(locked.key)
    except StorageUnavailable:
        raise lost from None
    if found is None:
        return
    if found.etag == expected_etag(locked):
        raise StorageUnavailable.nothing_changed() from None
    raise lost
