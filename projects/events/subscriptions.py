"""Subscriptions: made, rotated, enabled, disabled, removed, tested, and events redelivered.
Every change is audited and clears the cached list the outbox reads. The console's Webhooks
page and the `webhooks` command call these."""

from __future__ import annotations

import re
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from projects import outbox
from projects.audit import Actor, audit_record
from projects.events import delivery, signing, targets
from projects.events.delivery import TEST_TYPE
from projects.models import OutboxEvent, Project, WebhookSubscription

MAX_HEADERS = 10
_HEADER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,63}$")
# Headers the console sets itself, or that would change how the request is framed.
_RESERVED = {
    "host",
    "content-type",
    "content-length",
    "transfer-encoding",
    "connection",
    "user-agent",
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
    "expect",
    "upgrade",
    "te",
    "trailer",
    "keep-alive",
    "proxy-authorization",
}


def parse_events(raw) -> list[str]:
    """Event types from a list or a comma-separated text; unknown ones refused by name."""
    items = raw.split(",") if isinstance(raw, str) else list(raw or [])
    events = list(dict.fromkeys(item.strip() for item in items if item and item.strip()))
    unknown = [e for e in events if e not in outbox.EVENT_TYPES]
    if unknown:
        raise ValidationError(
            _("Unknown event types: %(unknown)s. Known: %(known)s."),
            code="unknown_events",
            params={"unknown": ", ".join(unknown), "known": ", ".join(outbox.EVENT_TYPES)},
        )
    return events


def parse_headers(raw) -> dict[str, str]:
    """Extra headers from a dict or from lines `Name: value` (e.g. `Authorization: Splunk <token>`)."""
    if isinstance(raw, dict):
        pairs = list(raw.items())
    else:
        pairs = []
        for line in (raw or "").splitlines():
            if not line.strip():
                continue
            name, colon, value = line.partition(":")
            if not colon:
                raise ValidationError(
                    _("Write each header as Name: value (%(line)s)."),
                    code="header_format",
                    params={"line": line.strip()[:60]},
                )
            pairs.append((name, value))
    headers: dict[str, str] = {}
    for name, value in pairs:
        name, value = str(name).strip(), str(value).strip()
        if not _HEADER_NAME.match(name):
            raise ValidationError(
                _("%(name)s is not a header name (letters, digits and dashes)."),
                code="header_name",
                params={"name": name[:60]},
            )
        if name.lower() in _RESERVED:
            raise ValidationError(
                _("The console sets %(name)s itself."), code="header_reserved", params={"name": name}
            )
        if any(ord(c) < 32 or ord(c) == 127 for c in value) or len(value) > 2000:
            raise ValidationError(
                _("The value of %(name)s holds control characters or is too long."),
                code="header_value",
                params={"name": name},
            )
        headers[name] = value
    if len(headers) > MAX_HEADERS:
        raise ValidationError(
            _("At most %(n)s extra headers."), code="header_count", params={"n": MAX_HEADERS}
        )
    return headers


@transaction.atomic
def webhook_create(
    *,
    by,
    project: Project | None,
    url: str,
    events=(),
    include_content: bool = False,
    kind: str = WebhookSubscription.Kind.WEBHOOK,
    headers=None,
    description: str = "",
) -> tuple[WebhookSubscription, str]:
    """A new subscription and its secret (returned once; shown once)."""
    url = targets.validate_url(url)
    if kind not in WebhookSubscription.Kind.values:
        raise ValidationError(_("The kind is webhook or audit."), code="webhook_kind")
    events = parse_events(events) if kind == WebhookSubscription.Kind.WEBHOOK else []
    if kind == WebhookSubscription.Kind.WEBHOOK and not events:
        raise ValidationError(_("Pick at least one event type."), code="no_events")
    if project is None and kind != WebhookSubscription.Kind.AUDIT:
        raise ValidationError(_("A webhook belongs to a project."), code="webhook_project")
    secret = signing.new_secret()
    subscription = WebhookSubscription.objects.create(
        project=project,
        kind=kind,
        url=url,
        events=events,
        include_content=include_content and kind == WebhookSubscription.Kind.WEBHOOK,
        headers=parse_headers(headers),
        description=description.strip()[:200],
        secret=secret,
        created_by=by if by is not None and by.pk else None,
    )
    audit_record(
        actor=_actor(by),
        action="webhook.create",
        project=project,
        obj=subscription,
        details={
            "url": url,
            "kind": kind,
            "events": events,
            "include_content": subscription.include_content,
            "headers": sorted(subscription.headers),
        },
    )
    outbox.subscriptions_changed()
    return subscription, secret


@transaction.atomic
def webhook_remove(*, by, subscription: WebhookSubscription) -> int:
    """Stop it for good: nothing more is recorded or sent; waiting events are cancelled. The
    delivery log stays. Returns how many events were cancelled."""
    locked = WebhookSubscription.objects.select_for_update().get(pk=subscription.pk)
    if locked.removed_at is not None:
        return 0
    locked.removed_at = timezone.now()
    locked.save(update_fields=["removed_at"])
    cancelled = OutboxEvent.objects.filter(subscription=locked, state=OutboxEvent.State.PENDING).update(
        state=OutboxEvent.State.CANCELLED, queued_for=None
    )
    audit_record(
        actor=_actor(by),
        action="webhook.remove",
        project=locked.project,
        obj=locked,
        details={"url": locked.url, "cancelled": cancelled},
    )
    outbox.subscriptions_changed()
    subscription.removed_at = locked.removed_at
    return cancelled


@transaction.atomic
def webhook_rotate(*, by, subscription: WebhookSubscription, overlap_hours: float | None = None) -> str:
    """A new secret; the old one keeps signing beside it for the overlap window."""
    hours = settings.MGC_WEBHOOK_ROTATION_HOURS if overlap_hours is None else overlap_hours
    if hours < 0 or hours > 24 * 30:
        raise ValidationError(_("The overlap is from 0 to 720 hours."), code="overlap")
    locked = WebhookSubscription.objects.select_for_update().get(pk=subscription.pk)
    secret = signing.new_secret()
    locked.previous_secret, locked.secret = locked.secret, secret
    locked.previous_secret_until = timezone.now() + timedelta(hours=hours)
    locked.save(update_fields=["previous_secret", "secret", "previous_secret_until"])
    audit_record(
        actor=_actor(by),
        action="webhook.rotate",
        project=locked.project,
        obj=locked,
        details={"overlap_until": locked.previous_secret_until.isoformat()},
    )
    return secret


@transaction.atomic
def webhook_set_enabled(
    *, by, subscription: WebhookSubscription, enabled: bool, reason: str = ""
) -> WebhookSubscription:
    """Disable (its events wait) or enable (waiting events go out now, with a new retry
    window)."""
    locked = WebhookSubscription.objects.select_for_update().get(pk=subscription.pk)
    if locked.removed_at is not None or enabled == (locked.disabled_at is None):
        return locked
    now = timezone.now()
    if enabled:
        locked.disabled_at, locked.disabled_reason, locked.failures = None, "", 0
        OutboxEvent.objects.filter(subscription=locked, state=OutboxEvent.State.PENDING).update(
            next_attempt_at=now, retry_from=now, queued_for=None
        )
    else:
        locked.disabled_at = now
        locked.disabled_reason = (reason.strip() or _("Disabled by %(who)s") % {"who": _actor(by).label})[
            :500
        ]
    locked.save(update_fields=["disabled_at", "disabled_reason", "failures"])
    audit_record(
        actor=_actor(by),
        action="webhook.enable" if enabled else "webhook.disable",
        project=locked.project,
        obj=locked,
        details={"reason": locked.disabled_reason},
    )
    outbox.subscriptions_changed()
    return locked


@transaction.atomic
def event_redeliver(*, by, event: OutboxEvent) -> OutboxEvent:
    """Send a delivered or given-up event again, with its own webhook-id and body."""
    locked = OutboxEvent.objects.select_for_update().get(pk=event.pk)
    if locked.subscription.removed_at is not None:
        raise ValidationError(_("The webhook was removed: nothing is sent to it."), code="removed")
    if locked.state == OutboxEvent.State.PENDING and locked.lease_until is None:
        locked.next_attempt_at = timezone.now()  # waiting for a retry: now instead
        locked.queued_for = None
        locked.save(update_fields=["next_attempt_at", "queued_for"])
    elif locked.state != OutboxEvent.State.PENDING:
        now = timezone.now()
        locked.state, locked.next_attempt_at, locked.retry_from = OutboxEvent.State.PENDING, now, now
        locked.queued_for, locked.delivered_at = None, None
        locked.save(update_fields=["state", "next_attempt_at", "retry_from", "queued_for", "delivered_at"])
    audit_record(
        actor=_actor(by),
        action="webhook.redeliver",
        project=locked.project,
        obj=locked.subscription,
        details={"event": locked.event_id, "type": locked.type},
    )
    return locked


@transaction.atomic
def webhook_test(*, by, subscription: WebhookSubscription, queue: bool = True) -> OutboxEvent:
    """A `webhook.test` event for this subscription only (one attempt, no retries), put on the
    worker's queue; with queue=False the caller delivers it itself (`webhooks test`), and the
    relay leaves it alone for a lease's time."""
    now = timezone.now()
    event = OutboxEvent.objects.create(
        event_id=outbox.new_event_id(),
        subscription=subscription,
        project=subscription.project,
        type=TEST_TYPE,
        created_at=now,
        queued_for=now,
        body={
            "type": TEST_TYPE,
            "timestamp": now.isoformat().replace("+00:00", "Z"),
            "data": {
                "project": subscription.project.slug if subscription.project else None,
                "subscription": subscription.pk,
                "by": _actor(by).label,
                "message": "A test event from the console.",
            },
        },
    )
    if queue:
        delivery.enqueue(event.pk)
    return event


def _actor(by) -> Actor:
    return Actor.person(by) if by is not None else Actor.system("webhooks command")
