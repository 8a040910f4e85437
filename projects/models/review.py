"""What people decide and check: agents' proposals, review marks, flags and their threads,
isolation checks."""

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from projects.memory import layout
from projects.models.memory import MemoryFile, Revision
from projects.models.projects import Agent, Project
from projects.models.runners import AgentSession


class Proposal(models.Model):
    """A write an agent's policy sends to a person for approval."""

    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")
        APPROVED = "approved", _("Approved")
        REJECTED = "rejected", _("Rejected")

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="proposals", help_text="Owning project."
    )
    file = models.ForeignKey(
        MemoryFile,
        on_delete=models.CASCADE,
        related_name="proposals",
        help_text="Target file (its record exists even if it has no content).",
    )
    agent = models.ForeignKey(
        Agent, on_delete=models.CASCADE, related_name="proposals", help_text="Agent that proposed it."
    )
    session = models.ForeignKey(
        AgentSession,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="proposals",
        help_text="Session that proposed it.",
    )
    mode = models.CharField(max_length=10, help_text="append, replace, delete or rename.")
    content = models.TextField(
        blank=True, help_text="Text to append, or the whole new text (empty for delete and rename)."
    )
    base_revision = models.PositiveIntegerField(
        null=True, blank=True, help_text="Revision a replace, delete or rename was based on."
    )
    new_path = models.CharField(
        max_length=layout.MAX_PATH_CHARS + 20,
        blank=True,
        help_text="For a rename: the path the file moves to, as the agent named it (workspace/<path>.md).",
    )
    status = models.CharField(
        max_length=10,
        choices=Status.choices,
        default=Status.PENDING,
        db_index=True,
        help_text="Where it stands.",
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who approved or rejected it.",
    )
    decided_at = models.DateTimeField(null=True, blank=True, help_text="When.")
    decision_note = models.CharField(max_length=500, blank=True, help_text="Why.")
    revision = models.ForeignKey(
        Revision,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Revision written on approval.",
    )
    quarantined = models.BooleanField(
        default=False,
        db_index=True,
        help_text="The poisoning scanner found instructions planted in it (memory.quarantine): only "
        "an admin or a compliance officer releases it, and a profile needs its person's consent too.",
    )
    poisoning = models.JSONField(
        default=dict,
        blank=True,
        help_text="The scanner's findings (family, span, reason, masked excerpt) and the guard "
        "model's verdict.",
    )
    consented_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="On a quarantined write to a profile: the person who consented to it.",
    )
    consented_at = models.DateTimeField(null=True, blank=True, help_text="When they consented.")
    created_at = models.DateTimeField(auto_now_add=True, help_text="When it was proposed.")
    consolidation = models.CharField(
        max_length=20,
        blank=True,
        default="",
        db_index=True,
        help_text="Made by `manage.py consolidate`, not by a session: merge (duplicates), fold "
        "(stale notes into a dated summary), contradiction (two lines for a person to "
        "settle) or summary (the optional model's). Empty: the agent's own proposal.",
    )
    consolidation_details = models.JSONField(
        default=dict,
        blank=True,
        help_text="What the consolidation found: the lines concerned with their origins (blame).",
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.mode} {self.file} by {self.agent}"

    def audit_label(self) -> tuple[str, dict]:
        return "proposal", {"mode": self.mode, "path": self.file.display_path, "agent": self.agent.name}


class ReviewMark(models.Model):
    """How far one reviewer has read one file: every revision up to `number` is reviewed."""

    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="review_marks",
        help_text="The reviewer.",
    )
    file = models.ForeignKey(
        MemoryFile, on_delete=models.CASCADE, related_name="review_marks", help_text="The file reviewed."
    )
    number = models.PositiveIntegerField(help_text="Revisions up to this number are reviewed.")
    reviewed_at = models.DateTimeField(default=timezone.now, help_text="When it was marked.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["reviewer", "file"], name="one_mark_per_reviewer_file"),
        ]

    def __str__(self) -> str:
        return f"{self.reviewer} reviewed {self.file} up to r{self.number}"


class Flag(models.Model):
    """A reviewer's concern about a revision, with a comment, until someone resolves it."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="flags", help_text="Owning project."
    )
    file = models.ForeignKey(
        MemoryFile, on_delete=models.CASCADE, related_name="flags", help_text="The file flagged."
    )
    revision = models.ForeignKey(
        Revision,
        on_delete=models.CASCADE,
        related_name="flags",
        help_text="The revision the concern is about.",
    )
    comment = models.TextField(help_text="What is wrong, for whoever fixes it.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The reviewer who raised it.",
    )
    created_at = models.DateTimeField(default=timezone.now, help_text="When it was raised.")
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who resolved it.",
    )
    resolved_at = models.DateTimeField(null=True, blank=True, help_text="When it was resolved.")
    resolution_note = models.TextField(blank=True, help_text="How it was resolved, said by who resolved it.")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"flag on {self.file} r{self.revision.number if self.revision_id else '?'}"


class FlagReply(models.Model):
    """One message in a flag's thread: the flagged revision's author answering, or a reviewer."""

    flag = models.ForeignKey(
        Flag, on_delete=models.CASCADE, related_name="replies", help_text="The flag answered."
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who wrote it.",
    )
    text = models.TextField(help_text="What they said.")
    created_at = models.DateTimeField(default=timezone.now, help_text="When.")

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"reply to flag {self.flag_id}"


class IsolationCheck(models.Model):
    """The outcome of one check_isolation run for one project (the dashboard shows the last)."""

    project = models.ForeignKey(
        Project,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="isolation_checks",
        help_text="Project checked; empty for objects under no project.",
    )
    ran_at = models.DateTimeField(default=timezone.now, db_index=True, help_text="When it ran.")
    ran_by = models.CharField(max_length=200, help_text="Who ran it (a person or the command).")
    finding_count = models.PositiveIntegerField(help_text="How many findings.")
    findings = models.JSONField(
        default=list, blank=True, help_text="The first findings: kind, bucket, key, detail."
    )

    class Meta:
        ordering = ["-ran_at", "-id"]

    def __str__(self) -> str:
        return f"isolation check of {self.project or 'all buckets'}: {self.finding_count}"
