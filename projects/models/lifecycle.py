"""How long memory is kept, and what must not be deleted: retention rules and legal holds."""

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from projects import system_text
from projects.models.memory import MemoryFile
from projects.models.projects import Project


class RetentionRule(models.Model):
    """How long one kind of a project's memory is kept. Applied by `manage.py retention` on a
    schedule, previewed on the project's Retention page; what a legal hold covers is skipped."""

    class Kind(models.TextChoices):
        FILES = "files", _("Files")
        HISTORY = "history", _("History snapshots")
        SESSIONS = "sessions", _("Session receipts and events")
        PROMPTS = "prompts", _("Stored prompts")
        IDEMPOTENCY = "idempotency", _("Idempotency records")
        LEAVERS = "leavers", _("Profiles of people who left")

    project = models.ForeignKey(
        Project,
        on_delete=models.CASCADE,
        related_name="retention_rules",
        help_text="The project whose memory it governs.",
    )
    kind = models.CharField(max_length=20, choices=Kind.choices, help_text="What it expires.")
    glob = models.CharField(
        max_length=300,
        blank=True,
        help_text="Files and history: which files (USER.md, AGENTS.md, workspace/logs/**.md, ...).",
    )
    days = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Kept this many days (files: since their last change; leavers' profiles: since "
        "the directory deprovisioned them; the rest: since made).",
    )
    keep_revisions = models.PositiveIntegerField(
        null=True, blank=True, help_text="History: the newest this many revisions are kept."
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who made the rule.",
    )
    created_at = models.DateTimeField(auto_now_add=True, help_text="When.")

    class Meta:
        ordering = ["project", "kind", "glob", "pk"]

    def __str__(self) -> str:
        return self.describe()

    def describe(self) -> str:
        """The rule in one line, as the expiry tombstone and the audit trail quote it."""
        parts = [self.kind] + ([self.glob] if self.glob else [])
        if self.keep_revisions:
            parts.append(f"newest {self.keep_revisions}")
        if self.days:
            parts.append(f"{self.days} days")
        return " ".join(parts)


class LegalHold(models.Model):
    """What must not be deleted while litigation or an investigation runs: a project, a person
    (their profile in every project, and what agents were told about them), a file, or
    workspace files by glob. Enforced by the console (erasure, delete and retention refuse)
    and by the storage itself (S3 Object Lock legal hold on every version it covers)."""

    class Kind(models.TextChoices):
        PROJECT = "project", _("Project")
        PERSON = "person", _("Person")
        FILE = "file", _("File")
        GLOB = "glob", _("Workspace files")

    project = models.ForeignKey(
        Project,
        on_delete=models.PROTECT,
        related_name="legal_holds",
        help_text="Where it was placed (a person's hold covers every project).",
    )
    kind = models.CharField(max_length=10, choices=Kind.choices, help_text="What it covers.")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="legal_holds",
        help_text="The person, for a person's hold.",
    )
    file = models.ForeignKey(
        MemoryFile,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="legal_holds",
        help_text="The file, for a file's hold.",
    )
    target = models.CharField(
        max_length=400, help_text="What it covers, as placed (kept if the person or file goes later)."
    )
    glob = models.CharField(max_length=300, blank=True, help_text="workspace/<glob>.md, for workspace files.")
    reason = models.CharField(max_length=500, help_text="Why it is held.")
    case_reference = models.CharField(
        max_length=200, blank=True, help_text="The case or matter it is held for."
    )
    placed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who placed it.",
    )
    placed_at = models.DateTimeField(default=timezone.now, help_text="When.")

    class State(models.TextChoices):
        PLACING = "placing", _("being placed")
        PLACED = "placed", _("placed")
        RELEASING = "releasing", _("being released")
        RELEASED = "released", _("released")

    storage_enforced = models.BooleanField(
        default=False, help_text="Every version it covers carries an S3 legal hold."
    )
    state = models.CharField(
        max_length=10,
        choices=State.choices,
        default=State.PLACING,
        db_index=True,
        help_text=(
            "Where the storage's side stands. Being placed: the console already refuses what it "
            "covers, and the S3 holds are still being put on; being released: the console no "
            "longer refuses, and the S3 holds are still being taken off."
        ),
    )
    swept_versions = models.PositiveIntegerField(
        default=0, help_text="Versions its sweeps put the S3 hold on (while releasing: took it off)."
    )
    sweep_cursor = models.JSONField(
        default=dict,
        blank=True,
        help_text="Where an unfinished sweep goes on; the versions it could not change yet.",
    )
    sweep_error = models.CharField(
        max_length=500, blank=True, help_text="Why the last sweep stopped short (empty when it did not)."
    )
    sweep_owner = models.CharField(max_length=64, blank=True, help_text="The sweep running now, if any.")
    sweep_lease_until = models.DateTimeField(
        null=True,
        blank=True,
        help_text="The running sweep owns the hold until then; after it, another may go on.",
    )
    sweep_queued_at = models.DateTimeField(
        null=True, blank=True, help_text="When a background sweep was last put on the queue."
    )
    swept_through = models.DateTimeField(
        null=True,
        blank=True,
        help_text="By the storage's clock: every version it covers written before this carries the S3 hold.",
    )
    swept_at = models.DateTimeField(null=True, blank=True, help_text="When its last whole sweep ended.")
    released_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who released it.",
    )
    released_at = models.DateTimeField(
        null=True, blank=True, db_index=True, help_text="When it was released; empty while it stands."
    )

    class Meta:
        ordering = ["-placed_at"]

    def __str__(self) -> str:
        return f"legal hold #{self.pk} ({self.target})"

    def describe(self) -> str:
        """What it covers, in the reader's language ('person maria' is stored as placed)."""
        return system_text.hold_covers(self.target)

    def audit_label(self) -> tuple[str, dict]:
        kind, _, what = self.target.partition(" ")
        return "legal_hold", {"id": self.pk, "covers": "glob" if kind == "files" else kind, "what": what}

    @property
    def sweep_failed_count(self) -> int:
        """Versions its sweep could not change yet (the storage refused or did not answer)."""
        return len((self.sweep_cursor or {}).get("failed", []))

    @property
    def sweeping(self) -> bool:
        return self.state in (self.State.PLACING, self.State.RELEASING)
