"""The transactional outbox: the events a change sends, written in the change's own transaction.

`audit_record` calls `emit_audit` for every audit event it appends, so whatever the console
audits reaches the subscriptions that asked for it (webhooks by event type, audit streams
every event); changes that are not audited (a session starting or ending) call `emit`. Either
way the rows commit or roll back with the change: a rolled-back change sends nothing, a
committed one is left to the events worker (projects/events/), which never loses it.

The subscriptions are read with one cached query; with none that matches, an event costs a
cache read and no query. With matches it costs one INSERT (all rows at once)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from projects.models import (
    AuditEvent,
    MemoryFile,
    OutboxEvent,
    Project,
    Proposal,
    WebhookSubscription,
)

# Audit actions and the webhook event each one is. file.expire and legal_hold.* are recorded
# by retention and legal holds (issue 25). A rename (issue 27) records file.rename_in at the
# new path and file.rename at the old one: a revision there, a deletion here.
ACTION_EVENTS = {
    "file.save": "memory.revision.created",
    "file.restore": "memory.revision.created",
    "file.external_change": "memory.revision.created",
    "file.save_recovered": "memory.revision.created",
    "file.rename_in": "memory.revision.created",
    "file.delete": "memory.file.deleted",
    "file.external_delete": "memory.file.deleted",
    "file.rename": "memory.file.deleted",
    "file.expire": "memory.file.expired",
    "proposal.create": "proposal.created",
    "memory.poisoning.quarantine": "memory.poisoning.detected",  # also sent by a scan (POISONING_DETECTED)
    "file.external_poisoned": "memory.poisoning.detected",
    "memory.poisoning.release": "memory.poisoning.released",
    "proposal.approve": "proposal.decided",
    "proposal.reject": "proposal.decided",
    "review.flag": "flag.created",
    "review.resolve": "flag.resolved",
    "legal_hold.place": "legal_hold.placed",
    "legal_hold.release": "legal_hold.released",
    "profile.erase": "profile.erased",
    "subject_request.open": "subject_request.received",
    "subject_request.due_soon": "subject_request.due_soon",
    "subject_request.overdue": "subject_request.overdue",
    "subject_request.close": "subject_request.closed",
}
SESSION_STARTED, SESSION_ENDED = "session.started", "session.ended"
POISONING_DETECTED = "memory.poisoning.detected"  # a scan's new finding (governance.poison_scans)
AUDIT_TYPE = "audit.event"
EVENT_TYPES = (
    "memory.revision.created",
    "memory.file.deleted",
    "memory.file.expired",
    "proposal.created",
    "proposal.decided",
    "flag.created",
    "flag.resolved",
    "legal_hold.placed",
    "legal_hold.released",
    "profile.erased",
    "subject_request.received",
    "subject_request.due_soon",
    "subject_request.overdue",
    "subject_request.closed",
    SESSION_STARTED,
    SESSION_ENDED,
    POISONING_DETECTED,
    "memory.poisoning.released",  # a quarantined write released (memory/quarantine.py)
)
assert set(ACTION_EVENTS.values()) <= set(EVENT_TYPES)

_CACHE_KEY = "mgc:events:subscriptions"


@dataclass(frozen=True)
class Target:
    """What emitting needs to know of one live subscription (cached)."""

    id: int
    project_id: str | None
    kind: str
    events: frozenset
    include_content: bool

    def wants(self, project_id, event_type: str | None) -> bool:
        if self.project_id is not None and self.project_id != (str(project_id) if project_id else None):
            return False
        if self.kind == WebhookSubscription.Kind.AUDIT:
            return event_type == AUDIT_TYPE
        return event_type in self.events


def targets() -> list[Target]:
    """The live subscriptions: one query, then cached (cleared by `subscriptions_changed`)."""
    found = cache.get(_CACHE_KEY)
    if found is None:
        found = [
            Target(
                id=s.pk,
                project_id=str(s.project_id) if s.project_id else None,
                kind=s.kind,
                events=frozenset(s.events or ()),
                include_content=s.include_content,
            )
            for s in WebhookSubscription.objects.filter(removed_at__isnull=True, disabled_at__isnull=True)
        ]
        cache.set(_CACHE_KEY, found, timeout=settings.MGC_EVENTS_SUBSCRIPTIONS_SECONDS)
    return found


def subscriptions_changed() -> None:
    """Call when a subscription is made, changed, disabled or removed: clear the cached list
    now and again once the change commits (a read in between would cache the old list)."""
    cache.delete(_CACHE_KEY)
    transaction.on_commit(lambda: cache.delete(_CACHE_KEY))


def forget_targets() -> None:
    cache.delete(_CACHE_KEY)


def new_event_id() -> str:
    return f"msg_{uuid.uuid4().hex}"


def _body(event_type: str, at, data: dict) -> dict:
    return {"type": event_type, "timestamp": at.isoformat().replace("+00:00", "Z"), "data": data}


def emit(
    event_type: str, *, project: Project | None, data, content: dict | None = None, file_ref=None, at=None
) -> int:
    """Record one event for every live subscription that asked for it; `data` is a dict or a
    function making one (called only when someone asked); `content` (texts that may be
    personal data) joins it only for subscriptions with include_content. Call inside the
    change's transaction. Returns how many rows were written."""
    wanted = [t for t in targets() if t.wants(project.pk if project else None, event_type)]
    if not wanted:
        return 0
    data = data() if callable(data) else data
    at = at or timezone.now()
    event_id = new_event_id()
    rows = [
        OutboxEvent(
            event_id=event_id,
            subscription_id=t.id,
            project=project,
            type=event_type,
            file_ref=file_ref,
            created_at=at,
            body=_body(event_type, at, {**data, **(content or {})} if t.include_content else data),
        )
        for t in wanted
    ]
    OutboxEvent.objects.bulk_create(rows)
    return len(rows)


def emit_audit(event: AuditEvent, *, actor=None, obj=None, text: str | None = None) -> int:
    """The outbox rows one audit event implies: its webhook event for the subscriptions that
    asked for that type, the event itself (with its hash-chain fields) for audit streams."""
    wanted = targets()
    if not wanted:
        return 0
    event_type = ACTION_EVENTS.get(event.action)
    hooks = [t for t in wanted if t.wants(event.project_id, event_type)] if event_type else []
    streams = [t for t in wanted if t.wants(event.project_id, AUDIT_TYPE)]
    if not hooks and not streams:
        return 0
    event_id = new_event_id()
    file_ref = obj.pk if isinstance(obj, MemoryFile) else (obj.file_id if isinstance(obj, Proposal) else None)
    rows = []
    if hooks:
        data, content = _webhook_data(event, actor, obj, text)
        rows += [
            OutboxEvent(
                event_id=event_id,
                subscription_id=t.id,
                project_id=event.project_id,
                type=event_type,
                file_ref=file_ref,
                created_at=event.created_at,
                body=_body(event_type, event.created_at, {**data, **content} if t.include_content else data),
            )
            for t in hooks
        ]
    if streams:
        body = _body(AUDIT_TYPE, event.created_at, audit_fields(event))
        rows += [
            OutboxEvent(
                event_id=event_id,
                subscription_id=t.id,
                project_id=event.project_id,
                type=AUDIT_TYPE,
                file_ref=file_ref,
                created_at=event.created_at,
                body=body,
            )
            for t in streams
        ]
    OutboxEvent.objects.bulk_create(rows)
    return len(rows)


def audit_fields(event: AuditEvent) -> dict:
    """An audit event as a SIEM receives it: every field its hash covers, named as the hash
    names them, plus the hash itself, so the receiver can check the chain."""
    fields = {
        "seq": event.seq,
        "prev_hash": event.prev_hash,
        "hash": event.hash,
        "at": event.created_at.isoformat(),
        "actor_user": event.actor_user_id,
        "actor_agent": str(event.actor_agent_id or ""),
        "actor": event.actor_label,
        "action": event.action,
        "project": str(event.project_id or ""),
        "type": event.object_type,
        "object": event.object_id,
        "repr": event.object_repr,
        "details": event.details,
    }
    if event.repr_code:
        fields["repr_code"], fields["repr_params"] = event.repr_code, event.repr_params
    return fields


def _webhook_data(event: AuditEvent, actor, obj, text: str | None) -> tuple[dict, dict]:
    """(data, content) of the webhook event an audit event is: content only goes to
    subscriptions that asked for it."""
    details = event.details or {}
    data: dict = {
        "project": event.project.slug if event.project else None,
        "actor": event.actor_label,
        "audit_seq": event.seq,
    }
    content: dict = {}
    if isinstance(obj, MemoryFile):
        data.update(file=str(obj.pk), path=obj.display_path)
        if event.action.startswith("file."):
            data.update(
                revision=details.get("revision"),
                author=event.actor_label,
                author_kind=getattr(actor, "kind", ""),
                session=getattr(actor, "session_ref", "") or None,
            )
            if "sha256" in details and ACTION_EVENTS.get(event.action) != "memory.file.deleted":
                data.update(
                    sha256=details["sha256"], size=details.get("size"), message=details.get("message", "")
                )
            if event.action == "file.external_poisoned":  # a direct write refused, never adopted
                data.update(key=details.get("key"), families=details.get("families"))
            for end in ("renamed_from", "renamed_to"):  # a rename's other path
                if end in details:
                    data[end] = details[end]
            if text is not None and ACTION_EVENTS.get(event.action) == "memory.revision.created":
                content["text"] = text
        elif event.action.startswith("review."):
            data.update(flag=details.get("flag"), revision=details.get("revision"), by=event.actor_label)
            if event.action == "review.flag":
                data["comment"] = details.get("comment", "")
            else:
                data["note"] = details.get("note", "")
        else:
            data["details"] = details
    elif isinstance(obj, Proposal):
        data.update(
            proposal=obj.pk,
            file=str(obj.file_id),
            path=obj.file.display_path,
            mode=obj.mode,
            agent=obj.agent.slug,
            session=str(obj.session_id) if obj.session_id else None,
        )
        if event.action == "proposal.create":
            content["text"] = obj.content
        elif event.action.startswith("memory.poisoning."):  # held, or released (memory/quarantine.py)
            data.update(
                families=details.get("families"),
                decided_by=details.get("decided_by"),
                released_by=event.actor_label if event.action.endswith(".release") else None,
                note=details.get("note"),
                revision=details.get("revision"),
                consented_by=details.get("consented_by"),
            )
        else:
            data.update(
                decision=obj.status,
                decided_by=event.actor_label,
                note=details.get("note", ""),
                revision=details.get("revision"),
            )
    elif event.action == "profile.erase":
        data.update(
            user=details.get("user"),
            user_id=details.get("user_id"),
            by=event.actor_label,
            reason=details.get("reason", ""),
            files=details.get("files"),
            revisions=details.get("revisions"),
        )
    elif event.action.startswith("subject_request."):
        # No personal data: the receiver looks the request up in the console.
        data.update(
            request=details.get("request"),
            kind=details.get("kind"),
            law=details.get("law"),
            state=details.get("state"),
            due_on=details.get("due_on"),
            handler=details.get("handler"),
            by=event.actor_label,
        )
    else:  # legal holds and what else is mapped later: the audit event's own words
        data.update(
            object_type=event.object_type,
            object_id=event.object_id,
            object=event.object_repr,
            by=event.actor_label,
            details=details,
        )
    return data, content


def scrub_files(file_ids: list) -> int:
    """Erasure: the texts events about these files carry (a profile's revisions, proposals to
    it) are taken out of every stored body, delivered or not, and undelivered events go out
    without them, marked `erased`. Returns how many events changed."""
    changed = 0
    now = timezone.now()
    rows = (
        OutboxEvent.objects.select_for_update()
        .filter(file_ref__in=file_ids, scrubbed_at__isnull=True)
        .exclude(type=AUDIT_TYPE)
    )
    for row in rows:  # audit streams carry the audit event as hashed: erasure leaves those
        data = row.body.get("data", {})
        for key in ("text", "comment", "note"):
            data.pop(key, None)
        details = data.get("details")
        if isinstance(details, dict):
            details.pop("comment", None)
            details.pop("note", None)
            details.pop("message", None)
        data.pop("message", None)
        data["erased"] = True
        row.scrubbed_at = now
        row.save(update_fields=["body", "scrubbed_at"])
        changed += 1
    return changed
