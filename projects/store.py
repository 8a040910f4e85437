"""Memory files in S3: read the head, save, history, restore, delete, reconcile.

The order of a save is what keeps every head readable whatever fails:

1. under a row lock on the MemoryFile, check the base revision is still the head;
2. write the immutable snapshot `_history/<file_id>/<n>-<sha256>.md` (with who/why metadata);
3. write the head object conditionally: IfMatch the head's known ETag, or IfNoneMatch='*'
   for a new (or deleted) file. A 412 means someone wrote to the bucket directly: that
   content is recorded as an `external` revision and the caller gets a conflict;
4. insert the Revision row, move the head, append the AuditEvent, commit.

A failure before 3 leaves an orphan snapshot (reconcile deletes it). A failure after 3 but
before the commit leaves a head object the database does not know: reads keep serving the
old head's snapshot (the GET is conditional on the known ETag), and reconcile, or the next
save, adopts it as the revision it was meant to be, using the snapshot's metadata.
"""

from __future__ import annotations

import hashlib
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from urllib.parse import quote, unquote

from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.core.files.storage import storages
from django.core.paginator import Page, Paginator
from django.core.signals import setting_changed
from django.db import transaction
from django.db.models import Q
from django.dispatch import receiver
from django.utils import timezone
from django.utils.formats import number_format
from django.utils.translation import gettext as _

from projects import layout, provenance, scanning
from projects.audit import Actor, audit_record
from projects.models import Agent, MemoryFile, Project, Revision, SearchText
from projects.storage import MARKDOWN_CONTENT_TYPE, MemoryStorage

logger = logging.getLogger(__name__)

HISTORY_PAGE_SIZE = 50
_POOL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="mgc-s3")


# --- Errors ------------------------------------------------------------------------------------


class StoreError(Exception):
    """Base of the store's errors; `code` is stable, `message` is for people."""

    code = "store_error"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class ContentRejected(StoreError):
    code = "content_rejected"


class StorageUnavailable(StoreError):
    code = "storage_unavailable"


class FileDeleted(StoreError):
    code = "file_deleted"


class SaveConflict(StoreError):
    """The file moved on since the caller's base; carries both texts so nothing is lost."""

    code = "conflict"

    def __init__(self, *, reason: str, head: Revision | None, head_text: str, your_text: str,
                 base_revision: int | None):
        if reason == "external_change":
            summary = _("The file was changed directly in storage since you opened it; that "
                        "change is now revision %(number)s.") % {"number": head.number if head else "-"}
        else:
            summary = _("The file changed since you opened it (you started from revision "
                        "%(base)s, the latest is %(head)s).") % {
                "base": base_revision if base_revision is not None else _("none"),
                "head": head.number if head else _("none")}
        super().__init__(_("%(summary)s Your text is kept below.") % {"summary": summary})
        self.summary = summary  # without the editor's note, for callers that keep no text
        self.reason = reason
        self.head = head
        self.head_text = head_text
        self.your_text = your_text
        self.base_revision = base_revision


# --- Content -----------------------------------------------------------------------------------


def _encode(content: str | bytes) -> bytes:
    """UTF-8 bytes of a memory file's text, or ContentRejected saying why not."""
    if isinstance(content, bytes):
        if b"\x00" in content:
            raise ContentRejected(_("The content contains NUL bytes: it looks like a binary file, "
                                    "and memory files are Markdown text."))
        try:
            content.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ContentRejected(
                _("The content is not UTF-8 text (invalid byte at position %(position)s). "
                  "Memory files are UTF-8 Markdown.") % {"position": exc.start}
            ) from None
        data = content
    elif isinstance(content, str):
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError:
            raise ContentRejected(_("The content contains characters that are not valid text.")) from None
    else:
        raise ContentRejected(_("The content must be text."))
    if b"\x00" in data:
        raise ContentRejected(_("The content contains NUL bytes: it looks like a binary file, "
                                "and memory files are Markdown text."))
    limit = settings.MGC_MAX_FILE_BYTES
    if len(data) > limit:
        raise ContentRejected(
            _("The content is %(size)s bytes; the limit is %(limit)s bytes (%(kib)s KiB). "
              "Split it into smaller files.") % {
                "size": number_format(len(data), force_grouping=True),
                "limit": number_format(limit, force_grouping=True), "kib": limit // 1024}
        )
    return data


encode_content = _encode  # public name for callers that check content before storing it


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _decode(data: bytes) -> str:
    # Content the console wrote is valid UTF-8; an external write may not be. Show it anyway.
    return data.decode("utf-8", errors="replace")


# --- S3 access -----------------------------------------------------------------------------------

_bucket_storages: dict[str, MemoryStorage] = {}


@receiver(setting_changed)
def _forget_storages(*, setting, **kwargs):
    if setting in {"STORAGES", "MGC_S3_OPTIONS"}:
        _bucket_storages.clear()


def storage_for(project: Project) -> MemoryStorage:
    """The storage holding a project's memory: the console's, or the project's own bucket."""
    default = storages["memory"]
    if not project.bucket or project.bucket == default.bucket_name:
        return default
    storage = _bucket_storages.get(project.bucket)
    if storage is None:
        options = dict(settings.STORAGES["memory"].get("OPTIONS", {}), bucket_name=project.bucket)
        storage = _bucket_storages[project.bucket] = MemoryStorage(**options)
    return storage


def _error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _status(exc: ClientError) -> int:
    return int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)


def _is_precondition_failed(exc: ClientError) -> bool:
    return _status(exc) in (409, 412) or _error_code(exc) in {
        "PreconditionFailed", "ConditionalRequestConflict"}


def _is_missing(exc: ClientError) -> bool:
    return _status(exc) == 404 or _error_code(exc) in {"NoSuchKey", "404", "NotFound"}


def _unavailable(exc: Exception) -> StorageUnavailable:
    logger.warning("S3 request failed: %s", exc)
    return StorageUnavailable(
        _("The memory storage (S3) did not answer properly, so nothing was changed. "
          "Try again in a moment; your text is kept.")
    )


def _get(storage: MemoryStorage, key: str, if_match: str = "") -> tuple[bytes, str] | None:
    """(body, etag) of an object, None if it is missing (or no longer has ETag if_match)."""
    found = _get_object(storage, key, if_match)
    return (found[0], found[1]) if found else None


def _get_object(storage: MemoryStorage, key: str, if_match: str = ""
                ) -> tuple[bytes, str, dict[str, str]] | None:
    """(body, etag, metadata) of an object, None if it is missing (or no longer if_match)."""
    params = {"Bucket": storage.bucket_name, "Key": key}
    if if_match:
        params["IfMatch"] = if_match
    try:
        response = storage.client.get_object(**params)
        return response["Body"].read(), response["ETag"], response.get("Metadata", {})
    except ClientError as exc:
        if _is_missing(exc) or (if_match and _is_precondition_failed(exc)):
            return None
        raise _unavailable(exc) from exc
    except BotoCoreError as exc:
        raise _unavailable(exc) from exc


def _head_metadata(storage: MemoryStorage, key: str) -> dict[str, str] | None:
    try:
        response = storage.client.head_object(Bucket=storage.bucket_name, Key=key)
        return response.get("Metadata", {})
    except ClientError as exc:
        if _is_missing(exc):
            return None
        raise _unavailable(exc) from exc
    except BotoCoreError as exc:
        raise _unavailable(exc) from exc


def _put(storage: MemoryStorage, key: str, data: bytes, *, metadata: dict | None = None,
         if_match: str = "", if_none_match: bool = False) -> str:
    """Write an object; return its new ETag. ClientError 412 is left for the caller."""
    params = {"Bucket": storage.bucket_name, "Key": key, "Body": data,
              "ContentType": MARKDOWN_CONTENT_TYPE}
    if metadata:
        params["Metadata"] = metadata
    if if_match:
        params["IfMatch"] = if_match
    elif if_none_match:
        params["IfNoneMatch"] = "*"
    try:
        return storage.client.put_object(**params)["ETag"]
    except ClientError as exc:
        if _is_precondition_failed(exc):
            raise
        raise _unavailable(exc) from exc
    except BotoCoreError as exc:
        raise _unavailable(exc) from exc


def _delete(storage: MemoryStorage, key: str) -> None:
    try:
        storage.client.delete_object(Bucket=storage.bucket_name, Key=key)
    except (ClientError, BotoCoreError) as exc:
        raise _unavailable(exc) from exc


def _list_objects(storage: MemoryStorage, prefix: str) -> list[dict]:
    """Every object under a prefix: dicts with Key, LastModified, ETag, Size."""
    objects: list[dict] = []
    try:
        paginator = storage.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=storage.bucket_name, Prefix=prefix):
            objects.extend(page.get("Contents", []))
    except (ClientError, BotoCoreError) as exc:
        raise _unavailable(exc) from exc
    return objects


list_objects = _list_objects  # public name for the isolation check


def object_read(project: Project, key: str) -> bytes | None:
    """An object as it stands in the bucket now (None if missing), for export."""
    found = _get(storage_for(project), key)
    return found[0] if found else None


def purge(project: Project, prefixes: list[str]) -> int:
    """Delete every object under the prefixes, and every old version and delete marker if the
    bucket keeps versions: for erasure, where nothing may stay behind. Returns how many."""
    storage = storage_for(project)
    client, bucket = storage.client, storage.bucket_name
    removed = 0
    try:
        for prefix in prefixes:
            for obj in _list_objects(storage, prefix):
                client.delete_object(Bucket=bucket, Key=obj["Key"])
                removed += 1
            pages = client.get_paginator("list_object_versions").paginate(Bucket=bucket,
                                                                           Prefix=prefix)
            for page in pages:
                for version in page.get("Versions", []) + page.get("DeleteMarkers", []):
                    if version.get("VersionId") in (None, "null"):
                        continue  # unversioned objects went with delete_object above
                    client.delete_object(Bucket=bucket, Key=version["Key"],
                                         VersionId=version["VersionId"])
                    removed += 1
    except (ClientError, BotoCoreError) as exc:
        raise _unavailable(exc) from exc
    return removed


def forget_cached(revisions: list[Revision]) -> None:
    cache.delete_many([_cache_key(r) for r in revisions])


# Snapshot metadata says who wrote a revision, so a half-done save can be finished faithfully.
def _snapshot_metadata(actor: Actor, message: str, base: int | None, restored_from: int | None,
                       ) -> dict[str, str]:
    meta = {
        "mgc-author-kind": actor.kind,
        "mgc-author-label": quote(actor.label),
        "mgc-message": quote(message[:500]),
        "mgc-base": "" if base is None else str(base),
    }
    if actor.user is not None:
        meta["mgc-author-user"] = str(actor.user.pk)
    if actor.agent is not None:
        meta["mgc-author-agent"] = str(actor.agent.pk)
    if actor.session_ref:
        meta["mgc-session"] = actor.session_ref
    if restored_from is not None:
        meta["mgc-restored-from"] = str(restored_from)
    return meta


def _actor_from_metadata(meta: dict[str, str]) -> Actor:
    kind = meta.get("mgc-author-kind", Revision.AuthorKind.EXTERNAL)
    if kind == Revision.AuthorKind.PERSON and meta.get("mgc-author-user", "").isdigit():
        user = get_user_model().objects.filter(pk=int(meta["mgc-author-user"])).first()
        if user is not None:
            return Actor.person(user)
    if kind == Revision.AuthorKind.AGENT and meta.get("mgc-author-agent"):
        agent = Agent.objects.filter(pk=meta["mgc-author-agent"]).first()
        if agent is not None:
            return Actor.for_agent(agent, meta.get("mgc-session", ""))
    if kind == Revision.AuthorKind.SYSTEM:
        return Actor.system(unquote(meta.get("mgc-author-label", "")).removeprefix("system:"))
    agent = Agent.objects.filter(pk=meta["mgc-author-agent"]).first() \
        if meta.get("mgc-author-agent") else None
    return Actor.external(agent, meta.get("mgc-session", "") if agent else "")


# --- Reads ---------------------------------------------------------------------------------------


@dataclass
class FileContent:
    file: MemoryFile
    revision: Revision | None
    text: str
    # True when the object in S3 is not the head the console recorded (a direct write, or a
    # half-done save): the text shown is the recorded head's snapshot, reconcile will adopt.
    drifted: bool = False
    size: int = 0
    warnings: list[str] = field(default_factory=list)


def file_read(file: MemoryFile) -> FileContent:
    """The head revision's text. One GET when S3 holds what the console last wrote."""
    head = file.head
    if head is None or head.is_deletion:
        return FileContent(file=file, revision=head, text="")
    storage = storage_for(file.project)
    found = _get(storage, file.key, if_match=file.head_etag) if file.head_etag else None
    if found is not None:
        data = found[0]
        return FileContent(file=file, revision=head, text=_decode(data), size=len(data))
    data = _read_snapshot(storage, head)
    return FileContent(file=file, revision=head, text=_decode(data), drifted=True, size=len(data))


def _read_snapshot(storage: MemoryStorage, revision: Revision) -> bytes:
    found = _get(storage, revision.snapshot_key)
    if found is None:
        raise StorageUnavailable(
            _("The stored copy of revision %(number)s is missing from storage (%(key)s). "
              "Run `manage.py reconcile` and check the bucket.")
            % {"number": revision.number, "key": revision.snapshot_key}
        )
    return found[0]


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
        read = lambda r: _decode(_read_snapshot(storage, r))  # noqa: E731
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
                 .select_related("author_user", "author_agent").order_by("-number"))
    total = file.head.number if file.head_id else 0
    return _RevisionPaginator(revisions, per_page, total).get_page(page)


def file_lookup(*, project: Project, scope: str, agent: Agent | None = None, user=None,
                path: str) -> MemoryFile | None:
    key = layout.file_key(project.prefix, scope, agent_id=agent.pk if agent else None,
                          user_id=user.pk if user else None, path=path)
    return (MemoryFile.objects.select_related("head", "project", "agent", "user")
            .filter(project=project, key=key).first())


# --- Writes --------------------------------------------------------------------------------------


class _HeadChanged(Exception):
    """The conditional head write found another object than the one the console wrote."""


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


def file_save(*, file: MemoryFile, content: str | bytes, actor: Actor, message: str = "",
              base_revision: int | None, restored_from: int | None = None) -> Revision:
    """Save new content on top of base_revision; SaveConflict if the file moved on."""
    data = _encode(content)
    sha = _sha256(data)
    storage = storage_for(file.project)
    conflict_reason = ""
    with transaction.atomic():
        locked = _lock(file)
        head = locked.head
        head_number = head.number if head else None
        if base_revision != head_number:
            conflict_reason = "stale_base"
        else:
            try:
                revision = _write_revision(storage, locked, data, sha, actor=actor,
                                           message=message, restored_from=restored_from)
            except _HeadChanged:
                _adopt_s3_state(storage, locked)
                conflict_reason = "external_change"
    if conflict_reason:
        raise _conflict(storage, file, conflict_reason, data, base_revision)
    _refresh(file, locked)
    return revision


def file_restore(*, file: MemoryFile, number: int, actor: Actor, message: str = "",
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
                     message=message or f"Restore revision {number}",
                     base_revision=base_revision, restored_from=number)


def file_delete(*, file: MemoryFile, actor: Actor, message: str = "",
                base_revision: int | None) -> Revision:
    """Delete the head object and record a tombstone revision; history stays."""
    storage = storage_for(file.project)
    conflict_reason = ""
    with transaction.atomic():
        locked = _lock(file)
        head = locked.head
        if head is None or head.is_deletion:
            raise FileDeleted(_("The file is already deleted."))
        if base_revision != head.number:
            conflict_reason = "stale_base"
        elif _adopt_s3_state(storage, locked) is not None:
            conflict_reason = "external_change"
        else:
            _delete(storage, locked.key)
            revision = _record(locked, number=head.number + 1, sha=_sha256(b""), size=0,
                               actor=actor, message=message, snapshot_key="", etag="",
                               is_deletion=True, action="file.delete")
    if conflict_reason:
        raise _conflict(storage, file, conflict_reason, b"", base_revision)
    _refresh(file, locked)
    return revision


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
    head_text = "" if head is None or head.is_deletion else _decode(_read_snapshot(storage, head))
    return SaveConflict(reason=reason, head=head, head_text=head_text, your_text=_decode(data),
                        base_revision=base_revision)


def _write_revision(storage: MemoryStorage, locked: MemoryFile, data: bytes, sha: str, *,
                    actor: Actor, message: str, restored_from: int | None) -> Revision:
    head = locked.head
    number = head.number + 1 if head else 1
    prefix = locked.project.prefix
    snap = layout.snapshot_key(prefix, locked.pk, number, sha)
    metadata = _snapshot_metadata(actor, message, head.number if head else None, restored_from)
    try:
        _put(storage, snap, data, metadata=metadata)
    except ClientError as exc:  # a precondition on an unconditional put: storage misbehaves
        raise _unavailable(exc) from exc
    creating = head is None or head.is_deletion
    try:
        etag = _put(storage, locked.key, data, if_none_match=creating,
                    if_match="" if creating else locked.head_etag)
    except ClientError:
        _delete_quietly(storage, snap)
        raise _HeadChanged() from None
    return _record(locked, number=number, sha=sha, size=len(data), actor=actor, message=message,
                   snapshot_key=snap, etag=etag, restored_from=restored_from,
                   action="file.restore" if restored_from else "file.save", data=data)


def _delete_quietly(storage: MemoryStorage, key: str) -> None:
    try:
        _delete(storage, key)
    except StorageUnavailable:
        pass  # an orphan snapshot is harmless; reconcile removes it


def _record(locked: MemoryFile, *, number: int, sha: str, size: int, actor: Actor, message: str,
            snapshot_key: str, etag: str, action: str, is_deletion: bool = False,
            restored_from: int | None = None, details: dict | None = None,
            data: bytes = b"") -> Revision:
    findings = [finding.as_dict() for finding in scanning.scan(_decode(data))] if data else []
    if findings:
        details = {**(details or {}), "findings": scanning.summary(findings, language="en")}
    revision = Revision.objects.create(
        file=locked, number=number, sha256=sha, size=size, author_kind=actor.kind,
        author_user=actor.user, author_agent=actor.agent, author_label=actor.label[:200],
        session_ref=actor.session_ref, message=message[:500], snapshot_key=snapshot_key,
        is_deletion=is_deletion, restored_from=restored_from, findings=findings,
    )
    locked.head = revision
    locked.head_etag = etag
    locked.save(update_fields=["head", "head_etag"])
    _index_for_search(locked, revision, data)
    audit_record(actor=actor, action=action, project=locked.project, obj=locked,
                 details={"revision": number, "sha256": sha, "size": size,
                          "message": message[:500], **(details or {})})
    return revision


def _index_for_search(file: MemoryFile, revision: Revision, data: bytes) -> None:
    """Keep the search copy in step with the head, in the save's transaction."""
    SearchText.objects.filter(file=file, is_head=True).update(is_head=False)
    if not revision.is_deletion:
        SearchText.objects.create(file=file, number=revision.number, text=_decode(data),
                                  created_at=revision.created_at)


def index_file(file: MemoryFile) -> bool:
    """(Re)build the search copy of a file's head from S3; for files saved before search
    existed. True if it wrote one."""
    head = file.head
    if head is None or head.is_deletion:
        return False
    text = revision_read(head)
    with transaction.atomic():
        SearchText.objects.filter(file=file).update(is_head=False)
        SearchText.objects.update_or_create(file=file, number=head.number, defaults={
            "is_head": True, "text": text, "created_at": head.created_at})
    return True


def _adopt_s3_state(storage: MemoryStorage, locked: MemoryFile) -> Revision | None:
    """Record what S3 holds at the file's key if it is not the recorded head.

    A snapshot `<head+1>-<sha>` carrying the console's metadata means a save of ours wrote
    the head object but never committed: finish it as its author's revision. Anything else is
    an external write (or deletion) and is recorded as such. Call with the row locked.
    """
    head = locked.head
    head_live = head is not None and not head.is_deletion
    found = _get_object(storage, locked.key)
    if found is None:
        if not head_live:
            return None
        return _record(locked, number=head.number + 1, sha=_sha256(b""), size=0,
                       actor=Actor.external(), message="Deleted directly in storage",
                       snapshot_key="", etag="", is_deletion=True, action="file.external_delete")
    data, etag, object_metadata = found
    if head_live and etag == locked.head_etag:
        return None
    number = head.number + 1 if head else 1
    sha = _sha256(data)
    snap = layout.snapshot_key(locked.project.prefix, locked.pk, number, sha)
    metadata = _head_metadata(storage, snap)
    details = {}
    if metadata and metadata.get("mgc-base", "") == (str(head.number) if head else ""):
        actor = _actor_from_metadata(metadata)
        message = unquote(metadata.get("mgc-message", ""))
        restored = metadata.get("mgc-restored-from", "")
        restored_from = int(restored) if restored.isdigit() else None
        action = "file.save_recovered"
    else:
        # Written past the console: a runner's direct sandbox (attributed when its proof
        # checks out, see projects.provenance) or anyone else with bucket access.
        claim = provenance.verified_writer(project_id=locked.project_id, key=locked.key,
                                           data=data, metadata=object_metadata)
        actor = Actor.external(claim.agent, claim.session) if claim else Actor.external()
        message, restored_from = "Changed directly in storage", None
        action = "file.external_change"
        try:
            _put(storage, snap, data, metadata=_snapshot_metadata(actor, message, None, None))
        except ClientError as exc:
            raise _unavailable(exc) from exc
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            details["not_utf8"] = True
    return _record(locked, number=number, sha=sha, size=len(data), actor=actor, message=message,
                   snapshot_key=snap, etag=etag, restored_from=restored_from, action=action,
                   details=details, data=data)


# --- Catching up with the bucket --------------------------------------------------------------


def bucket_catch_up(*, project: Project, agent: Agent, user=None, workspace: bool = True
                    ) -> list[Revision]:
    """Adopt what the bucket holds under the prefixes a prompt draws from (the agent's files,
    the user's profile, the workspace), so the pre hook injects it and its receipt names it.

    One LIST per prefix, in parallel, compared with the ETags the console recorded; only the
    files that differ are read and recorded, under their row lock (a save still running is
    waited for, then seen as what it is). New workspace files get a record first. Changes a
    runner proved it wrote are attributed to it (see projects.provenance), others are
    `external`. Returns the revisions it recorded."""
    storage = storage_for(project)
    prefix = project.prefix
    prefixes = [layout.agent_prefix(prefix, agent.pk)]
    wanted = Q(scope=MemoryFile.Scope.AGENT, agent=agent)
    if user is not None:
        prefixes.append(layout.user_prefix(prefix, user.pk))
        wanted |= Q(scope=MemoryFile.Scope.USER, user=user)
    if workspace:
        prefixes.append(layout.workspace_prefix(prefix))
        wanted |= Q(scope=MemoryFile.Scope.WORKSPACE)
    listings = list(_POOL.map(lambda p: _list_objects(storage, p), prefixes))
    listed = {obj["Key"]: obj["ETag"] for objects in listings for obj in objects}
    records = {f.key: f for f in MemoryFile.objects.filter(wanted, project=project)
               .select_related("head", "project")}
    adopted: list[Revision] = []
    for key, record in records.items():
        live = record.head is not None and not record.head.is_deletion
        if (key in listed and (not live or listed[key] != record.head_etag)) or \
                (key not in listed and live):
            adopted += _adopt_locked(storage, record)
    for key in sorted(set(listed) - set(records)):
        parsed = layout.parse_key(prefix, key)
        if parsed.kind not in (layout.SCOPE_AGENT, layout.SCOPE_USER, layout.SCOPE_WORKSPACE):
            continue  # not a memory file (e.g. a non-.md object): check_isolation reports it
        record = file_ensure(project=project, scope=parsed.kind,
                             agent=agent if parsed.kind == layout.SCOPE_AGENT else None,
                             user=user if parsed.kind == layout.SCOPE_USER else None,
                             path=parsed.path)
        adopted += _adopt_locked(storage, record)
    return adopted


def _adopt_locked(storage: MemoryStorage, record: MemoryFile) -> list[Revision]:
    with transaction.atomic():
        revision = _adopt_s3_state(storage, _lock(record))
    return [revision] if revision is not None else []


# --- Reconcile -----------------------------------------------------------------------------------


@dataclass
class Finding:
    kind: str  # adopted | orphan_snapshot | untracked_adopted | outside_layout
    key: str
    detail: str = ""


def reconcile(*, project: Project, orphan_grace_seconds: int = 600) -> list[Finding]:
    """Repair half-done saves and record external changes for one project.

    - each file whose head object differs from the recorded head gets the revision it needs
      (its author's, from the snapshot metadata, or `external`);
    - snapshots no revision points to (a save that failed after step 2) are deleted once
      older than orphan_grace_seconds (a younger one may belong to a save still running);
    - agent, user and workspace objects with no record (written by a sandbox, say) are
      adopted as new files when their owner exists; other keys are reported, not touched.
    """
    storage = storage_for(project)
    findings: list[Finding] = []
    files = {f.pk: f for f in MemoryFile.objects.filter(project=project).select_related("head")}
    for file in files.values():
        with transaction.atomic():
            locked = _lock(file)
            revision = _adopt_s3_state(storage, locked)
        if revision is not None:
            findings.append(Finding("adopted", file.key,
                                    f"revision {revision.number} by {revision.author_label}"))
    known_snapshots = set(
        Revision.objects.filter(file__project=project).exclude(snapshot_key="")
        .values_list("snapshot_key", flat=True))
    known_keys = {f.key for f in files.values()}
    prefix = project.prefix
    agents = set(Agent.objects.filter(project=project).values_list("pk", flat=True))
    members = set(project.memberships.values_list("user_id", flat=True))
    now = timezone.now()
    for obj in _list_objects(storage, prefix):
        key = obj["Key"]
        parsed = layout.parse_key(prefix, key)
        if parsed.kind == "history":
            if key not in known_snapshots:
                age = (now - obj["LastModified"]).total_seconds()
                if age >= orphan_grace_seconds:
                    _delete_quietly(storage, key)
                    findings.append(Finding("orphan_snapshot", key, "deleted: no revision uses it"))
                else:
                    findings.append(Finding("orphan_snapshot", key, "recent, left for now"))
        elif parsed.kind in (layout.SCOPE_AGENT, layout.SCOPE_USER, layout.SCOPE_WORKSPACE):
            if key in known_keys:
                continue
            owner_ok = (parsed.kind == layout.SCOPE_WORKSPACE
                        or (parsed.kind == layout.SCOPE_AGENT and parsed.agent_id in agents)
                        or (parsed.kind == layout.SCOPE_USER and parsed.user_id in members))
            if not owner_ok:
                findings.append(Finding("outside_layout", key, "no agent or member owns it"))
                continue
            findings.append(Finding("untracked_adopted", key, "new file written to storage"))
            record = file_ensure(
                project=project, scope=parsed.kind,
                agent=Agent.objects.get(pk=parsed.agent_id) if parsed.agent_id else None,
                user=get_user_model().objects.get(pk=parsed.user_id) if parsed.user_id else None,
                path=parsed.path,
            )
            with transaction.atomic():
                _adopt_s3_state(storage, _lock(record))
        elif parsed.kind is None:
            findings.append(Finding("outside_layout", key, "not a key the layout builds"))
    return findings
