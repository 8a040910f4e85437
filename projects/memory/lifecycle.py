"""The end of memory's life, in the store: a file expires, old snapshots are pruned, kept
prompts go, and S3 legal holds are put on (or taken off) what a hold covers.

Each step is ordered so that stopping anywhere leaves nothing `reconcile` or the next pre hook
would misread as somebody else's change:

- an expiry first commits its `expired` revision (a tombstone that keeps the old head's ETag),
  then deletes the head object, every snapshot and every stored version, then forgets the ETag
  (recording.finish_expiry). Until then the leftover object is known as the expired head, and the
  next run (or the next save of the file) finishes the deletions. A file deleted before it
  expired has no head object: its expiry is unfinished while any of its texts is not marked
  purged (that happens after the deletions);
- a pruned revision is marked purged first, then its snapshot (every version) is deleted; a
  snapshot left behind is one a revision still names, which classify counts as known.
"""

from __future__ import annotations

import datetime as dt
from concurrent.futures import ThreadPoolExecutor

from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from projects.audit import Actor
from projects.memory import holds, indexing, layout, receipts
from projects.memory.content import sha256
from projects.memory.errors import Held
from projects.memory.objects import purge
from projects.memory.reading import forget_cached
from projects.memory.recording import (
    expiry_pending,
    finish_expiry,
    holds_over,
    lock_file,
    record_revision,
)
from projects.memory.storage import LegalHoldUnsupported, storage_for
from projects.models import AgentSession, MemoryFile, Project, Revision
from projects.system_text import Message

_POOL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="mgc-hold")


def file_expire(*, file: MemoryFile, rule: str, when: dt.datetime | None = None) -> Revision | None:
    """Expire a file under a retention rule: a final `expired` revision naming the rule and the
    date, then its head, snapshots and stored versions go (a deleted file's too: its texts are
    still in history). None if it is already expired (an unfinished expiry is finished). Held
    when a legal hold covers it."""
    when = when or timezone.now()
    storage = storage_for(file.project)
    with transaction.atomic():
        locked = lock_file(file)
        head = locked.head
        if head is None or head.expired_rule:
            if expiry_pending(locked):
                finish_expiry(storage, locked)
            return None
        standing = holds_over(locked)
        if standing:
            raise Held(holds.refusal(standing))
        revision = record_revision(
            locked,
            number=head.number + 1,
            sha=sha256(b""),
            size=0,
            actor=Actor.system("retention"),
            snapshot_key="",
            etag=locked.head_etag,
            message=Message("expired", {"rule": rule, "date": when.date().isoformat()}),
            is_deletion=True,
            action="file.expire",
            expired_rule=rule,
            details={"rule": rule, "last_change": head.created_at.isoformat()},
        )
    with transaction.atomic():
        finish_expiry(storage, lock_file(file))
    return revision


def expiry_unfinished(project: Project) -> list[MemoryFile]:
    """Files whose expiry was stopped before its deletions ended: the old head's ETag is still
    kept, or (a file deleted before it expired has no head object) texts are not yet purged."""
    unpurged = Revision.objects.filter(file=OuterRef("pk"), is_deletion=False, purged_at__isnull=True)
    return list(
        MemoryFile.objects.filter(project=project, head__is_deletion=True)
        .exclude(head__expired_rule="")
        .filter(~Q(head_etag="") | Exists(unpurged))
        .select_related("head", "project")
    )


def expiry_finish(file: MemoryFile) -> int:
    storage = storage_for(file.project)
    with transaction.atomic():
        locked = lock_file(file)
        head = locked.head
        return finish_expiry(storage, locked) if head and head.expired_rule else 0


def revisions_purge(*, file: MemoryFile, numbers: list[int]) -> int:
    """Delete the stored texts of these revisions of a file (never its head): each is marked
    purged, its snapshot and every stored version of it deleted, its search copy and findings
    dropped. The rows stay, so history keeps who changed what and when. Returns how many were
    purged. Held when a legal hold covers the file."""
    with transaction.atomic():
        locked = lock_file(file)
        standing = holds_over(locked)
        if standing:
            raise Held(holds.refusal(standing))
        doomed = list(
            Revision.objects.filter(
                file=locked, number__in=numbers, is_deletion=False, purged_at__isnull=True
            ).exclude(pk=locked.head_id)
        )
        Revision.objects.filter(pk__in=[r.pk for r in doomed]).update(purged_at=timezone.now(), findings=[])
        indexing.forget_revisions(locked, [r.number for r in doomed])
    forget_cached(doomed)
    snapshots_delete(file.project, [r for r in doomed if r.snapshot_key])
    return len(doomed)


def snapshots_delete(project: Project, revisions: list[Revision]) -> int:
    """Delete the snapshots (every stored version) of purged revisions, then forget their keys:
    a purged revision that still names a key is one whose deletion has not finished. Safe to
    repeat."""
    if not revisions:
        return 0
    removed = purge(project, [], keys=[r.snapshot_key for r in revisions])
    Revision.objects.filter(pk__in=[r.pk for r in revisions]).update(snapshot_key="")
    return removed


def purged_leftovers(project: Project) -> list[Revision]:
    """Purged revisions whose snapshots a stopped run did not delete yet."""
    return list(
        Revision.objects.filter(file__project=project, purged_at__isnull=False)
        .exclude(snapshot_key="")
        .only("pk", "snapshot_key")
    )


def prompts_purge(*, project: Project, sha256s: list[str], removed: dict) -> int:
    """Delete kept prompts (every stored version) and say on their sessions why they are gone
    (`removed`: {how, at, rule or by and reason}), so a session page reads "expired" or
    "erased", not as a receipt that fails its check."""
    if not sha256s:
        return 0
    count = purge(project, [], keys=[layout.prompt_key(project.prefix, sha) for sha in sha256s])
    receipts.prompt_forget(project=project, sha256s=sha256s)
    AgentSession.objects.filter(agent__project=project, prompt_sha256__in=sha256s).update(
        prompt_stored=False, prompt_removed=removed
    )
    return count


# --- S3 legal holds -----------------------------------------------------------------------------


def hold_sweep(project: Project, prefixes: list[str], *, on: bool, keep=None) -> int:
    """Put an S3 legal hold on (or take it off) every stored version under the prefixes (a
    prefix may be a whole key). `keep(key)` true leaves a version held when lifting (another
    hold still covers it). An object written before the bucket kept versions has only the
    version "null", which SeaweedFS lets be deleted even when held: it is written again as a
    held version (same bytes and metadata) and the unprotected copy deleted. Returns how many
    versions were changed. LegalHoldUnsupported when the bucket has no Object Lock."""
    storage = storage_for(project)
    if on and not storage.object_lock_enabled():
        raise LegalHoldUnsupported(storage.bucket_name)
    versions = [v for p in prefixes for v in storage.versions(p) if "ETag" in v]  # no markers
    if on and any(v["VersionId"] in (None, "null") for v in versions):
        for version in [v for v in versions if v["VersionId"] in (None, "null")]:
            _rewrite_held(storage, version["Key"])
        versions = [v for p in prefixes for v in storage.versions(p) if "ETag" in v]
    versions = [v for v in versions if v["VersionId"] not in (None, "null")]
    targets = [v for v in versions if not (keep and keep(v["Key"]))]
    list(_POOL.map(lambda v: storage.set_legal_hold(v["Key"], v["VersionId"], on), targets))
    return len(targets)


def _rewrite_held(storage, key: str) -> None:
    found = storage.read(key)
    if found is None:
        return
    storage.write(key, found.body, metadata=found.metadata, legal_hold=True)
    storage.remove(key, "null")
