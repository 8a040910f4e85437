"""A scan of a project's memory for poisoning that got through (issue 37): its state, which the
project's page shows while the events worker runs it, and what it found
(governance.poison_scans, memory.blast)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from projects.models.projects import Project


class PoisonScan(models.Model):
    class State(models.TextChoices):
        QUEUED = "queued", _("Waiting for the worker")
        RUNNING = "running", _("Running")
        DONE = "done", _("Done")
        FAILED = "failed", _("Failed")

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="poison_scans", help_text="The project scanned."
    )
    history = models.BooleanField(
        default=False, help_text="Every stored revision, not only the files as they stand."
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who started it (none: the command).",
    )
    state = models.CharField(
        max_length=10, choices=State.choices, default=State.QUEUED, help_text="Where it stands."
    )
    error = models.CharField(max_length=500, blank=True, help_text="Why it failed, for people.")
    created_at = models.DateTimeField(default=timezone.now, help_text="When it was asked for.")
    state_at = models.DateTimeField(default=timezone.now, help_text="When its state last changed.")
    findings = models.JSONField(
        default=list,
        blank=True,
        help_text="What it found (memory.blast.Finding.as_dict), masked excerpts only.",
    )
    new = models.PositiveIntegerField(
        default=0, help_text="Findings the project's previous scan did not have."
    )

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"poisoning scan of {self.project} ({self.state})"
