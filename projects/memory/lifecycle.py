"""The end of memory's life, in the store: a file expires, old snapshots are pruned, kept
prompts go. Each refuses, or leaves out, what a standing legal hold covers (memory.holds), and
checks it again where the deletion is done, since a hold may be placed in between. (S3 legal
holds on versions: memory.holding.)

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

A hold placed after an expiry or a pruning began stops what is left of it: the leftovers stay
(the expiry stays unfinished, the snapshots named) until the hold is released.
"""

from __future__ import annotations

import datetime as dt

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
from projects.memory.storage import storage_for
from projects.models import AgentSession, MemoryFile, Project, Revision
from projects.system_text import Message


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
    """Purged revisions whose snapshots a stopped run did not delete yet (those of files a
    legal hold covers now stay until it is released)."""
    found = list(
        Revision.objects.filter(file__project=project, purged_at__isnull=False)
        .exclude(snapshot_key="")
        .only("pk", "snapshot_key", "file_id")
    )
    if found and holds.any_standing(project):
        files = MemoryFile.objects.filter(pk__in={r.file_id for r in found}).select_related("project")
        held = {f.pk for f in files if holds.covering_file(f)}
        found = [r for r in found if r.file_id not in held]
    return found


def prompts_purge(*, project: Project, sha256s: list[str], removed: dict) -> list[str]:
    """Delete kept prompts (every stored version) and say on their sessions why they are gone
    (`removed`: {how, at, rule or by and reason}), so a session page reads "expired" or
    "erased", not as a receipt that fails its check. A prompt a legal hold covers now (the
    project's, or a person's whose session got it) is left. Returns the sha256s purged."""
    sha256s = sorted(set(sha256s) - held_prompts(project, sha256s))
    if not sha256s:
        return []
    receipts.pending_drop(project=project, sha256s=sha256s)  # one on its way to S3: waited for
    purge(project, [], keys=[layout.prompt_key(project.prefix, sha) for sha in sha256s])
    receipts.prompt_forget(project=project, sha256s=sha256s)
    AgentSession.objects.filter(agent__project=project, prompt_sha256__in=sha256s).update(
        prompt_stored=False, prompt_removed=removed
    )
    return sha256s


def held_prompts(project: Project, sha256s: list[str]) -> set[str]:
    """Which of these kept prompts a standing hold covers."""
    whole, people = holds.covering_sessions(project)
    if whole:
        return set(sha256s)
    if not people:
        return set()
    return set(
        AgentSession.objects.filter(
            agent__project=project, user_id__in=people, prompt_sha256__in=list(sha256s)
        ).values_list("prompt_sha256", flat=True)
    )
