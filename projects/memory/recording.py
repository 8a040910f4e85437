"""Recording a revision, under the file's row lock: the lock itself, the Revision row and the
head moved to it, its findings, search copy, cached text and audit event; and what the row
lock lets a write rely on (legal holds over the file, an unfinished expiry, the ETag a write
to the file's key is conditioned on)."""

from __future__ import annotations

from django.core.cache import cache
from django.utils import timezone

from projects.audit import Actor, audit_record
from projects.memory import holds, indexing, layout, lineage, refusals, scanning
from projects.memory.content import decode
from projects.memory.errors import Held
from projects.memory.objects import purge
from projects.memory.reading import cache_key, forget_cached
from projects.memory.storage import MemoryStorage
from projects.models import MemoryFile, Revision
from projects.system_text import Message


def lock_file(file: MemoryFile) -> MemoryFile:
    """Lock the file's row, then read it with its head. Two statements on purpose: when
    PostgreSQL's SELECT ... FOR UPDATE waits for another save, it re-reads the locked row but
    not the rows joined to it, so a joined head would be the old one (or none at all).

    FOR NO KEY UPDATE, the lock an UPDATE of the row takes: a save never deletes the row, so a
    pre hook's session that refers to the profile being saved commits without waiting for it
    (only an erasure, which deletes the row, locks it FOR UPDATE)."""
    rows = MemoryFile.objects.select_for_update(no_key=True).filter(pk=file.pk)
    list(rows.values_list("pk", flat=True))
    return MemoryFile.objects.select_related("head", "project", "agent", "user").get(pk=file.pk)


def refresh_head(file: MemoryFile, locked: MemoryFile) -> None:
    """The caller's record of the file follows the head its locked copy moved to."""
    file.head = locked.head
    file.head_id = locked.head_id
    file.head_etag = locked.head_etag


def record_revision(
    locked: MemoryFile,
    *,
    number: int,
    sha: str,
    size: int,
    actor: Actor,
    message: str | Message,
    snapshot_key: str,
    etag: str,
    action: str,
    is_deletion: bool = False,
    restored_from: int | None = None,
    details: dict | None = None,
    data: bytes = b"",
    expired_rule: str = "",
    renamed_from: MemoryFile | None = None,
    renamed_to: MemoryFile | None = None,
    merged_base: int | None = None,
    request_ref: str = "",
    poisoning: dict | None = None,
) -> Revision:
    """The Revision row, the head moved to it (with the ETag the key now holds), its line map
    (where each line came from: memory.lineage), findings, search copy, cached text and audit
    event. Under the row lock, in its transaction."""
    findings = [finding.as_dict() for finding in scanning.scan(decode(data))] if data else []
    if findings:
        details = {**(details or {}), "findings": scanning.summary(findings, language="en")}
    if poisoning and poisoning.get("findings"):
        families = sorted({f["family"] for f in poisoning["findings"]})
        details = {**(details or {}), "poisoning": families}
    code, params = (message.code, message.params) if isinstance(message, Message) else ("", {})
    message = str(message)
    revision = Revision.objects.create(
        file=locked,
        number=number,
        sha256=sha,
        size=size,
        author_kind=actor.kind,
        author_user=actor.user,
        author_agent=actor.agent,
        author_label=actor.label[:200],
        session_ref=actor.session_ref,
        message=message[:500],
        snapshot_key=snapshot_key,
        is_deletion=is_deletion,
        restored_from=restored_from,
        request_ref=request_ref,
        findings=findings,
        poisoning=poisoning or {},
        message_code=code,
        message_params=params,
        expired_rule=expired_rule[:300],
        renamed_from=renamed_from,
        renamed_to=renamed_to,
        merged_base=merged_base,
    )
    parent = locked.head
    locked.head = revision
    locked.head_etag = etag
    refusals.replaced(locked)  # a refused object that was at the key is gone now
    locked.save(update_fields=["head", "head_etag", "refused_etag"])
    text = decode(data) if data else ""
    lineage.record(locked, revision, text, parent=parent)
    indexing.index_revision(locked, revision, text)
    if not is_deletion:
        # The next append, pre hook or page reads this text: it is known, keep it warm. (If the
        # transaction rolls back the key names a revision that never was; nothing asks for it.)
        cache.set(cache_key(revision), text, timeout=None)
    audit_record(
        actor=actor,
        action=action,
        project=locked.project,
        obj=locked,
        details={
            "revision": number,
            "sha256": sha,
            "size": size,
            "message": message[:500],
            **(details or {}),
        },
        text=text if not is_deletion else None,
    )
    return revision


def holds_over(locked: MemoryFile) -> list:
    """The legal holds standing over the file: one cheap query, a second only if the project
    has any hold at all."""
    return holds.covering_file(locked) if holds.any_standing(locked.project) else []


def expiry_pending(locked: MemoryFile) -> bool:
    """The head is a retention expiry whose objects were not all deleted yet (the tombstone is
    committed first, with the old head's ETag, so nothing reads the leftover as new)."""
    head = locked.head
    return bool(head is not None and head.expired_rule and locked.head_etag)


def finish_expiry(storage: MemoryStorage, locked: MemoryFile) -> int:
    """Delete what an expiry left: the head object and every snapshot, every stored version of
    them; then the texts' records (search copies, findings, proposals), and the ETag goes. Under
    the row lock; safe to repeat. Returns how many objects and versions went. Held when a
    legal hold placed since the expiry began covers the file: what is left stays, and the
    expiry stays unfinished until the hold is released."""
    standing = holds_over(locked)
    if standing:
        raise Held(holds.refusal(standing))
    project = locked.project
    removed = purge(project, [layout.history_prefix(project.prefix, locked.pk)], keys=[locked.key])
    now = timezone.now()
    revisions = list(Revision.objects.filter(file=locked, is_deletion=False))
    forget_cached(revisions)
    Revision.objects.filter(pk__in=[r.pk for r in revisions], purged_at__isnull=True).update(
        purged_at=now, findings=[]
    )
    Revision.objects.filter(pk__in=[r.pk for r in revisions]).update(snapshot_key="")
    indexing.forget_file(locked)
    locked.proposals.all().delete()
    locked.head_etag = ""
    locked.save(update_fields=["head_etag"])
    return removed


def expected_etag(locked: MemoryFile) -> str:
    """The ETag a write to the file's key is conditioned on: the refused object's when one is
    there (a save replaces it), else the recorded head's; '' when the key should be empty."""
    if locked.refused_etag:
        return locked.refused_etag
    if expiry_pending(locked):  # an expiry a legal hold stopped: its old head is still there
        return locked.head_etag
    live = locked.head is not None and not locked.head.is_deletion
    return locked.head_etag if live else ""
