"""Projects, their people and agents: the records every other one hangs from."""

import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.utils.translation import gettext_lazy as _

from projects.memory import layout


def default_manifest() -> dict:
    """The injection manifest an agent starts with (edited in the console later)."""
    return {
        "sections": [
            {"tag": "agent_identity", "source": "SOUL.md", "max_tokens": 2000},
            {"tag": "agent_rules", "source": "AGENTS.md", "max_tokens": 4000},
            {"tag": "tool_instructions", "source": "TOOLS.md", "max_tokens": 3000},
            {"tag": "user_profile", "source": "USER.md", "max_tokens": 1500},
            # The hook policy's tool and error logs (workspace/logs/) grow with every run: a
            # manifest that wants them gives them a row of their own with a small cap.
            {
                "tag": "workspace_memory",
                "source": "workspace/**.md",
                "exclude": ["workspace/logs/**.md"],
                "max_tokens": 6000,
            },
        ],
        "total_tokens": 16000,
    }


def default_hook_policy() -> dict:
    """What an agent's post/tool/error hooks may write, and how. Its own tool and error logs
    are append-only: the most specific rule wins (runners.policy), so an agent adds to the
    record of what it did and never rewrites it."""
    return {
        "post": {
            "AGENTS.md": {"modes": ["append"], "approval": True},
            "USER.md": {"modes": ["append"], "approval": True},
            "workspace/**.md": {"modes": ["append", "replace"], "approval": False},
            "workspace/logs/**.md": {"modes": ["append"], "approval": False},
        },
        "tool": {"log": "workspace/logs/tools.md"},
        "error": {"log": "workspace/logs/errors.md"},
    }


class Project(models.Model):
    id = models.UUIDField(
        primary_key=True,
        default=uuid.uuid4,
        editable=False,
        help_text="Immutable id; the project's S3 keys are built from it.",
    )
    slug = models.SlugField(unique=True, help_text="Short name used in URLs.")
    name = models.CharField(max_length=200, help_text="Name shown to people.")
    description = models.TextField(blank=True, help_text="What the project's agents are for.")
    bucket = models.CharField(
        max_length=63,
        blank=True,
        help_text="Own S3 bucket for this project; empty uses the console's bucket.",
    )
    key_prefix = models.CharField(
        max_length=200,
        blank=True,
        help_text="Own key prefix (ending with '/'); empty uses projects/<id>/.",
    )
    created_at = models.DateTimeField(auto_now_add=True, help_text="When the project was created.")
    members_version = models.PositiveIntegerField(
        default=0,
        help_text="Moves whenever a membership of the project changes: what the "
        "runner API caches about members is keyed by it.",
    )
    runner_writable = models.JSONField(
        default=dict,
        blank=True,
        help_text="Where live runner S3 credentials may write directly: {workspace: bool, agents: "
        "[agent ids]}; only these prefixes can change behind the console's back "
        "between two pre hooks (kept by runners.credentials).",
    )
    archived_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Archived: hidden from lists, its agents' pre hooks refused; reversible.",
    )
    stale_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Memory health: episodic notes older than this many days, and files no session "
        "received for as long, count as stale (empty: MGC_HEALTH_STALE_DAYS).",
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        # The check and the write happen under one lock, so two requests cannot both pass the
        # check and then overlap (a constraint cannot say "is not a prefix of").
        with transaction.atomic():
            Lock.hold(Lock.PROJECT_PREFIXES)
            self.check_keyspace()
            super().save(*args, **kwargs)

    @property
    def prefix(self) -> str:
        return layout.project_prefix(self.id, self.key_prefix)

    @property
    def bucket_name(self) -> str:
        """The bucket holding this project's memory: its own, or the console's."""
        return self.bucket or settings.STORAGES["memory"]["OPTIONS"]["bucket_name"]

    def clean(self) -> None:
        super().clean()
        self.check_keyspace()

    def check_keyspace(self) -> None:
        """Refuse a prefix that is malformed, equals, contains or lies inside another project's
        in the same bucket (a save there would overwrite the other project's objects), or that
        moves a project which already has files."""
        prefix, bucket = self.prefix, self.bucket_name
        for other in Project.objects.exclude(pk=self.pk).only("id", "slug", "bucket", "key_prefix"):
            if other.bucket_name == bucket and layout.prefixes_overlap(prefix, other.prefix):
                raise ValidationError(
                    _(
                        "The key prefix %(prefix)s overlaps project %(other)s's (%(theirs)s) in "
                        "bucket %(bucket)s: one project's keys would land among the other's."
                    ),
                    code="prefix_overlap",
                    params={"prefix": prefix, "other": other.slug, "theirs": other.prefix, "bucket": bucket},
                )
        stored = Project.objects.filter(pk=self.pk).values("bucket", "key_prefix").first()
        if (
            stored
            and (stored["bucket"], stored["key_prefix"]) != (self.bucket, self.key_prefix)
            and self.files.exists()
        ):
            raise ValidationError(
                _("This project has memory files: its bucket and key prefix can no longer change."),
                code="prefix_fixed",
            )


class Membership(models.Model):
    class Role(models.TextChoices):
        ADMIN = "admin", _("Admin")
        COMPLIANCE = "compliance", _("Compliance")
        EMPLOYEE = "employee", _("Employee")

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="memberships",
        help_text="The person.",
    )
    project = models.ForeignKey(
        Project,
        on_delete=models.CASCADE,
        related_name="memberships",
        help_text="The project the person works in.",
    )

    class Source(models.TextChoices):
        MANUAL = "manual", _("Granted by hand")
        GROUP = "group", _("From a provider group")

    role = models.CharField(max_length=20, choices=Role.choices, help_text="What the person may do.")
    created_at = models.DateTimeField(auto_now_add=True, help_text="When the membership was granted.")
    source = models.CharField(
        max_length=10,
        choices=Source.choices,
        default=Source.MANUAL,
        help_text="manual: an admin granted it and only an admin changes it; group: a group "
        "mapping granted it and it follows the person's groups at each sign-in.",
    )
    mapping = models.ForeignKey(
        "GroupMapping",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="memberships",
        help_text="The group mapping behind a group membership; empty once that mapping is deleted "
        "(the next sign-in then removes the membership).",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "project"], name="one_membership_per_project"),
        ]
        ordering = ["project__name", "user__username"]

    def __str__(self) -> str:
        return f"{self.user} in {self.project} as {self.role}"

    def audit_label(self) -> tuple[str, dict]:
        return "membership", {
            "user": self.user.get_username(),
            "project": self.project.name,
            "role": self.role,
        }


class GroupMapping(models.Model):
    """A group of the identity provider that grants a role in a project ("group `sre` ->
    project incident-analysis, employee"). People get, change and lose the memberships a
    mapping grants as their groups change, at each sign-in."""

    group = models.CharField(
        max_length=255,
        help_text="The group as the provider names it in the groups claim (Keycloak: the group "
        "name or path; Entra ID: the group's object id). Compared exactly.",
    )
    project = models.ForeignKey(
        Project,
        on_delete=models.CASCADE,
        related_name="group_mappings",
        help_text="The project the group's members join.",
    )
    role = models.CharField(
        max_length=20, choices=Membership.Role.choices, help_text="The role they get there."
    )
    created_at = models.DateTimeField(auto_now_add=True, help_text="When the mapping was made.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The admin who made it.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["group", "project"], name="one_mapping_per_group_and_project"),
        ]
        ordering = ["project__name", "group"]

    def __str__(self) -> str:
        return f"group {self.group} -> {self.project.slug} as {self.role}"

    def audit_label(self) -> tuple[str, dict]:
        return "group_mapping", {"group": self.group, "project": self.project.slug, "role": self.role}


@receiver([post_save, post_delete], sender=Membership)
def _members_changed(sender, instance, **kwargs):
    """Whatever way a membership changes (services, admin, tests), the project's member
    version moves, so nothing keyed by the old one is used again (the runner API's cache of
    who may be served)."""
    Project.objects.filter(pk=instance.project_id).update(members_version=models.F("members_version") + 1)


class Agent(models.Model):
    id = models.UUIDField(
        primary_key=True,
        default=uuid.uuid4,
        editable=False,
        help_text="Immutable id; the agent's S3 keys are built from it.",
    )
    project = models.ForeignKey(
        Project,
        on_delete=models.CASCADE,
        related_name="agents",
        help_text="Owning project.",
    )
    slug = models.SlugField(help_text="Short name, unique in the project.")
    name = models.CharField(max_length=200, help_text="Name shown to people.")
    description = models.TextField(blank=True, help_text="What the agent does.")
    manifest = models.JSONField(
        default=default_manifest,
        help_text="Injection manifest: ordered sections (tag, source, token cap) and a budget.",
    )
    hook_policy = models.JSONField(
        default=default_hook_policy,
        help_text="What post/tool/error hooks may write: files, modes, approval.",
    )
    created_at = models.DateTimeField(auto_now_add=True, help_text="When the agent was created.")
    archived_at = models.DateTimeField(
        null=True, blank=True, help_text="Archived: hidden from lists, its pre hook refused; reversible."
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "slug"], name="agent_slug_per_project"),
        ]
        ordering = ["project__name", "name"]

    def __str__(self) -> str:
        return self.name


class Lock(models.Model):
    """Named rows to lock for checks no constraint can express (held to the transaction's end)."""

    PROJECT_PREFIXES = "project-prefixes"
    ACCOUNTS = "accounts"  # creating usernames that must not read alike

    name = models.CharField(max_length=50, primary_key=True, help_text="What the lock guards.")

    def __str__(self) -> str:
        return self.name

    @classmethod
    def hold(cls, name: str) -> None:
        """Lock the row `name` until the surrounding transaction ends."""
        lock, _created = cls.objects.get_or_create(name=name)  # migration 0008 makes the row
        cls.objects.select_for_update().get(pk=lock.pk)
