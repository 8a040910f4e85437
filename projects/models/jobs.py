"""Background jobs a person waits on (an erasure, a retention run started from the console):
where each stands, for the page that shows it and for the worker that takes it up again."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from projects.models.projects import Project


class BackgroundJob(models.Model):
    """One long action, queued by a page and run by the events worker (governance/jobs.py).
    `progress` keeps what is done, so a worker that died mid-way is followed by one that
    finishes the same job without doing anything twice."""

    class Kind(models.TextChoices):
        ERASURE = "erasure", _("Erasure")
        RETENTION = "retention", _("Retention run")

    class State(models.TextChoices):
        QUEUED = "queued", _("queued")
        RUNNING = "running", _("running")
        DONE = "done", _("done")
        FAILED = "failed", _("failed")

    kind = models.CharField(max_length=20, choices=Kind.choices, help_text="What it does.")
    project = models.ForeignKey(
        Project,
        on_delete=models.CASCADE,
        related_name="jobs",
        help_text="The project whose page started it (an erasure may reach further: `params`).",
    )
    key = models.CharField(
        max_length=100,
        help_text="What it works on (erasure:<user id>, retention:<project id>): one such job at a time.",
    )
    params = models.JSONField(default=dict, blank=True, help_text="What was asked (who, why, where).")
    state = models.CharField(
        max_length=10,
        choices=State.choices,
        default=State.QUEUED,
        db_index=True,
        help_text="Where it stands.",
    )
    done = models.PositiveIntegerField(default=0, help_text="Steps done (projects erased, items expired).")
    total = models.PositiveIntegerField(default=0, help_text="Steps known so far (0: not counted yet).")
    progress = models.JSONField(
        default=dict, blank=True, help_text="What is done so far, for a worker that takes it up again."
    )
    result = models.JSONField(default=dict, blank=True, help_text="The counts when it is done.")
    error = models.CharField(max_length=500, blank=True, help_text="Why it failed, for people.")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who started it.",
    )
    requested_at = models.DateTimeField(auto_now_add=True, help_text="When it was asked for.")
    enqueued_at = models.DateTimeField(null=True, blank=True, help_text="When a task was last queued for it.")
    started_at = models.DateTimeField(null=True, blank=True, help_text="When a worker first took it.")
    finished_at = models.DateTimeField(null=True, blank=True, help_text="When it was done or failed.")
    owner = models.CharField(max_length=64, blank=True, help_text="The worker's run that has it now.")
    lease_until = models.DateTimeField(
        null=True, blank=True, help_text="That run has it until then; after it, another takes it up."
    )
    attempts = models.PositiveIntegerField(default=0, help_text="How many times a worker took it.")

    class Meta:
        ordering = ["-requested_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["key"],
                condition=Q(state__in=["queued", "running"]),
                name="one_open_job_per_key",
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.state})"

    @property
    def open(self) -> bool:
        return self.state in (self.State.QUEUED, self.State.RUNNING)
