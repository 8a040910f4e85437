"""Memory files in S3: read the head, save, append, history, restore, delete, catch up.

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
A refused save removes its snapshot only when the head does not hold its bytes (then no
other attempt can own it); any orphan left behind is a warning that reconcile clears.

A failure after 3 but before the commit leaves a head object the database does not know:
reads keep serving the old head's snapshot (the GET is conditional on the known ETag), and
the next save, the next pre hook or reconcile adopts it as the revision it was meant to be.
"""

from __future__ import annotations

import logging
import threading
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import quote, unquote

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.core.paginator import Page, Paginator
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from projects.audit import Actor, audit_record
from projects.memory import (
    holds,
    indexing,
    layout,
    lookalikes,
    provenance,
    refusals,
    scanning,
)
from projects.memory.content import appended, decode, encode, sha256
from projects.memory.errors import (
    FileDeleted,
    Held,
    RevisionExpired,
    SaveConflict,
    StorageUnavailable,
    TargetExists,
)
from projects.memory.feed import feed_for
from projects.memory.storage import MemoryStorage, PreconditionFailed, storage_for
from projects.models import Agent, Lock, MemoryFile, Project, RefusedWrite, Revision
from projects.system_text import Message
from projects.system_text import message as system_message

logger = logging.getLogger(__name__)

HISTORY_PAGE_SIZE = 50  # revisions per history page (the other page sizes: views/paging.py)
_POOL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="mgc-s3")


# --- Objects as they stand -----------------------------------------------------------------------


def object_read(project: Project, key: str) -> bytes | None:
    """An object as it stands in the bucket now, for export: None if it is missing or larger
    than a memory file may be (it is never read whole: see refusals)."""
    found = storage_for(project).read(key, max_bytes=_limit())
    return found.body if found is not None and found.size <= _limit() else None


def _limit() -> int:
    return settings.MGC_MAX_FILE_BYTES


def list_objects(project: Project, prefix: str) -> list[dict]:
    return storage_for(project).listing(prefix)


def purge(project: Project, prefixes: list[str], keys: list[str] = ()) -> int:
    """Delete every object under the prefixes (and at exactly the `keys`), and every old version
    and delete marker if the bucket keeps versions: for erasure and expiry, where nothing may
    stay behind. Returns how many. ObjectHeld if the store refuses a version (a legal hold)."""
    storage = storage_for(project)
    removed = 0
    for prefix, exact in [(p, False) for p in prefixes] + [(k, True) for k in keys]:
        for obj in storage.listing(prefix):
            if exact and obj["Key"] != prefix:
                continue
            storage.remove(obj["Key"])
            removed += 1
        for version in storage.versions(prefix):
            if version.get("VersionId") in (None, "null") or (exact and version["Key"] != prefix):
                continue  # unversioned objects went with the deletes above
            storage.remove(version["Key"], version["VersionId"])
            removed += 1
    return removed


def forget_cached(revisions: list[Revision]) -> None:
    cache.delete_many([_cache_key(r) for r in revisions])


# --- Who wrote what (object metadata) -------------------------------------------------------------


def _write_metadata(actor: Actor, message: str | Message, base: int | None,
                    restored_from: int | None, renamed_from: MemoryFile | None = None
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
    if restored_from is not None:
        meta["mgc-restored-from"] = str(restored_from)
    if renamed_from is not None:
        meta["mgc-renamed-from"] = str(renamed_from.pk)
    return meta


_SAME_SAVE = ("mgc-author-kind", "mgc-author-user", "mgc-author-agent", "mgc-session",
              "mgc-base", "mgc-restored-from", "mgc-renamed-from")


def _same_save(found: dict[str, str], ours: dict[str, str]) -> bool:
    """The object was written by the same author, in the same session, on the same base: a
    retry of this very save (its bytes are compared separately)."""
    return all(found.get(name, "") == ours.get(name, "") for name in _SAME_SAVE)


def _whole_number(text: str) -> bool:
    """ASCII digits only: str.isdigit() also accepts "²", which int() refuses."""
    return text.isascii() and text.isdigit()


def _agent_named(value: str) -> Agent | None:
    """The agent a metadata value names, None for anything that is not one's id."""
    try:
        return Agent.objects.filter(pk=uuid.UUID(value)).first() if value else None
    except ValueError:
        return None


def _actor_from_metadata(meta: dict[str, str]) -> Actor:
    """The author a snapshot's metadata names. Metadata is whatever the object carries, so any
    value that names no one falls back to `external`."""
    kind = meta.get("mgc-author-kind", Revision.AuthorKind.EXTERNAL)
    if kind == Revision.AuthorKind.PERSON and _whole_number(meta.get("mgc-author-user", "")):
        user = get_user_model().objects.filter(pk=int(meta["mgc-author-user"])).first()
        if user is not None:
            return Actor.person(user)
    if kind == Revision.AuthorKind.AGENT:
        agent = _agent_named(meta.get("mgc-author-agent", ""))
        if agent is not None:
            return Actor.for_agent(agent, meta.get("mgc-session", ""))
    if kind == Revision.AuthorKind.SYSTEM:
        return Actor.system(unquote(meta.get("mgc-author-label", "")).removeprefix("system:"))
    agent = _agent_named(meta.get("mgc-author-agent", ""))
    return Actor.external(agent, meta.get("mgc-session", "") if agent else "")


# --- Reads ---------------------------------------------------------------------------------------


@dataclass
class FileContent:
    file: MemoryFile
    revision: Revision | None
    text: str
    # True when the object in S3 is not the head the console recorded (a direct write, or a
    # half-done save): the text shown is the recorded head's snapshot, until it is adopted.
    drifted: bool = False


def file_read(file: MemoryFile) -> FileContent:
    """The head revision's text. One GET when S3 holds what the console last wrote."""
    head = file.head
    if head is None or head.is_deletion:
        return FileContent(file=file, revision=head, text="")
    storage = storage_for(file.project)
    if file.head_etag and not file.refused_etag:
        found = storage.read(file.key, if_match=file.head_etag)
        if found is not None:
            return FileContent(file=file, revision=head, text=decode(found.body))
    # What the key holds is not the recorded head (a direct write not adopted yet, or one the
    # console refused: then `file.refused_etag` says so and the page shows it as refused).
    data = _read_snapshot(storage, head)
    return FileContent(file=file, revision=head, text=decode(data),
                       drifted=not file.refused_etag)


def _read_snapshot(storage: MemoryStorage, revision: Revision) -> bytes:
    if revision.purged_at is not None:
        raise RevisionExpired(
            _("The text of revision %(number)s was deleted on %(date)s under a retention rule; "
              "its record stays.") % {"number": revision.number,
                                      "date": revision.purged_at.date().isoformat()})
    found = storage.body(revision.snapshot_key)
    if found is None:
        raise StorageUnavailable(
            _("The stored copy of revision %(number)s is missing from storage (%(key)s). "
              "Run `manage.py reconcile` and check the bucket.")
            % {"number": revision.number, "key": revision.snapshot_key}
        )
    return found


def _cache_key(revision: Revision) -> str:
    # Snapshots are immutable: a revision's text can be cached for as long as it is kept.
    return f"mgc:rev:{revision.file_id}:{revision.number}:{revision.sha256[:16]}"


def revision_read(revision: Revision) -> str:
    """The text of any revision ('' for a deletion)."""
    return revision_texts(revision.file.project, [revision])[revision.pk]


def revision_texts(project: Project, revisions: list[Revision]) -> dict[int, str]:
    """Texts of several revisions of one project: from the cache, the rest fetched from S3 in
    parallel (the threads only talk to S3, never to the database)."""
    texts = {r.pk: "" for r in revisions if r.is_deletion}
    live = [r for r in revisions if not r.is_deletion]
    keys = {r.pk: _cache_key(r) for r in live}
    cached = cache.get_many(list(keys.values())) if keys else {}
    missing = []
    for revision in live:
        if keys[revision.pk] in cached:
            texts[revision.pk] = cached[keys[revision.pk]]
        else:
            missing.append(revision)
    if missing:
        storage = storage_for(project)
        read = lambda r: decode(_read_snapshot(storage, r))  # noqa: E731
        fetched = list(_POOL.map(read, missing)) if len(missing) > 1 else [read(missing[0])]
        for revision, text in zip(missing, fetched, strict=True):
            texts[revision.pk] = text
        cache.set_many({keys[r.pk]: texts[r.pk] for r in missing}, timeout=None)
    return texts


class _RevisionPaginator(Paginator):
    """Revisions are numbered 1..n with no gaps and n is the head's number, so the count is
    known without COUNT(*) and page k is a range of numbers on the (file, number) index
    instead of an OFFSET: the last page of 10,000 revisions costs what the first does."""

    def __init__(self, revisions, per_page: int, total: int):
        super().__init__(revisions, per_page)
        self._total = total

    @property
    def count(self) -> int:
        return self._total

    def page(self, number) -> Page:
        number = self.validate_number(number)
        top = self._total - (number - 1) * self.per_page
        rows = list(self.object_list.filter(number__lte=top, number__gt=top - self.per_page))
        return self._get_page(rows, number, self)


def file_history(file: MemoryFile, page: int | str = 1, per_page: int = HISTORY_PAGE_SIZE) -> Page:
    """Revisions newest first, one page of them."""
    revisions = (Revision.objects.filter(file=file)
                 .select_related("author_user", "author_agent", "renamed_from", "renamed_to")
                 .order_by("-number"))
    total = file.head.number if file.head_id else 0
    return _RevisionPaginator(revisions, per_page, total).get_page(page)


def file_lookup(*, project: Project, scope: str, agent: Agent | None = None, user=None,
                path: str) -> MemoryFile | None:
    key = layout.file_key(project.prefix, scope, agent_id=agent.pk if agent else None,
                          user_id=user.pk if user else None, path=path)
    return (MemoryFile.objects.select_related("head", "project", "agent", "user")
            .filter(project=project, key=key).first())


def workspace_file_new(*, project: Project, path: str) -> MemoryFile:
    """The record of a workspace file a person or a runner names, made if it is new and its
    name is free (`workspace_name_free`). New names in a project are made one at a time, so
    two look-alike names created at once cannot both pass the check."""
    path = layout.validate_workspace_path(path)
    with transaction.atomic():
        existing = file_lookup(project=project, scope=MemoryFile.Scope.WORKSPACE, path=path)
        if existing is not None:
            return existing
        Lock.hold(f"ws-names:{project.pk}")
        workspace_name_free(project=project, path=path)
        return file_ensure(project=project, scope=MemoryFile.Scope.WORKSPACE, path=path)


def workspace_name_free(*, project: Project, path: str) -> None:
    """ValidationError if another workspace file's path reads the same as `path` (case,
    look-alike letters: `Notes/Runbook.md`, Cyrillic `nоtes/runbook.md`): a reader could not
    tell them apart, and a case-insensitive disk (a runner's sandbox) would hold only one.
    For new names from people and runners; what the bucket already holds is adopted as is."""
    wanted = lookalikes.name_key(path)
    paths = MemoryFile.objects.filter(project=project, scope=MemoryFile.Scope.WORKSPACE)
    for other in paths.values_list("path", flat=True).iterator():
        if other != path and lookalikes.name_key(other) == wanted:
            raise ValidationError(
                _("%(path)s reads the same as the existing %(other)s; use that file or pick "
                  "another name."), code="path_lookalike", params={"path": path, "other": other})


# --- Writes --------------------------------------------------------------------------------------


class _HeadChanged(Exception):
    """The conditional head write found another object than the one the console wrote."""


_APPEND_ROUNDS = 5  # direct writes landing between our read and our write, in a row


def file_ensure(*, project: Project, scope: str, agent: Agent | None = None, user=None,
                path: str) -> MemoryFile:
    """The record of a memory file, created (without content) if it does not exist yet.

    The record is committed on its own, before any content is written, so that a half-done
    first save still has a record (and a history folder id) that reconcile can complete.
    """
    if scope == layout.SCOPE_WORKSPACE:
        path = layout.validate_workspace_path(path)
    if agent is not None and agent.project_id != project.pk:
        raise ValidationError(_("The agent belongs to another project."), code="agent_project")
    key = layout.file_key(project.prefix, scope, agent_id=agent.pk if agent else None,
                          user_id=user.pk if user else None, path=path)
    with transaction.atomic():
        record, _created = MemoryFile.objects.get_or_create(
            project=project, key=key,
            defaults={"scope": scope, "agent": agent, "user": user, "path": path},
        )
    return MemoryFile.objects.select_related("head", "project", "agent", "user").get(pk=record.pk)


def file_create(*, project: Project, scope: str, agent: Agent | None = None, user=None,
                path: str, content: str | bytes, actor: Actor, message: str = "") -> Revision:
    """Create a file with its first revision (or revive a deleted one)."""
    record = file_ensure(project=project, scope=scope, agent=agent, user=user, path=path)
    base = record.head.number if record.head is not None and record.head.is_deletion else None
    return file_save(file=record, content=content, actor=actor, message=message,
                     base_revision=base)


def file_save(*, file: MemoryFile, content: str | bytes, actor: Actor, message: str | Message = "",
              base_revision: int | None, restored_from: int | None = None) -> Revision:
    """Save new content on top of base_revision; SaveConflict if the file moved on.

    Content identical to the head's makes no revision: the head is returned (its number is
    `base_revision`, where a new revision's is one more), once a read of the head object has
    shown that the bucket still holds it (a direct write there is a conflict, as for any
    save). A restore always makes its revision."""
    data = encode(content)
    storage = storage_for(file.project)
    conflict_reason = ""
    with transaction.atomic():
        locked = _lock(file)
        head = locked.head
        head_number = head.number if head else None
        if base_revision != head_number:
            conflict_reason = "stale_base"
        elif (restored_from is None and head is not None and not head.is_deletion
              and sha256(data) == head.sha256):
            if _adopt_s3_state(storage, locked) is None:
                if locked.refused_etag:  # a refused write sits at the key: put the head back
                    _put_head_back(storage, locked)
                revision = head
            else:
                conflict_reason = "external_change"
        else:
            try:
                revision = _write_revision(storage, locked, data, actor=actor, message=message,
                                           restored_from=restored_from)
            except _HeadChanged:
                _adopt_s3_state(storage, locked)
                conflict_reason = "external_change"
    if conflict_reason:
        raise _conflict(storage, file, conflict_reason, data, base_revision)
    _refresh(file, locked)
    return revision


def file_append(*, file: MemoryFile, addition: str, actor: Actor,
                message: str | Message = "") -> Revision:
    """Add `addition` at the end of whatever the head is now, under the file's row lock: an
    append commutes with every other write, so concurrent appenders all succeed and none is
    asked to retry. A direct write to the bucket found on the way is recorded first (as
    external) and the append goes on top of it."""
    storage = storage_for(file.project)
    with transaction.atomic():
        locked = _lock(file)
        if addition == "" and locked.head is not None and not locked.head.is_deletion:
            return locked.head  # nothing to add: no revision (as a save of the head's text)
        for _round in range(_APPEND_ROUNDS):
            head = locked.head
            text = ("" if head is None or head.is_deletion
                    else revision_texts(locked.project, [head])[head.pk])
            data = encode(appended(text, addition))
            try:
                revision = _write_revision(storage, locked, data, actor=actor, message=message,
                                           restored_from=None)
                break
            except _HeadChanged:
                _adopt_s3_state(storage, locked)  # moves locked.head to what S3 holds
        else:
            raise StorageUnavailable(_("The file kept changing in storage while appending; "
                                       "nothing was appended. Try again."))
    _refresh(file, locked)
    return revision


def file_restore(*, file: MemoryFile, number: int, actor: Actor, message: str | Message = "",
                 base_revision: int | None) -> Revision:
    """Write an old revision's content as a new revision; history only grows."""
    old = Revision.objects.filter(file=file, number=number).first()
    if old is None:
        raise ValidationError(_("Revision %(number)s does not exist."), code="no_revision",
                              params={"number": number})
    if old.is_deletion:
        raise ValidationError(_("Revision %(number)s is a deletion; pick one with content."),
                              code="restore_deletion", params={"number": number})
    data = _read_snapshot(storage_for(file.project), old)
    return file_save(file=file, content=data, actor=actor,
                     message=message or system_message("restore", number=number),
                     base_revision=base_revision, restored_from=number)


def file_delete(*, file: MemoryFile, actor: Actor, message: str | Message = "",
                base_revision: int | None) -> Revision:
    """Delete the head object and record a tombstone revision; history stays."""
    storage = storage_for(file.project)
    conflict_reason = ""
    with transaction.atomic():
        locked = _lock(file)
        head = locked.head
        if head is None or head.is_deletion:
            raise FileDeleted(_("The file is already deleted."))
        standing = _holds_over(locked)
        if standing:
            raise Held(holds.refusal(standing))
        if base_revision != head.number:
            conflict_reason = "stale_base"
        elif _adopt_s3_state(storage, locked) is not None:
            conflict_reason = "external_change"
        else:
            _remove_settled(storage, locked)
            revision = _record(locked, number=head.number + 1, sha=sha256(b""), size=0,
                               actor=actor, message=message, snapshot_key="", etag="",
                               is_deletion=True, action="file.delete")
    if conflict_reason:
        raise _conflict(storage, file, conflict_reason, b"", base_revision)
    _refresh(file, locked)
    return revision


def file_rename(*, file: MemoryFile, target: MemoryFile, actor: Actor, message: str = "",
                base_revision: int | None) -> tuple[Revision, Revision]:
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
        locked_rows = {f.pk: _lock(f) for f in sorted((file, target), key=lambda f: str(f.pk))}
        locked, dest = locked_rows[file.pk], locked_rows[target.pk]
        head = locked.head
        if head is None or head.is_deletion:
            raise FileDeleted(_("The file is already deleted."))
        standing = _holds_over(locked)  # a rename deletes the old path's head
        if standing:
            raise Held(holds.refusal(standing))
        if base_revision != head.number:
            conflict_reason = "stale_base"
        elif _adopt_s3_state(storage, locked) is not None:
            conflict_reason = "external_change"
        else:
            _adopt_s3_state(storage, dest)  # a direct write at the target counts as a file there
            dest_head = dest.head
            copied = (dest_head is not None and not dest_head.is_deletion
                      and dest_head.renamed_from_id == locked.pk and dest_head.sha256 == head.sha256
                      and (dest_head.author_kind, dest_head.author_user_id,
                           dest_head.author_agent_id, dest_head.session_ref)
                      == (actor.kind, actor.user.pk if actor.user else None,
                          actor.agent.pk if actor.agent else None, actor.session_ref))
            moved = dest_head if copied else None  # an earlier attempt's copy, recovered
            if dest_head is not None and not dest_head.is_deletion and not copied:
                conflict_reason = "target_exists"
            elif moved is None:
                data = revision_texts(locked.project, [head])[head.pk].encode("utf-8")
                if sha256(data) != head.sha256:  # never copy anything but the head's bytes
                    data = _read_snapshot(storage, head)
                try:
                    moved = _write_revision(storage, dest, data, actor=actor, message=message,
                                            restored_from=None, renamed_from=locked)
                except _HeadChanged:
                    _adopt_s3_state(storage, dest)
                    conflict_reason = "target_exists"
            if moved is not None:
                try:
                    _remove_settled(storage, locked)
                except StorageUnavailable:
                    # The copy at the target landed: "nothing was changed" would be untrue.
                    # The same rename again adopts that copy as its own and finishes.
                    raise StorageUnavailable.outcome_unknown() from None
                tombstone = _record(locked, number=head.number + 1, sha=sha256(b""), size=0,
                                    actor=actor, message=message, snapshot_key="", etag="",
                                    is_deletion=True, action="file.rename", renamed_to=dest,
                                    details={"renamed_to": dest.source_path})
    if conflict_reason == "target_exists":  # after the commit: what was adopted stays recorded
        raise TargetExists(_("%(path)s exists already; nothing was renamed. Delete it first or "
                             "choose another name.") % {"path": target.source_path})
    if conflict_reason:
        raise _conflict(storage, file, conflict_reason, b"", base_revision)
    _refresh(file, locked)
    _refresh(target, dest)
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
    if found.etag == _expected_etag(locked):
        raise StorageUnavailable.nothing_changed() from None
    raise lost


def _lock(file: MemoryFile) -> MemoryFile:
    """Lock the file's row, then read it with its head. Two statements on purpose: when
    PostgreSQL's SELECT ... FOR UPDATE waits for another save, it re-reads the locked row but
    not the rows joined to it, so a joined head would be the old one (or none at all)."""
    list(MemoryFile.objects.select_for_update().filter(pk=file.pk).values_list("pk", flat=True))
    return MemoryFile.objects.select_related("head", "project", "agent", "user").get(pk=file.pk)


def _refresh(file: MemoryFile, locked: MemoryFile) -> None:
    file.head = locked.head
    file.head_id = locked.head_id
    file.head_etag = locked.head_etag


def _conflict(storage: MemoryStorage, file: MemoryFile, reason: str, data: bytes,
              base_revision: int | None) -> SaveConflict:
    current = MemoryFile.objects.select_related("head", "project").get(pk=file.pk)
    _refresh(file, current)
    head = current.head
    head_text = "" if head is None or head.is_deletion else decode(
        _read_snapshot(storage, head))
    return SaveConflict(reason=reason, head=head, head_text=head_text,
                        your_text=decode(data), base_revision=base_revision)


def _write_revision(storage: MemoryStorage, locked: MemoryFile, data: bytes, *, actor: Actor,
                    message: str | Message, restored_from: int | None,
                    renamed_from: MemoryFile | None = None) -> Revision:
    """Steps 2-4 of a save, under the row lock. _HeadChanged when someone else wrote the head."""
    head = locked.head
    number = head.number + 1 if head else 1
    sha = sha256(data)
    snap = layout.snapshot_key(locked.project.prefix, locked.pk, number, sha)
    metadata = _write_metadata(actor, message, head.number if head else None, restored_from,
                               renamed_from)
    if _expiry_pending(locked):
        _finish_expiry(storage, locked)
    held = _holds_over(locked)  # new versions of what a legal hold covers are held from birth
    try:  # a failure here changed nothing visible
        storage.write(snap, data, metadata=metadata, if_none_match=True,
                      legal_hold=bool(held))
    except PreconditionFailed:
        pass  # an earlier attempt's snapshot of the same bytes: it may be needed to finish
        #       that attempt (its metadata names its author), so it is kept as it is
    expected = _expected_etag(locked)
    try:
        etag = storage.write(locked.key, data, metadata=metadata, if_none_match=not expected,
                             if_match=expected, ambiguous="unknown", legal_hold=bool(held))
    except PreconditionFailed:
        # A 412: someone else's write, or this very save's (an answer lost, then retried).
        found = storage.read(locked.key, max_bytes=_limit())
        if found is not None and found.body == data and _same_save(found.metadata, metadata):
            etag = found.etag
        else:
            if found is None or found.body != data:
                _forget_snapshot(storage, snap)
            raise _HeadChanged() from None
    except StorageUnavailable as exc:
        if exc.outcome != "unknown":
            raise
        etag = _settle(storage, locked, data, metadata, exc, snap)
    if renamed_from is not None:
        action, details = "file.rename_in", {"renamed_from": renamed_from.source_path}
    else:
        action, details = ("file.restore" if restored_from else "file.save"), None
    return _record(locked, number=number, sha=sha, size=len(data), actor=actor, message=message,
                   snapshot_key=snap, etag=etag, restored_from=restored_from, action=action,
                   data=data, renamed_from=renamed_from, details=details)


def _settle(storage: MemoryStorage, locked: MemoryFile, data: bytes, metadata: dict[str, str],
            lost: StorageUnavailable, snap: str) -> str:
    """The head PUT got no answer: read the head to learn what happened. Our bytes: success.
    The head we knew: nothing was written. Someone else's: _HeadChanged. No answer: unknown."""
    try:
        found = storage.read(locked.key, max_bytes=_limit())
    except StorageUnavailable:
        raise lost from None
    if found is not None and found.body == data and _same_save(found.metadata, metadata):
        return found.etag
    if found is None or found.body != data:
        _forget_snapshot(storage, snap)
    expected = _expected_etag(locked)
    if (found is None and not expected) or (found is not None and found.etag == expected):
        raise StorageUnavailable.nothing_changed() from None
    raise _HeadChanged()


def _holds_over(locked: MemoryFile) -> list:
    """The legal holds standing over the file: one cheap query, a second only if the project
    has any hold at all."""
    return holds.covering_file(locked) if holds.any_standing(locked.project) else []


def _expiry_pending(locked: MemoryFile) -> bool:
    """The head is a retention expiry whose objects were not all deleted yet (the tombstone is
    committed first, with the old head's ETag, so nothing reads the leftover as new)."""
    head = locked.head
    return bool(head is not None and head.expired_rule and locked.head_etag)


def _finish_expiry(storage: MemoryStorage, locked: MemoryFile) -> int:
    """Delete what an expiry left: the head object and every snapshot, every stored version of
    them; then the texts' records (search copies, findings, proposals), and the ETag goes. Under
    the row lock; safe to repeat. Returns how many objects and versions went."""
    project = locked.project
    removed = purge(project, [layout.history_prefix(project.prefix, locked.pk)],
                    keys=[locked.key])
    now = timezone.now()
    revisions = list(Revision.objects.filter(file=locked, is_deletion=False))
    forget_cached(revisions)
    Revision.objects.filter(pk__in=[r.pk for r in revisions], purged_at__isnull=True).update(
        purged_at=now, findings=[])
    Revision.objects.filter(pk__in=[r.pk for r in revisions]).update(snapshot_key="")
    indexing.forget_file(locked)
    locked.proposals.all().delete()
    locked.head_etag = ""
    locked.save(update_fields=["head_etag"])
    return removed


def _expected_etag(locked: MemoryFile) -> str:
    """The ETag a write to the file's key is conditioned on: the refused object's when one is
    there (a save replaces it), else the recorded head's; '' when the key should be empty."""
    if locked.refused_etag:
        return locked.refused_etag
    live = locked.head is not None and not locked.head.is_deletion
    return locked.head_etag if live else ""


def _forget_snapshot(storage: MemoryStorage, snap: str) -> None:
    """Remove the snapshot of a save that did not land. Only when the head does not hold its
    bytes: then no attempt can own `<n>-<sha>` (attempts on one file are serialized by the
    row lock, and one whose head write landed with these bytes would be in the head). Best
    effort: an orphan left behind is a warning that reconcile clears."""
    try:
        storage.remove(snap)
    except StorageUnavailable:
        pass


def _record(locked: MemoryFile, *, number: int, sha: str, size: int, actor: Actor,
            message: str | Message, snapshot_key: str, etag: str, action: str,
            is_deletion: bool = False, restored_from: int | None = None,
            details: dict | None = None, data: bytes = b"", expired_rule: str = "",
            renamed_from: MemoryFile | None = None,
            renamed_to: MemoryFile | None = None) -> Revision:
    findings = [finding.as_dict() for finding in scanning.scan(decode(data))] if data else []
    if findings:
        details = {**(details or {}), "findings": scanning.summary(findings, language="en")}
    code, params = (message.code, message.params) if isinstance(message, Message) else ("", {})
    message = str(message)
    revision = Revision.objects.create(
        file=locked, number=number, sha256=sha, size=size, author_kind=actor.kind,
        author_user=actor.user, author_agent=actor.agent, author_label=actor.label[:200],
        session_ref=actor.session_ref, message=message[:500], snapshot_key=snapshot_key,
        is_deletion=is_deletion, restored_from=restored_from, findings=findings,
        message_code=code, message_params=params, expired_rule=expired_rule[:300],
        renamed_from=renamed_from, renamed_to=renamed_to,
    )
    locked.head = revision
    locked.head_etag = etag
    refusals.replaced(locked)  # a refused object that was at the key is gone now
    locked.save(update_fields=["head", "head_etag", "refused_etag"])
    text = decode(data) if data else ""
    indexing.index_revision(locked, revision, text)
    if not is_deletion:
        # The next append, pre hook or page reads this text: it is known, keep it warm. (If the
        # transaction rolls back the key names a revision that never was; nothing asks for it.)
        cache.set(_cache_key(revision), text, timeout=None)
    audit_record(actor=actor, action=action, project=locked.project, obj=locked,
                 details={"revision": number, "sha256": sha, "size": size,
                          "message": message[:500], **(details or {})},
                 text=text if not is_deletion else None)
    return revision


def _adopt_s3_state(storage: MemoryStorage, locked: MemoryFile) -> Revision | None:
    """Record what S3 holds at the file's key if it is not the recorded head.

    A snapshot `<head+1>-<sha>` carrying the console's metadata on the recorded head means a
    save of ours wrote the head object but never committed: finish it as its author's
    revision (the snapshot is under `_history/`, which no runner credential may write, so its
    metadata is the console's own). Anything else is an external write (or deletion). Call
    with the row locked.
    """
    head = locked.head
    head_live = head is not None and not head.is_deletion
    found = storage.read(locked.key, max_bytes=_limit())
    if found is not None and _expiry_pending(locked) and found.etag == locked.head_etag:
        return None  # an expiry whose deletions did not finish (lifecycle finishes it)
    if found is None:
        if not head_live:
            if locked.refused_etag:  # the refused object went (someone with bucket access)
                refusals.replaced(locked)
                locked.save(update_fields=["refused_etag"])
            return None
        return _record(locked, number=head.number + 1, sha=sha256(b""), size=0,
                       actor=Actor.external(), message=system_message("external_delete"),
                       snapshot_key="", etag="", is_deletion=True, action="file.external_delete")
    data, etag = found.body, found.etag
    if (head_live and etag == locked.head_etag) or etag == locked.refused_etag:
        return None  # the recorded head, or a write already refused
    refusal = refusals.refusal_of(found)
    if refusal is not None:  # what a save would refuse is not adopted either
        refusals.record(storage, project=locked.project, key=locked.key, found=found,
                        reason=refusal[0], detail=refusal[1], file=locked)
        return None
    if head_live and sha256(data) == head.sha256:
        # The head's own bytes, written again (the head put back, or the same text copied
        # in): the head it is, at its new ETag; no revision for no change.
        locked.head_etag = etag
        refusals.replaced(locked)
        locked.save(update_fields=["head_etag", "refused_etag"])
        return None
    number = head.number + 1 if head else 1
    sha = sha256(data)
    snap = layout.snapshot_key(locked.project.prefix, locked.pk, number, sha)
    metadata = storage.metadata(snap)
    details = {}
    if metadata and metadata.get("mgc-base", "") == (str(head.number) if head else "") and \
            found.metadata.get("mgc-write") == metadata.get("mgc-write"):
        # The snapshot and the head object come from the same attempt (same write id).
        actor = _actor_from_metadata(metadata)
        message = (Message.from_metadata(metadata)
                   or unquote(metadata.get("mgc-message", "")))
        restored = metadata.get("mgc-restored-from", "")
        restored_from = int(restored) if _whole_number(restored) else None
        renamed_from = _file_named(locked.project_id, metadata.get("mgc-renamed-from", ""))
        action = "file.save_recovered"
    else:
        # Written past the console: a runner's direct sandbox (attributed when its proof
        # checks out, see projects.provenance) or anyone else with bucket access.
        claim = provenance.verified_writer(project_id=locked.project_id, key=locked.key,
                                           data=data, metadata=found.metadata)
        actor = Actor.external(claim.agent, claim.session) if claim else Actor.external()
        message, restored_from, renamed_from = system_message("external_change"), None, None
        action = "file.external_change"
        storage.write(snap, data, metadata=_write_metadata(actor, message, None, None),
                      legal_hold=bool(_holds_over(locked)))
    return _record(locked, number=number, sha=sha, size=len(data), actor=actor, message=message,
                   snapshot_key=snap, etag=etag, restored_from=restored_from, action=action,
                   details=details, data=data, renamed_from=renamed_from)


def _file_named(project_id, value: str) -> MemoryFile | None:
    """The project's file a metadata value names (a rename's source), None for anything else."""
    try:
        return MemoryFile.objects.filter(pk=uuid.UUID(value), project_id=project_id).first() \
            if value else None
    except ValueError:
        return None


def adopt(file: MemoryFile) -> Revision | None:
    """Under the file's row lock, record what S3 holds at its key if it is not the head."""
    with transaction.atomic():
        return _adopt_s3_state(storage_for(file.project), _lock(file))


# --- Catching up with the bucket --------------------------------------------------------------


def bucket_catch_up(*, project: Project, agent: Agent, user=None, workspace: bool = True,
                    everything: bool = False) -> list[Revision]:
    """Adopt what the bucket holds under the prefixes a prompt draws from (the agent's files,
    the user's profile, the workspace), so the pre hook injects it and its receipt names it.

    One LIST per prefix, in parallel, compared with the ETags the console recorded; only the
    files that differ are read and recorded, under their row lock (a save still running is
    waited for, then seen as what it is). New workspace files get a record first. Changes a
    runner proved it wrote are attributed to it (see projects.provenance), others are
    `external`. Returns the revisions it recorded."""
    return bucket_catch_up_start(project=project, agent=agent, user=user, workspace=workspace,
                                 everything=everything).finish()


class _SharedListings:
    """LISTs of one prefix shared by the pre hooks that need them at once, in this process.

    A caller needs a listing that *started after it arrived*, or it could miss a direct write
    made just before. So at most one LIST of a prefix runs at a time: the first caller starts
    it; callers arriving while it runs all join one queued LIST, which starts when the running
    one ends (after every one of them arrived). Alone, a hook lists at once as before; under
    load, one LIST serves every hook that arrived during the previous one, which spares the
    S3 server most of its work (SeaweedFS spends about 3 ms of CPU on a LIST)."""

    def __init__(self, pool: ThreadPoolExecutor):
        self._pool = pool
        self._lock = threading.Lock()
        self._slots: dict[tuple, list] = {}  # key -> [running future, queued future or None]

    def get(self, storage, prefix: str) -> Future:
        key = (storage.endpoint_url, storage.bucket_name, prefix)
        with self._lock:
            slot = self._slots.get(key)
            if slot is None:
                future: Future = Future()
                self._slots[key] = [future, None]
            else:
                if slot[1] is None:
                    slot[1] = Future()
                return slot[1]
        self._pool.submit(self._run, key, storage, prefix, future)
        return future

    def _run(self, key: tuple, storage, prefix: str, future: Future) -> None:
        try:
            future.set_result(storage.etags(prefix))
        except BaseException as exc:  # the waiting hooks get it (StorageUnavailable)
            future.set_exception(exc)
        with self._lock:
            slot = self._slots[key]
            queued = slot[1]
            if queued is None:
                del self._slots[key]
            else:
                slot[0], slot[1] = queued, None
        if queued is not None:
            self._pool.submit(self._run, key, storage, prefix, queued)


_LISTINGS = _SharedListings(_POOL)


# What the pre hook never reads of the records it assembles from: decoding a head's findings
# and message parameters (JSON) for every file was a good part of the hook's CPU.
PROMPT_DEFERRED = ("created_at", "head__findings", "head__message", "head__message_params",
                   "head__author_label", "head__expired_rule", "head__restored_from")


class CatchUp:
    """A catch-up whose LISTs are in flight (started by `bucket_catch_up_start`).

    The records are read when it starts (`records`: the agent's, the user's and, if asked,
    the workspace's files with their heads), so the caller may assemble from them meanwhile
    (the pool's threads only talk to S3). `finish()` waits for the listings, compares them
    with those records and adopts what differs, as `bucket_catch_up` does; `changed` then
    says whether anything differed, i.e. whether work done from `records` may have missed a
    direct write (even one a concurrent catch-up adopted first). StorageUnavailable if a
    LIST failed."""

    def __init__(self, project: Project, agent: Agent, user, prefixes: list[str], wanted: Q):
        self.project, self.agent, self.user = project, agent, user
        storage = storage_for(project)
        self._feed = feed_for(storage.bucket_name)
        self._listings = []  # (prefix, the feed's mark when it was sent, its future)
        for prefix in prefixes:
            mark = self._feed.mark(prefix) if self._feed is not None else None
            if mark is not None and self._feed.seen(prefix, mark):
                continue  # the feed saw nothing change there since this process listed it
            self._listings.append((prefix, mark, _LISTINGS.get(storage, prefix)))
        self.records = list(MemoryFile.objects.filter(wanted, project=project)
                            .select_related("head").defer(*PROMPT_DEFERRED))
        for record in self.records:  # one project object for all, not one per row
            record.project = project
        self.changed = False

    @property
    def listed_prefixes(self) -> list[str]:
        """The prefixes this catch-up lists (the rest were not written past the console)."""
        return [prefix for prefix, _mark, _future in self._listings]

    def finish(self) -> list[Revision]:
        project, agent, user = self.project, self.agent, self.user
        prefixes = self.listed_prefixes
        if not prefixes:
            return []
        # Only the records under a listed prefix can be compared with what the LIST saw.
        records = {f.key: f for f in self.records if f.key.startswith(tuple(prefixes))}
        listed = {key: etag for _prefix, _mark, future in self._listings
                  for key, etag in future.result().items()}
        adopted: list[Revision] = []
        for key, record in records.items():
            live = record.head is not None and not record.head.is_deletion
            if key in listed and listed[key] == record.refused_etag and record.refused_etag:
                continue  # a write refused already: the head stays, nothing to read again
            if (key in listed and (not live or listed[key] != record.head_etag)) or \
                    (key not in listed and live):
                self.changed = True
                adopted += _found(adopt(record))
        refused = None
        for key in sorted(set(listed) - set(records)):
            parsed = layout.parse_key(project.prefix, key)
            if parsed.kind not in (layout.SCOPE_AGENT, layout.SCOPE_USER,
                                   layout.SCOPE_WORKSPACE):
                if refusals.name_refused(project.prefix, key):
                    if refused is None:
                        refused = refusals.present_keys(project)
                    if (key, listed[key]) not in refused:
                        refuse_name(project, key)
                continue  # not a memory file: check_isolation reports what else it is
            self.changed = True
            record = file_ensure(project=project, scope=parsed.kind,
                                 agent=agent if parsed.kind == layout.SCOPE_AGENT else None,
                                 user=user if parsed.kind == layout.SCOPE_USER else None,
                                 path=parsed.path)
            adopted += _found(adopt(record))
        if self._feed is not None:
            for prefix, mark, _future in self._listings:
                self._feed.listed(prefix, mark)
        return adopted


def bucket_catch_up_start(*, project: Project, agent: Agent, user=None, workspace: bool = True,
                          everything: bool = False) -> CatchUp:
    """Start a catch-up's LISTs (see `bucket_catch_up`) and return at once.

    Only what a runner's S3 credentials may write is listed (Project.runner_writable): the
    agent's folder if its runners may replace an agent file, the workspace if any runner of
    the project may write there; never the profiles (no runner credential writes USER.md).
    Writes with the console's own keys, or anyone else's, are out-of-band: reconcile and the
    next save's ETag check find them. With a change feed (memory.feed), a prefix is listed
    only when something changed under it since this process last listed it. `everything`
    lists all three prefixes whatever the credentials (reconcile-like callers)."""
    prefix = project.prefix
    writable = project.runner_writable or {}
    prefixes = []
    wanted = Q(scope=MemoryFile.Scope.AGENT, agent=agent)
    if everything or str(agent.pk) in writable.get("agents", []):
        prefixes.append(layout.agent_prefix(prefix, agent.pk))
    if user is not None:
        wanted |= Q(scope=MemoryFile.Scope.USER, user=user)
        if everything:
            prefixes.append(layout.user_prefix(prefix, user.pk))
    if workspace:
        wanted |= Q(scope=MemoryFile.Scope.WORKSPACE)
        if everything or writable.get("workspace"):
            prefixes.append(layout.workspace_prefix(prefix))
    return CatchUp(project, agent, user, prefixes, wanted)


def _found(revision: Revision | None) -> list[Revision]:
    return [revision] if revision is not None else []


# --- Refused writes -------------------------------------------------------------------------------


def refuse_name(project: Project, key: str) -> RefusedWrite | None:
    """Record an object whose name the console refuses (found by a catch-up or reconcile)."""
    storage = storage_for(project)
    found = storage.describe(key)
    if found is None:
        return None
    return refusals.record(storage, project=project, key=key, found=found,
                           reason=RefusedWrite.Reason.NAME)


def _put_head_back(storage: MemoryStorage, locked: MemoryFile) -> None:
    """Write the recorded head's bytes over a refused object at the file's key (conditional on
    the refused object's ETag), so the key holds the head again. Under the row lock."""
    head = locked.head
    data = _read_snapshot(storage, head)
    try:
        etag = storage.write(locked.key, data, metadata=storage.metadata(head.snapshot_key) or {},
                             if_match=locked.refused_etag, ambiguous="unknown",
                             legal_hold=bool(_holds_over(locked)))
    except PreconditionFailed:
        raise StorageUnavailable.nothing_changed() from None  # changed again: try again
    locked.head_etag = etag
    refusals.replaced(locked)
    locked.save(update_fields=["head_etag", "refused_etag"])


def refused_write_delete(*, refused: RefusedWrite, by) -> None:
    """Take a refused write out of storage (an admin's decision, audited). At a file's key the
    recorded head is written back over it (or the key emptied when the file has no content);
    a refused name is deleted. If the bucket keeps versions, the refused version is deleted
    too, so its bytes are gone. Safe to repeat."""
    project = refused.project
    storage = storage_for(project)
    with transaction.atomic():
        locked = _lock(refused.file) if refused.file_id else None
        if locked is not None and locked.refused_etag == refused.etag:
            if locked.head is not None and not locked.head.is_deletion:
                _put_head_back(storage, locked)
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
            state=RefusedWrite.State.DELETED, resolved_by=by, resolved_at=timezone.now())
        audit_record(actor=Actor.person(by), action="file.refused_delete", project=project,
                     obj=locked if locked is not None else refused,
                     details={"key": refused.key, "reason": refused.reason, "size": refused.size,
                              "written_by": refused.writer_label})
