"""Events out: webhook and audit-stream subscriptions, the transactional outbox and the delivery
log (written by projects/outbox.py, delivered by projects/events/)."""

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from projects.models.projects import Project


class WebhookSubscription(models.Model):
    """Where a project's events go: a receiver URL, the event types it asked for, the secret
    its deliveries are signed with (Standard Webhooks). Kind `audit` receives every audit event
    with its hash-chain fields instead (a SIEM). Never deleted, only removed: the outbox and the
    delivery log keep pointing at it."""

    class Kind(models.TextChoices):
        WEBHOOK = "webhook", _("Webhook")
        AUDIT = "audit", _("Audit stream")

    project = models.ForeignKey(
        Project,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="webhooks",
        help_text="The project whose events it receives; empty (audit streams only, superusers): "
        "every project's and the console's own audit events.",
    )
    kind = models.CharField(
        max_length=10,
        choices=Kind.choices,
        default=Kind.WEBHOOK,
        help_text="webhook: the event types listed; audit: every audit event.",
    )
    url = models.URLField(
        max_length=2000,
        help_text="The receiver: http(s), a public address unless MGC_WEBHOOK_ALLOWED_NETWORKS names it.",
    )
    events = models.JSONField(
        default=list, blank=True, help_text="Event types delivered (webhooks); empty for audit streams."
    )
    include_content = models.BooleanField(
        default=False,
        help_text="Revision texts and proposed texts go along (they may be "
        "personal data); without it events carry paths and numbers only.",
    )
    description = models.CharField(max_length=200, blank=True, help_text="What it is for.")
    secret = models.CharField(max_length=100, help_text="Signing secret (whsec_...), shown once.")
    previous_secret = models.CharField(
        max_length=100,
        blank=True,
        help_text="The secret before the last rotation: deliveries are signed with both until "
        "previous_secret_until.",
    )
    previous_secret_until = models.DateTimeField(
        null=True, blank=True, help_text="End of the rotation's overlap window."
    )
    headers = models.JSONField(
        default=dict, blank=True, help_text="Extra request headers, e.g. Authorization for Splunk HEC."
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who made it.",
    )
    created_at = models.DateTimeField(auto_now_add=True, help_text="When it was made.")
    disabled_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Disabled (after failing for the whole retry window, or "
        "by an admin): its events wait until it is enabled.",
    )
    disabled_reason = models.CharField(max_length=500, blank=True, help_text="Why it was disabled.")
    removed_at = models.DateTimeField(
        null=True, blank=True, help_text="Removed: nothing more is sent; the log stays."
    )
    last_success_at = models.DateTimeField(
        null=True, blank=True, help_text="When a delivery last got a 2xx answer."
    )
    failures = models.PositiveIntegerField(default=0, help_text="Failed attempts since the last success.")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.url}"

    def audit_label(self) -> tuple[str, dict]:
        return "webhook", {"url": self.url, "kind": self.kind}

    @property
    def active(self) -> bool:
        return self.removed_at is None and self.disabled_at is None


class OutboxEvent(models.Model):
    """One event for one subscription, written in the transaction of the change it reports:
    the body it sends (the same bytes on every attempt) and where its delivery stands. A
    rolled-back change leaves none; a committed one is delivered by the events worker."""

    class State(models.TextChoices):
        PENDING = "pending", _("pending")
        DELIVERED = "delivered", _("delivered")
        FAILED = "failed", _("failed (gave up)")
        CANCELLED = "cancelled", _("cancelled (subscription removed)")

    event_id = models.CharField(
        max_length=40, help_text="The webhook-id: one per event, kept on every attempt and redelivery."
    )
    subscription = models.ForeignKey(
        WebhookSubscription, on_delete=models.CASCADE, related_name="outbox", help_text="Where it goes."
    )
    project = models.ForeignKey(
        Project,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The project it is about.",
    )
    type = models.CharField(max_length=50, help_text="Event type, e.g. memory.revision.created.")
    body = models.JSONField(help_text="What is sent: type, timestamp, data.")
    file_ref = models.UUIDField(
        null=True,
        blank=True,
        db_index=True,
        help_text="The memory file it quotes, if any (erasure scrubs it).",
    )
    created_at = models.DateTimeField(default=timezone.now, help_text="When the change committed.")
    state = models.CharField(
        max_length=10, choices=State.choices, default=State.PENDING, help_text="Where its delivery stands."
    )
    attempts = models.PositiveIntegerField(default=0, help_text="Attempts made.")
    next_attempt_at = models.DateTimeField(
        default=timezone.now, help_text="Not attempted before this (backoff)."
    )
    retry_from = models.DateTimeField(
        default=timezone.now,
        help_text="Start of its retry window (its creation, or the last redelivery or re-enabling).",
    )
    queued_for = models.DateTimeField(
        null=True,
        blank=True,
        help_text="A worker task was enqueued to run at this time (the relay enqueues again "
        "when it did not run: a worker killed mid-delivery).",
    )
    lease_until = models.DateTimeField(
        null=True, blank=True, help_text="A worker is delivering it until then; no other may."
    )
    leased_by = models.CharField(max_length=64, blank=True, help_text="Which worker.")
    delivered_at = models.DateTimeField(null=True, blank=True, help_text="When a 2xx came back.")
    last_status = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="HTTP status of the last attempt."
    )
    last_error = models.CharField(max_length=300, blank=True, help_text="The last attempt's error.")
    scrubbed_at = models.DateTimeField(
        null=True, blank=True, help_text="Texts of an erased profile taken out."
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["subscription", "event_id"], name="one_event_per_subscription"),
        ]
        indexes = [models.Index(fields=["state", "next_attempt_at"], name="outbox_due")]

    def __str__(self) -> str:
        return f"{self.type} {self.event_id} -> {self.subscription_id} ({self.state})"


class DeliveryAttempt(models.Model):
    """One HTTP attempt to deliver an outbox event: the delivery log."""

    event = models.ForeignKey(
        OutboxEvent, on_delete=models.CASCADE, related_name="log", help_text="The event attempted."
    )
    number = models.PositiveIntegerField(help_text="1, 2, 3... per event.")
    worker = models.CharField(max_length=64, blank=True, help_text="The worker that tried.")
    started_at = models.DateTimeField(default=timezone.now, help_text="When the request began.")
    finished_at = models.DateTimeField(
        null=True, blank=True, help_text="When it ended; empty if the worker stopped mid-request."
    )
    status_code = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="The receiver's HTTP status."
    )
    error = models.CharField(
        max_length=300, blank=True, help_text="What went wrong: refused target, timeout, connection."
    )
    response_excerpt = models.CharField(
        max_length=500, blank=True, help_text="The start of the receiver's answer."
    )
    duration_ms = models.PositiveIntegerField(null=True, blank=True, help_text="How long it took.")

    class Meta:
        ordering = ["-started_at", "-id"]

    def __str__(self) -> str:
        return f"attempt {self.number} of {self.event_id}"

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300
