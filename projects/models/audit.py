"""The audit trail: append-only events in one hash chain, its head, and where the kept chain
starts after pruning."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from projects import system_text
from projects.models.projects import Agent, Project


class AuditEvent(models.Model):
    """Append-only trail: who did what to which object, when (shape of admin's LogEntry)."""

    created_at = models.DateTimeField(default=timezone.now, db_index=True, help_text="When.")
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The person who acted.",
    )
    actor_agent = models.ForeignKey(
        Agent,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The agent that acted.",
    )
    actor_label = models.CharField(max_length=200, help_text="Actor as shown (kept if deleted).")
    action = models.CharField(max_length=50, db_index=True, help_text="What was done, e.g. file.save.")
    project = models.ForeignKey(
        Project,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Project the object belongs to.",
    )
    object_type = models.CharField(max_length=50, blank=True, help_text="Kind of object.")
    object_id = models.CharField(max_length=64, blank=True, help_text="Id of the object.")
    object_repr = models.CharField(max_length=300, blank=True, help_text="Object as shown.")
    repr_code = models.CharField(
        max_length=50,
        blank=True,
        help_text="Set when the object's label is the console's words (system_text.LABELS): "
        "shown in the reader's language; object_repr keeps its English text.",
    )
    repr_params = models.JSONField(default=dict, blank=True, help_text="The parameters of repr_code.")
    details = models.JSONField(default=dict, blank=True, help_text="Revision numbers, reasons.")
    seq = models.PositiveBigIntegerField(
        unique=True, null=True, help_text="Position in the hash chain: 1, 2, 3... with no gaps."
    )
    prev_hash = models.CharField(
        max_length=64, blank=True, help_text="hash of the event before (empty for the first)."
    )
    hash = models.CharField(
        max_length=64, blank=True, help_text="sha256 over prev_hash and this event's fields."
    )

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor_label} {self.action} {self.object_repr}"

    @property
    def object_shown(self) -> str:
        if not self.repr_code:
            return self.object_repr
        return system_text.render(system_text.LABELS, self.repr_code, self.repr_params, self.object_repr)

    @property
    def actor_shown(self) -> str:
        return system_text.actor_shown(self.actor_label)


class AuditChain(models.Model):
    """The chain's head, one row: locked while an event is appended, so the chain never forks,
    and compared by verify_audit so that deleting the newest events is noticed too."""

    last_seq = models.PositiveBigIntegerField(default=0, help_text="seq of the newest event.")
    last_hash = models.CharField(max_length=64, blank=True, help_text="hash of the newest event.")

    def __str__(self) -> str:
        return f"audit chain at {self.last_seq}"


class AuditCheckpoint(models.Model):
    """Where the kept audit chain starts after older events were pruned: the last pruned
    event's seq and hash, signed with the console's secret key, so `verify_audit` checks the
    kept events from there and a forged start is caught."""

    seq = models.PositiveBigIntegerField(help_text="seq of the last pruned event.")
    hash = models.CharField(max_length=64, help_text="Its hash: the next event's prev_hash.")
    pruned = models.PositiveBigIntegerField(help_text="Events pruned up to here, in all.")
    created_at = models.DateTimeField(default=timezone.now, help_text="When it was pruned.")
    signature = models.CharField(max_length=200, help_text="HMAC of the fields above.")

    class Meta:
        ordering = ["-seq"]

    def __str__(self) -> str:
        return f"audit checkpoint at {self.seq}"
