"""Reading memory: a file's head (one GET when S3 holds what the console last wrote) and the
text of any revision, cached (snapshots never change), several fetched in parallel."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from django.core.cache import cache
from django.utils.translation import gettext as _

from projects.memory.content import decode
from projects.memory.errors import RevisionExpired, StorageUnavailable
from projects.memory.storage import MemoryStorage, storage_for
from projects.models import MemoryFile, Project, Revision

# Threads that only talk to S3, never to the database: the parallel reads here and the
# catch-up's shared LISTs (memory/catchup.py).
POOL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="mgc-s3")


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
    data = read_snapshot(storage, head)
    return FileContent(file=file, revision=head, text=decode(data), drifted=not file.refused_etag)


def read_snapshot(storage: MemoryStorage, revision: Revision) -> bytes:
    if revision.purged_at is not None:
        raise RevisionExpired(
            _(
                "The text of revision %(number)s was deleted on %(date)s under a retention rule; "
                "its record stays."
            )
            % {"number": revision.number, "date": revision.purged_at.date().isoformat()}
        )
    found = storage.body(revision.snapshot_key)
    if found is None:
        raise StorageUnavailable(
            _(
                "The stored copy of revision %(number)s is missing from storage (%(key)s). "
                "Run `manage.py reconcile` and check the bucket."
            )
            % {"number": revision.number, "key": revision.snapshot_key}
        )
    return found


def cache_key(revision: Revision) -> str:
    # Snapshots are immutable: a revision's text can be cached for as long as it is kept.
    return f"mgc:rev:{revision.file_id}:{revision.number}:{revision.sha256[:16]}"


def revision_read(revision: Revision) -> str:
    """The text of any revision ('' for a deletion)."""
    return revision_texts(revision.file.project, [revision])[revision.pk]


def revision_texts(project: Project, revisions: list[Revision]) -> dict[int, str]:
    """Texts of several revisions of one project: from the cache, the rest fetched from S3 in
    parallel (the threads only talk to S3, never to the database)."""
    return revision_texts_start(project, revisions)()


def revision_texts_start(project: Project, revisions: list[Revision]) -> Callable[[], dict[int, str]]:
    """`revision_texts` in two steps: the GETs are sent now, and the function returned waits
    for them, so the caller can query the database while they are in flight."""
    texts = {r.pk: "" for r in revisions if r.is_deletion}
    live = [r for r in revisions if not r.is_deletion]
    keys = {r.pk: cache_key(r) for r in live}
    cached = cache.get_many(list(keys.values())) if keys else {}
    missing = []
    for revision in live:
        if keys[revision.pk] in cached:
            texts[revision.pk] = cached[keys[revision.pk]]
        else:
            missing.append(revision)
    if not missing:
        return lambda: texts
    storage = storage_for(project)
    read = lambda r: decode(read_snapshot(storage, r))  # noqa: E731
    futures = [POOL.submit(read, r) for r in missing]

    def finish() -> dict[int, str]:
        try:
            for revision, future in zip(missing, futures, strict=True):
                texts[revision.pk] = future.result()
        finally:
            for future in futures:  # a failure leaves no GET behind for a later caller's time
                future.cancel()
        cache.set_many({keys[r.pk]: texts[r.pk] for r in missing}, timeout=None)
        return texts

    return finish


def forget_cached(revisions: list[Revision]) -> None:
    cache.delete_many([cache_key(r) for r in revisions])
