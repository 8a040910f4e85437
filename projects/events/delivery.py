"""Delivering outbox events: one attempt at a time per event, under a lease.

An attempt takes the event's row with `SELECT ... FOR UPDATE SKIP LOCKED`, writes a lease
(who, until when) and the attempt's log row, and commits before the request goes out; only
then is the receiver called, outside any transaction. So two workers never deliver one event
at the same time: the second sees the row locked or leased and leaves it. A worker killed
mid-request leaves the lease to run out; the relay then puts the event back on the queue and
another worker delivers it, with the same webhook-id (delivery is at least once: receivers
deduplicate by that id).

After a failure the next attempt is scheduled with exponential backoff and jitter (a task
deferred to that time, enqueued in the transaction that records the failure); past the retry
window the event is given up, and a subscription that has had no success since the event's
window began is disabled, with a notice to the project's admins."""

from __future__ import annotations

import json
import logging
import os
import random
import socket
import time
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from projects import metrics, outbox
from projects.audit import Actor, audit_record
from projects.events import signing, targets
from projects.models import DeliveryAttempt, Membership, OutboxEvent, WebhookSubscription

log = logging.getLogger(__name__)

TEST_TYPE = "webhook.test"  # `webhooks test` and the console's button: one attempt, no retries
USER_AGENT = "memory-governance-console-webhooks/1"
_WORKER = f"{socket.gethostname()}:{os.getpid()}"


def worker_id() -> str:
    return _WORKER


def body_text(event: OutboxEvent) -> str:
    """The body as sent: the same bytes on every attempt (keys sorted, since PostgreSQL's
    jsonb keeps no order)."""
    return json.dumps(event.body, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def backoff(attempt: int) -> float:
    """Seconds before the attempt after `attempt` failed ones: doubling from the base up to
    the cap, with equal jitter (half fixed, half random) so retries of many events spread."""
    delay = min(
        settings.MGC_EVENTS_RETRY_MAX_SECONDS,
        settings.MGC_EVENTS_RETRY_BASE_SECONDS * 2 ** max(attempt - 1, 0),
    )
    return delay / 2 + random.uniform(0, delay / 2)


def deliver(outbox_id: int, *, worker: str | None = None) -> str:
    """Make one attempt at the event if it is due and nobody else is on it. Returns what
    happened: delivered, retry, failed, or why nothing was tried."""
    worker = worker or worker_id()
    now = timezone.now()
    with transaction.atomic():
        event = (
            OutboxEvent.objects.select_for_update(skip_locked=True, of=("self",))
            .filter(pk=outbox_id, state=OutboxEvent.State.PENDING, next_attempt_at__lte=now)
            .filter(Q(lease_until__isnull=True) | Q(lease_until__lte=now))
            .select_related("subscription")
            .first()
        )
        if event is None:
            return "not due, taken or done"
        subscription = event.subscription
        if subscription.removed_at is not None:
            event.state, event.queued_for = OutboxEvent.State.CANCELLED, None
            event.save(update_fields=["state", "queued_for"])
            return "cancelled"
        if subscription.disabled_at is not None:
            event.queued_for = None  # held until the subscription is enabled again
            event.save(update_fields=["queued_for"])
            return "held"
        event.attempts += 1
        event.lease_until = now + timedelta(seconds=settings.MGC_EVENTS_LEASE_SECONDS)
        event.leased_by = worker
        event.save(update_fields=["attempts", "lease_until", "leased_by"])
        attempt = DeliveryAttempt.objects.create(
            event=event, number=event.attempts, worker=worker, started_at=now
        )
    body = body_text(event)
    headers = {
        **subscription.headers,
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        **signing.headers(subscription, event.event_id, body),
    }
    started = time.monotonic()
    status, excerpt, error = None, "", ""
    try:
        answer = targets.post(subscription.url, body.encode("utf-8"), headers)
        status, excerpt = answer.status, answer.excerpt
        if 300 <= status < 400:
            error = _("redirect not followed")
    except targets.TargetRefused as exc:
        error = f"refused: {exc}"
    except targets.TransportError as exc:
        error = str(exc)
    duration = int((time.monotonic() - started) * 1000)
    outcome = _finish(
        event.pk, attempt.pk, worker, status=status, excerpt=excerpt, error=error, duration=duration
    )
    if outcome in ("delivered", "retry", "failed"):
        metrics.deliveries.labels(outcome).inc()
    return outcome


def _finish(
    event_pk: int,
    attempt_pk: int,
    worker: str,
    *,
    status: int | None,
    excerpt: str,
    error: str,
    duration: int,
) -> str:
    now = timezone.now()
    ok = status is not None and 200 <= status < 300
    with transaction.atomic():
        DeliveryAttempt.objects.filter(pk=attempt_pk).update(
            finished_at=now,
            status_code=status,
            error=error[:300],
            response_excerpt=excerpt[:500],
            duration_ms=duration,
        )
        event = OutboxEvent.objects.select_for_update().get(pk=event_pk)
        subscription = WebhookSubscription.objects.select_for_update().get(pk=event.subscription_id)
        event.last_status, event.last_error = status, error[:300]
        fields = ["last_status", "last_error"]
        ours = event.leased_by == worker
        if ours:
            event.lease_until, event.leased_by = None, ""
            fields += ["lease_until", "leased_by"]
        if ok:
            subscription.failures, subscription.last_success_at = 0, now
            subscription.save(update_fields=["failures", "last_success_at"])
            if event.state == OutboxEvent.State.PENDING:
                event.state, event.delivered_at = OutboxEvent.State.DELIVERED, now
                fields += ["state", "delivered_at"]
            event.save(update_fields=fields)
            return "delivered"
        if event.type != TEST_TYPE:
            subscription.failures += 1
            subscription.save(update_fields=["failures"])
        if not ours or event.state != OutboxEvent.State.PENDING:
            event.save(update_fields=fields)  # another worker took over after our lease ran out
            return "failed; another worker has it"
        retry_at = now + timedelta(seconds=backoff(event.attempts))
        window_end = event.retry_from + timedelta(hours=settings.MGC_EVENTS_RETRY_WINDOW_HOURS)
        if event.type == TEST_TYPE or retry_at > window_end:
            event.state = OutboxEvent.State.FAILED
            event.save(update_fields=[*fields, "state"])
            if event.type != TEST_TYPE and (
                subscription.last_success_at is None or subscription.last_success_at < event.retry_from
            ):
                _disable_failing(subscription, event)
            return "failed"
        event.next_attempt_at = event.queued_for = retry_at
        event.save(update_fields=[*fields, "next_attempt_at", "queued_for"])
        _enqueue(event.pk, retry_at)  # in this transaction: the retry is scheduled or nothing is
        return "retry"


def _disable_failing(subscription: WebhookSubscription, event: OutboxEvent) -> None:
    hours = settings.MGC_EVENTS_RETRY_WINDOW_HOURS
    last = f"HTTP {event.last_status}" if event.last_status else event.last_error
    subscription.disabled_at = timezone.now()
    subscription.disabled_reason = (
        f"Every attempt to deliver {event.event_id} failed for {hours:g} hours "
        f"({event.attempts} attempts; the last: {last})"
    )[:500]
    subscription.save(update_fields=["disabled_at", "disabled_reason"])
    audit_record(
        actor=Actor.system("events"),
        action="webhook.disable",
        project=subscription.project,
        obj=subscription,
        details={
            "automatic": True,
            "reason": subscription.disabled_reason,
            "event": event.event_id,
            "failures": subscription.failures,
        },
    )
    outbox.subscriptions_changed()
    transaction.on_commit(lambda: notify_disabled(subscription))


def notify_disabled(subscription: WebhookSubscription) -> int:
    """Mail the project's admins (superusers for a stream of every project) that the
    subscription was disabled; the dashboard shows it to them as well. Best effort."""
    if not settings.MGC_SENDS_EMAIL:
        return 0
    if subscription.project_id:
        people = get_user_model().objects.filter(
            memberships__project_id=subscription.project_id, memberships__role=Membership.Role.ADMIN
        )
    else:
        people = get_user_model().objects.filter(is_superuser=True)
    addresses = sorted({p.email for p in people.exclude(email="") if p.is_active})
    if not addresses:
        return 0
    where = subscription.project.name if subscription.project_id else _("every project")
    body = _(
        "The webhook to %(url)s (%(where)s) was disabled: %(reason)s.\n\nIts events are "
        "kept. Once the receiver works again, enable it on the project's Webhooks page; "
        "the waiting events are then delivered."
    ) % {"url": subscription.url, "where": where, "reason": subscription.disabled_reason}
    try:
        return send_mail(_("A webhook was disabled"), body, None, addresses)
    except OSError:
        log.warning("could not mail the notice that webhook %s was disabled", subscription.pk)
        return 0


def relay(limit: int = 200) -> int:
    """Put on the queue the events that are due and not queued, or whose task did not run
    within a lease (its worker was killed, or the enqueue after a crash never happened).
    Several relays at once skip each other's rows. Returns how many were enqueued."""
    now = timezone.now()
    stale = now - timedelta(seconds=settings.MGC_EVENTS_LEASE_SECONDS)
    with transaction.atomic():
        due = list(
            OutboxEvent.objects.select_for_update(skip_locked=True, of=("self",))
            .filter(
                state=OutboxEvent.State.PENDING,
                next_attempt_at__lte=now,
                subscription__removed_at__isnull=True,
                subscription__disabled_at__isnull=True,
            )
            .filter(Q(queued_for__isnull=True) | Q(queued_for__lt=stale))
            .filter(Q(lease_until__isnull=True) | Q(lease_until__lte=now))
            .order_by("next_attempt_at")
            .values_list("pk", flat=True)[:limit]
        )
        if due:
            OutboxEvent.objects.filter(pk__in=due).update(queued_for=now)
            for pk in due:
                _enqueue(pk, None)
    return len(due)


def enqueue(pk: int, run_after=None) -> None:
    """Put one event on the worker's queue (in the caller's transaction)."""
    _enqueue(pk, run_after)


def _enqueue(pk: int, run_after) -> None:
    from projects.events.tasks import deliver_event  # the task module imports this one

    task = deliver_event.using(run_after=run_after) if run_after else deliver_event
    task.enqueue(pk)
