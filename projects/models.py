"""Records of the console. Memory content lives in S3; these rows say what it is and who wrote it."""

import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from projects import system_text
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
            {"tag": "workspace_memory", "source": "workspace/**.md",
             "exclude": ["workspace/logs/**.md"], "max_tokens": 6000},
        ],
        "total_tokens": 16000,
    }


def default_hook_policy() -> dict:
    """What an agent's post/tool/error hooks may write, and how."""
    return {
        "post": {
            "AGENTS.md": {"modes": ["append"], "approval": True},
            "USER.md": {"modes": ["append"], "approval": True},
            "workspace/**.md": {"modes": ["append", "replace"], "approval": False},
        },
        "tool": {"log": "workspace/logs/tools.md"},
        "error": {"log": "workspace/logs/errors.md"},
    }


class Project(models.Model):
    id = models.UUIDField(
        primary_key=True, default=uuid.uuid4, editable=False,
        help_text="Immutable id; the project's S3 keys are built from it.",
    )
    slug = models.SlugField(unique=True, help_text="Short name used in URLs.")
    name = models.CharField(max_length=200, help_text="Name shown to people.")
    description = models.TextField(blank=True, help_text="What the project's agents are for.")
    bucket = models.CharField(
        max_length=63, blank=True,
        help_text="Own S3 bucket for this project; empty uses the console's bucket.",
    )
    key_prefix = models.CharField(
        max_length=200, blank=True,
        help_text="Own key prefix (ending with '/'); empty uses projects/<id>/.",
    )
    created_at = models.DateTimeField(auto_now_add=True, help_text="When the project was created.")
    members_version = models.PositiveIntegerField(
        default=0, help_text="Moves whenever a membership of the project changes: what the "
                             "runner API caches about members is keyed by it.")
    runner_writable = models.JSONField(
        default=dict, blank=True,
        help_text="Where live runner S3 credentials may write directly: {workspace: bool, agents: "
                  "[agent ids]}; only these prefixes can change behind the console's back "
                  "between two pre hooks (kept by runners.credentials).")
    archived_at = models.DateTimeField(
        null=True, blank=True,
        help_text="Archived: hidden from lists, its agents' pre hooks refused; reversible.")

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
                    _("The key prefix %(prefix)s overlaps project %(other)s's (%(theirs)s) in "
                      "bucket %(bucket)s: one project's keys would land among the other's."),
                    code="prefix_overlap", params={"prefix": prefix, "other": other.slug,
                                                   "theirs": other.prefix, "bucket": bucket})
        stored = Project.objects.filter(pk=self.pk).values("bucket", "key_prefix").first()
        if stored and (stored["bucket"], stored["key_prefix"]) != (self.bucket, self.key_prefix) \
                and MemoryFile.objects.filter(project=self).exists():
            raise ValidationError(_("This project has memory files: its bucket and key prefix "
                                    "can no longer change."), code="prefix_fixed")


class Membership(models.Model):
    class Role(models.TextChoices):
        ADMIN = "admin", _("Admin")
        COMPLIANCE = "compliance", _("Compliance")
        EMPLOYEE = "employee", _("Employee")

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships",
        help_text="The person.",
    )
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="memberships",
        help_text="The project the person works in.",
    )
    class Source(models.TextChoices):
        MANUAL = "manual", _("Granted by hand")
        GROUP = "group", _("From a provider group")

    role = models.CharField(max_length=20, choices=Role.choices, help_text="What the person may do.")
    created_at = models.DateTimeField(auto_now_add=True, help_text="When the membership was granted.")
    source = models.CharField(
        max_length=10, choices=Source.choices, default=Source.MANUAL,
        help_text="manual: an admin granted it and only an admin changes it; group: a group "
                  "mapping granted it and it follows the person's groups at each sign-in.",
    )
    mapping = models.ForeignKey(
        "GroupMapping", null=True, blank=True, on_delete=models.SET_NULL, related_name="memberships",
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
        return "membership", {"user": self.user.get_username(), "project": self.project.name,
                              "role": self.role}


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
        Project, on_delete=models.CASCADE, related_name="group_mappings",
        help_text="The project the group's members join.",
    )
    role = models.CharField(max_length=20, choices=Membership.Role.choices,
                            help_text="The role they get there.")
    created_at = models.DateTimeField(auto_now_add=True, help_text="When the mapping was made.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+", help_text="The admin who made it.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["group", "project"], name="one_mapping_per_group_and_project"),
        ]
        ordering = ["project__name", "group"]

    def __str__(self) -> str:
        return f"group {self.group} -> {self.project.slug} as {self.role}"


@receiver([post_save, post_delete], sender=Membership)
def _members_changed(sender, instance, **kwargs):
    """Whatever way a membership changes (services, admin, tests), the project's member
    version moves, so nothing keyed by the old one is used again (the runner API's cache of
    who may be served)."""
    Project.objects.filter(pk=instance.project_id).update(
        members_version=models.F("members_version") + 1)


class Agent(models.Model):
    id = models.UUIDField(
        primary_key=True, default=uuid.uuid4, editable=False,
        help_text="Immutable id; the agent's S3 keys are built from it.",
    )
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="agents", help_text="Owning project.",
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
        null=True, blank=True,
        help_text="Archived: hidden from lists, its pre hook refused; reversible.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "slug"], name="agent_slug_per_project"),
        ]
        ordering = ["project__name", "name"]

    def __str__(self) -> str:
        return self.name


class MemoryFile(models.Model):
    class Scope(models.TextChoices):
        AGENT = layout.SCOPE_AGENT, _("Agent")
        USER = layout.SCOPE_USER, _("User")
        WORKSPACE = layout.SCOPE_WORKSPACE, _("Workspace")

    id = models.UUIDField(
        primary_key=True, default=uuid.uuid4, editable=False,
        help_text="Immutable id; names the file's history folder in S3.",
    )
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="files", help_text="Owning project.",
    )
    scope = models.CharField(max_length=20, choices=Scope.choices, help_text="Whose memory it is.")
    agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.CASCADE, related_name="files",
        help_text="The agent, for SOUL.md / AGENTS.md / TOOLS.md.",
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE,
        related_name="memory_files", help_text="The employee, for USER.md.",
    )
    path = models.CharField(
        max_length=layout.MAX_PATH_CHARS,
        help_text="File name (agent/user scope) or workspace-relative path.",
    )
    key = models.CharField(max_length=1024, help_text="S3 key of the head object.")
    head = models.ForeignKey(
        "Revision", null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        help_text="Latest revision (one query to the head).",
    )
    head_etag = models.CharField(
        max_length=100, blank=True,
        help_text="ETag of the head object as the console wrote it; a different one in S3 "
                  "means someone wrote to the bucket directly.",
    )
    refused_etag = models.CharField(
        max_length=100, blank=True,
        help_text="ETag of an object at the file's key that the console refused to adopt (see "
                  "RefusedWrite); the head stays the recorded revision until it is replaced.",
    )
    created_at = models.DateTimeField(auto_now_add=True, help_text="When the file was created.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "key"], name="one_record_per_key"),
        ]
        ordering = ["scope", "path"]

    def __str__(self) -> str:
        return self.display_path

    @property
    def source_path(self) -> str:
        """The path as an agent sees it (manifest sources, hook paths, receipts, sandbox):
        SOUL.md, USER.md, workspace/<path>."""
        if self.scope == self.Scope.WORKSPACE:
            return f"{layout.SCOPE_WORKSPACE}/{self.path}"
        return self.path

    @property
    def display_path(self) -> str:
        """The path as people see it, with whose file it is: agents/<slug>/SOUL.md,
        users/<name>/USER.md, workspace/<path>."""
        if self.scope == self.Scope.AGENT:
            return f"agents/{self.agent.slug if self.agent_id else '?'}/{self.path}"
        if self.scope == self.Scope.USER:
            return f"users/{self.user.username if self.user_id else '?'}/{self.path}"
        return self.source_path

    @property
    def is_deleted(self) -> bool:
        return self.head is not None and self.head.is_deletion


class Revision(models.Model):
    class AuthorKind(models.TextChoices):
        PERSON = "person", _("Person")
        AGENT = "agent", _("Agent")
        EXTERNAL = "external", _("External (written to S3 directly)")
        SYSTEM = "system", _("System")

    file = models.ForeignKey(
        MemoryFile, on_delete=models.CASCADE, related_name="revisions",
        help_text="The file this revision belongs to.",
    )
    number = models.PositiveIntegerField(help_text="1..n per file, no gaps.")
    sha256 = models.CharField(max_length=64, help_text="sha256 of the UTF-8 content.")
    size = models.PositiveIntegerField(help_text="Content size in bytes.")
    author_kind = models.CharField(
        max_length=20, choices=AuthorKind.choices, help_text="Who wrote it: person, agent, external.",
    )
    author_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+", help_text="The person, when a person wrote it.",
    )
    author_agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="The agent, when an agent wrote it.",
    )
    author_label = models.CharField(
        max_length=200, blank=True, help_text="Author as shown, kept if the account goes away.",
    )
    session_ref = models.CharField(
        max_length=64, blank=True, help_text="Agent session id when an agent's hook wrote it.",
    )
    message = models.CharField(max_length=500, blank=True, help_text="Why the change was made.")
    message_code = models.CharField(
        max_length=50, blank=True,
        help_text="Set when the console wrote the message (system_text.MESSAGES): shown in the "
                  "reader's language; `message` keeps its English text.")
    message_params = models.JSONField(default=dict, blank=True,
                                      help_text="The parameters of message_code.")
    snapshot_key = models.CharField(
        max_length=1024, blank=True, help_text="S3 key of the immutable copy; empty for a deletion.",
    )
    is_deletion = models.BooleanField(default=False, help_text="A tombstone: the file was deleted.")
    expired_rule = models.CharField(
        max_length=300, blank=True,
        help_text="On the tombstone a retention rule wrote when the file expired: the rule.")
    purged_at = models.DateTimeField(
        null=True, blank=True,
        help_text="When this revision's stored text was deleted (retention); the row stays.")
    restored_from = models.PositiveIntegerField(
        null=True, blank=True, help_text="Number of the revision this one restores.",
    )
    renamed_from = models.ForeignKey(
        MemoryFile, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="On a renamed file's first revision at its new path: the file it was.",
    )
    renamed_to = models.ForeignKey(
        MemoryFile, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="On the tombstone a rename leaves at the old path: the file it became.",
    )
    findings = models.JSONField(
        default=list, blank=True,
        help_text="Likely personal data and secrets the scanner saw (kind, place, masked excerpt).",
    )
    created_at = models.DateTimeField(auto_now_add=True, help_text="When it was recorded.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["file", "number"], name="revision_number_per_file"),
        ]
        ordering = ["file", "-number"]

    def __str__(self) -> str:
        return f"{self.file} r{self.number}"

    @property
    def display_message(self) -> str:
        """The message in the reader's language when the console wrote it, else as stored."""
        if not self.message_code:
            return self.message
        return system_text.render(system_text.MESSAGES, self.message_code, self.message_params,
                                  self.message)

    @property
    def author_shown(self) -> str:
        return system_text.actor_shown(self.author_label)


class RefusedWrite(models.Model):
    """An object found in the bucket that breaks the console's own rules for a memory file (too
    large, not UTF-8 text, a NUL, a name the layout refuses): never adopted, injected or served
    raw. The file's recorded head stays its head; admins see it and can delete it."""

    class Reason(models.TextChoices):
        TOO_LARGE = "too_large", _("over the size limit")
        NOT_TEXT = "not_text", _("not UTF-8 text")
        BINARY = "binary", _("holds NUL bytes")
        NAME = "name", _("a name the console refuses")

    class State(models.TextChoices):
        PRESENT = "present", _("in storage")
        REPLACED = "replaced", _("replaced by a later write")
        DELETED = "deleted", _("deleted")

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="refused_writes",
                                help_text="The project whose prefix holds it.")
    file = models.ForeignKey(MemoryFile, null=True, blank=True, on_delete=models.CASCADE,
                             related_name="refused_writes",
                             help_text="The file whose key it is at; empty for a refused name.")
    key = models.CharField(max_length=1024, help_text="Its S3 key.")
    etag = models.CharField(max_length=100, help_text="Its ETag when found.")
    version_id = models.CharField(max_length=200, blank=True,
                                  help_text="Its version, when the bucket keeps versions.")
    size = models.BigIntegerField(help_text="Its size in bytes.")
    reason = models.CharField(max_length=20, choices=Reason.choices,
                              help_text="Which rule it breaks.")
    detail = models.JSONField(default=dict, blank=True,
                              help_text="The rule's figures: limit, position of a bad byte.")
    writer_agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="The agent whose runner provably wrote it (signed metadata), if any.")
    writer_session = models.CharField(max_length=64, blank=True,
                                      help_text="The session its signed metadata names.")
    writer_label = models.CharField(max_length=200, help_text="Who wrote it, as shown.")
    found_at = models.DateTimeField(auto_now_add=True, help_text="When the console found it.")
    state = models.CharField(max_length=10, choices=State.choices, default=State.PRESENT,
                             db_index=True, help_text="Whether it is still in storage.")
    resolved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="+",
                                    help_text="The admin who deleted it.")
    resolved_at = models.DateTimeField(null=True, blank=True,
                                       help_text="When it was deleted or replaced.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "key", "etag"],
                                    name="one_refusal_per_object"),
        ]
        ordering = ["-found_at"]

    def __str__(self) -> str:
        return f"refused write at {self.key}"

    @property
    def relative_key(self) -> str:
        """The key under the project's prefix, as people read it (workspace/..., agents/...)."""
        return self.key.removeprefix(self.project.prefix)


class AuditEvent(models.Model):
    """Append-only trail: who did what to which object, when (shape of admin's LogEntry)."""

    created_at = models.DateTimeField(default=timezone.now, db_index=True, help_text="When.")
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+", help_text="The person who acted.",
    )
    actor_agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="The agent that acted.",
    )
    actor_label = models.CharField(max_length=200, help_text="Actor as shown (kept if deleted).")
    action = models.CharField(max_length=50, db_index=True, help_text="What was done, e.g. file.save.")
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="Project the object belongs to.",
    )
    object_type = models.CharField(max_length=50, blank=True, help_text="Kind of object.")
    object_id = models.CharField(max_length=64, blank=True, help_text="Id of the object.")
    object_repr = models.CharField(max_length=300, blank=True, help_text="Object as shown.")
    repr_code = models.CharField(
        max_length=50, blank=True,
        help_text="Set when the object's label is the console's words (system_text.LABELS): "
                  "shown in the reader's language; object_repr keeps its English text.")
    repr_params = models.JSONField(default=dict, blank=True,
                                   help_text="The parameters of repr_code.")
    details = models.JSONField(default=dict, blank=True, help_text="Revision numbers, reasons.")
    seq = models.PositiveBigIntegerField(
        unique=True, null=True, help_text="Position in the hash chain: 1, 2, 3... with no gaps.")
    prev_hash = models.CharField(max_length=64, blank=True,
                                 help_text="hash of the event before (empty for the first).")
    hash = models.CharField(max_length=64, blank=True,
                            help_text="sha256 over prev_hash and this event's fields.")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor_label} {self.action} {self.object_repr}"

    @property
    def object_shown(self) -> str:
        if not self.repr_code:
            return self.object_repr
        return system_text.render(system_text.LABELS, self.repr_code, self.repr_params,
                                  self.object_repr)

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


class AgentToken(models.Model):
    """A runner's bearer token for one agent. Only its sha256 is stored; shown once."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="tokens",
                              help_text="The agent this token acts as.")
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. 'prod runner'.")
    prefix = models.CharField(max_length=16, help_text="First characters, to recognise it.")
    token_hash = models.CharField(max_length=64, unique=True, help_text="sha256 of the token.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+", help_text="Who created it.")
    created_at = models.DateTimeField(auto_now_add=True, help_text="When it was created.")
    expires_at = models.DateTimeField(null=True, blank=True, help_text="After this it is refused.")
    revoked_at = models.DateTimeField(null=True, blank=True, help_text="When it was revoked.")
    last_used_at = models.DateTimeField(null=True, blank=True, help_text="Last accepted call.")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


class RunnerCredential(models.Model):
    """S3 credentials of one runner token: an IAM user whose policy confines it to the agent's
    project prefix (runners.credentials.runner_policy). The secret is shown once and never stored."""

    token = models.ForeignKey(AgentToken, on_delete=models.CASCADE, related_name="credentials",
                              help_text="The runner token these credentials belong to.")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="credentials",
                              help_text="The agent whose runner uses them.")
    iam_user = models.CharField(max_length=64,
                                help_text="Name of the IAM user in the object store.")
    access_key_id = models.CharField(max_length=128, help_text="The access key id (not secret).")
    policy = models.JSONField(default=dict, help_text="The policy attached when last written.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+",
                                   help_text="Who issued them.")
    created_at = models.DateTimeField(auto_now_add=True, help_text="When they were issued.")
    revoked_at = models.DateTimeField(null=True, blank=True,
                                      help_text="When the access key (or the user) was deleted.")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["token"], condition=models.Q(revoked_at__isnull=True),
                                    name="one_live_credential_per_token"),
        ]

    def __str__(self) -> str:
        return f"S3 credentials {self.access_key_id} of {self.token}"

    def audit_label(self) -> tuple[str, dict]:
        return "credential", {"key": self.access_key_id, "token": str(self.token)}


class AgentSession(models.Model):
    """One run of an agent for a user: what the pre hook injected, then what happened."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False,
                          help_text="Session id the runner sends back to post/tool/error.")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="sessions",
                              help_text="The agent that ran.")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                             on_delete=models.SET_NULL, related_name="agent_sessions",
                             help_text="The employee the agent worked for.")
    external_ref = models.CharField(max_length=200, blank=True,
                                    help_text="The runner's own session id, if it sent one.")
    prompt_sha256 = models.CharField(max_length=64, help_text="sha256 of the injected prompt.")
    total_tokens = models.PositiveIntegerField(default=0, help_text="Tokens of the prompt.")
    tokenizer = models.CharField(max_length=60, blank=True, help_text="Encoding that counted.")
    receipt = models.JSONField(default=list, help_text="Per section: files and revisions injected.")
    prompt_stored = models.BooleanField(
        default=False, help_text="The exact prompt is kept in S3 under its sha256 (_prompts/).")
    budget = models.PositiveIntegerField(null=True, blank=True,
                                         help_text="The manifest's total token budget then.")
    truncated = models.BooleanField(default=False,
                                    help_text="A section was cut to its cap or to the budget.")
    over_budget = models.BooleanField(default=False,
                                      help_text="Before any cut to the budget, the prompt was over it.")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True, help_text="Pre hook time.")
    ended_at = models.DateTimeField(null=True, blank=True, help_text="When the post hook came.")
    bucket_checked = models.BooleanField(
        null=True, blank=True,
        help_text="The pre hook looked at what runners may have written to the bucket (false: "
                  "storage could not be listed; empty: a session from before this was kept).")
    prompt_removed = models.JSONField(
        null=True, blank=True,
        help_text="Why the kept prompt is gone: {how: erased|expired, at, by, reason or rule}.")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.agent} session {str(self.id)[:8]}"

    def audit_label(self) -> tuple[str, dict]:
        return "session", {"agent": self.agent.name, "id": str(self.id)[:8]}


class IdempotencyRecord(models.Model):
    """One runner request sent with an Idempotency-Key: a retry with the same key and body gets
    the first answer back and writes nothing (kept in the database, so on any worker or host).
    A post hook's writes are noted as each commits, so a retry after a crash goes on from the
    first write that did not."""

    class State(models.TextChoices):
        RUNNING = "running", "running"
        DONE = "done", "done"

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+",
                              help_text="The agent whose token sent the request.")
    key = models.CharField(max_length=200, help_text="The Idempotency-Key header.")
    endpoint = models.CharField(max_length=50, help_text="Which endpoint, e.g. hooks/post.")
    request_sha256 = models.CharField(max_length=64, help_text="sha256 of endpoint and body.")
    state = models.CharField(max_length=10, choices=State.choices, default=State.RUNNING,
                             help_text="running until the answer is stored.")
    lease_until = models.DateTimeField(help_text="A worker is on it until then; after that a "
                                                 "retry may take over.")
    partial = models.JSONField(default=dict, blank=True,
                               help_text="Results of the writes committed so far, by index.")
    status_code = models.PositiveSmallIntegerField(null=True, blank=True,
                                                   help_text="HTTP status of the answer.")
    response = models.JSONField(null=True, blank=True, help_text="The answer, replayed as is.")
    created_at = models.DateTimeField(auto_now_add=True, help_text="First seen.")
    expires_at = models.DateTimeField(db_index=True, help_text="Forgotten after this.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["agent", "key"], name="one_record_per_agent_key"),
        ]

    def __str__(self) -> str:
        return f"{self.endpoint} {self.key} ({self.state})"


class SessionEvent(models.Model):
    class Kind(models.TextChoices):
        PRE = "pre", "pre"
        POST = "post", "post"
        TOOL = "tool", "tool"
        ERROR = "error", "error"

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="events",
                                help_text="The session.")
    kind = models.CharField(max_length=10, choices=Kind.choices, help_text="Which hook.")
    created_at = models.DateTimeField(auto_now_add=True, help_text="When it was recorded.")
    payload = models.JSONField(default=dict, help_text="What the runner sent, and the outcome.")

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.kind} in {self.session_id}"


class Proposal(models.Model):
    """A write an agent's policy sends to a person for approval."""

    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")
        APPROVED = "approved", _("Approved")
        REJECTED = "rejected", _("Rejected")

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="proposals",
                                help_text="Owning project.")
    file = models.ForeignKey(MemoryFile, on_delete=models.CASCADE, related_name="proposals",
                             help_text="Target file (its record exists even if it has no content).")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="proposals",
                              help_text="Agent that proposed it.")
    session = models.ForeignKey(AgentSession, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="proposals", help_text="Session that proposed it.")
    mode = models.CharField(max_length=10, help_text="append, replace, delete or rename.")
    content = models.TextField(blank=True, help_text="Text to append, or the whole new text "
                                                     "(empty for delete and rename).")
    base_revision = models.PositiveIntegerField(null=True, blank=True,
                                                help_text="Revision a replace, delete or rename "
                                                          "was based on.")
    new_path = models.CharField(max_length=layout.MAX_PATH_CHARS + 20, blank=True,
                                help_text="For a rename: the path the file moves to, as the "
                                          "agent named it (workspace/<path>.md).")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING,
                              db_index=True, help_text="Where it stands.")
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+",
                                   help_text="Who approved or rejected it.")
    decided_at = models.DateTimeField(null=True, blank=True, help_text="When.")
    decision_note = models.CharField(max_length=500, blank=True, help_text="Why.")
    revision = models.ForeignKey(Revision, null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="+", help_text="Revision written on approval.")
    created_at = models.DateTimeField(auto_now_add=True, help_text="When it was proposed.")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.mode} {self.file} by {self.agent}"

    def audit_label(self) -> tuple[str, dict]:
        return "proposal", {"mode": self.mode, "path": self.file.display_path,
                            "agent": self.agent.name}


class ReviewMark(models.Model):
    """How far one reviewer has read one file: every revision up to `number` is reviewed."""

    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                 related_name="review_marks", help_text="The reviewer.")
    file = models.ForeignKey(MemoryFile, on_delete=models.CASCADE, related_name="review_marks",
                             help_text="The file reviewed.")
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

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="flags",
                                help_text="Owning project.")
    file = models.ForeignKey(MemoryFile, on_delete=models.CASCADE, related_name="flags",
                             help_text="The file flagged.")
    revision = models.ForeignKey(Revision, on_delete=models.CASCADE, related_name="flags",
                                 help_text="The revision the concern is about.")
    comment = models.TextField(help_text="What is wrong, for whoever fixes it.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                                   related_name="+", help_text="The reviewer who raised it.")
    created_at = models.DateTimeField(default=timezone.now, help_text="When it was raised.")
    resolved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="+",
                                    help_text="Who resolved it.")
    resolved_at = models.DateTimeField(null=True, blank=True, help_text="When it was resolved.")
    resolution_note = models.TextField(blank=True,
                                       help_text="How it was resolved, said by who resolved it.")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"flag on {self.file} r{self.revision.number if self.revision_id else '?'}"


class FlagReply(models.Model):
    """One message in a flag's thread: the flagged revision's author answering, or a reviewer."""

    flag = models.ForeignKey(Flag, on_delete=models.CASCADE, related_name="replies",
                             help_text="The flag answered.")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                               related_name="+", help_text="Who wrote it.")
    text = models.TextField(help_text="What they said.")
    created_at = models.DateTimeField(default=timezone.now, help_text="When.")

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"reply to flag {self.flag_id}"


class IsolationCheck(models.Model):
    """The outcome of one check_isolation run for one project (the dashboard shows the last)."""

    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.CASCADE,
                                related_name="isolation_checks",
                                help_text="Project checked; empty for objects under no project.")
    ran_at = models.DateTimeField(default=timezone.now, db_index=True, help_text="When it ran.")
    ran_by = models.CharField(max_length=200, help_text="Who ran it (a person or the command).")
    finding_count = models.PositiveIntegerField(help_text="How many findings.")
    findings = models.JSONField(default=list, blank=True,
                                help_text="The first findings: kind, bucket, key, detail.")

    class Meta:
        ordering = ["-ran_at", "-id"]

    def __str__(self) -> str:
        return f"isolation check of {self.project or 'all buckets'}: {self.finding_count}"


class SearchText(models.Model):
    """A searchable copy of one revision's text (derived from S3; the bucket stays the source).
    The head of each live file has is_head set; older revisions stay for history search."""

    file = models.ForeignKey(MemoryFile, on_delete=models.CASCADE, related_name="search_texts",
                             help_text="The file.")
    number = models.PositiveIntegerField(help_text="Revision number.")
    is_head = models.BooleanField(default=True, help_text="The file's current text.")
    text = models.TextField(help_text="The revision's text.")
    created_at = models.DateTimeField(default=timezone.now, help_text="When the revision was made.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["file", "number"], name="one_search_text_per_revision"),
        ]
        indexes = [models.Index(fields=["file", "is_head"], name="search_text_head")]

    def __str__(self) -> str:
        return f"search text of {self.file_id} r{self.number}"


class RetentionRule(models.Model):
    """How long one kind of a project's memory is kept. Applied by `manage.py retention` on a
    schedule, previewed on the project's Retention page; what a legal hold covers is skipped."""

    class Kind(models.TextChoices):
        FILES = "files", _("Files")
        HISTORY = "history", _("History snapshots")
        SESSIONS = "sessions", _("Session receipts and events")
        PROMPTS = "prompts", _("Stored prompts")
        IDEMPOTENCY = "idempotency", _("Idempotency records")

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="retention_rules",
                                help_text="The project whose memory it governs.")
    kind = models.CharField(max_length=20, choices=Kind.choices, help_text="What it expires.")
    glob = models.CharField(max_length=300, blank=True,
                            help_text="Files and history: which files (USER.md, AGENTS.md, "
                                      "workspace/logs/**.md, ...).")
    days = models.PositiveIntegerField(null=True, blank=True,
                                       help_text="Kept this many days (files: since their last "
                                                 "change; the rest: since made).")
    keep_revisions = models.PositiveIntegerField(
        null=True, blank=True, help_text="History: the newest this many revisions are kept.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+",
                                   help_text="Who made the rule.")
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

    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="legal_holds",
                                help_text="Where it was placed (a person's hold covers every "
                                          "project).")
    kind = models.CharField(max_length=10, choices=Kind.choices, help_text="What it covers.")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                             on_delete=models.SET_NULL, related_name="legal_holds",
                             help_text="The person, for a person's hold.")
    file = models.ForeignKey(MemoryFile, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="legal_holds", help_text="The file, for a file's hold.")
    target = models.CharField(max_length=400, help_text="What it covers, as placed (kept if "
                                                        "the person or file goes later).")
    glob = models.CharField(max_length=300, blank=True,
                            help_text="workspace/<glob>.md, for workspace files.")
    reason = models.CharField(max_length=500, help_text="Why it is held.")
    case_reference = models.CharField(max_length=200, blank=True,
                                      help_text="The case or matter it is held for.")
    placed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                                  related_name="+", help_text="Who placed it.")
    placed_at = models.DateTimeField(default=timezone.now, help_text="When.")
    storage_enforced = models.BooleanField(
        default=False, help_text="Every version it covers carries an S3 legal hold.")
    released_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="+",
                                    help_text="Who released it.")
    released_at = models.DateTimeField(null=True, blank=True, db_index=True,
                                       help_text="When it was released; empty while it stands.")

    class Meta:
        ordering = ["-placed_at"]

    def __str__(self) -> str:
        return f"legal hold #{self.pk} ({self.describe()})"

    def describe(self) -> str:
        return self.target


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


# --- Events out: webhooks and audit streams (projects/outbox.py, projects/events/) ----------


class WebhookSubscription(models.Model):
    """Where a project's events go: a receiver URL, the event types it asked for, the secret
    its deliveries are signed with (Standard Webhooks). Kind `audit` receives every audit event
    with its hash-chain fields instead (a SIEM). Never deleted, only removed: the outbox and the
    delivery log keep pointing at it."""

    class Kind(models.TextChoices):
        WEBHOOK = "webhook", _("Webhook")
        AUDIT = "audit", _("Audit stream")

    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="webhooks",
        help_text="The project whose events it receives; empty (audit streams only, superusers): "
                  "every project's and the console's own audit events.")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.WEBHOOK,
                            help_text="webhook: the event types listed; audit: every audit event.")
    url = models.URLField(max_length=2000, help_text="The receiver: http(s), a public address "
                                                     "unless MGC_WEBHOOK_ALLOWED_NETWORKS names it.")
    events = models.JSONField(default=list, blank=True,
                              help_text="Event types delivered (webhooks); empty for audit streams.")
    include_content = models.BooleanField(
        default=False, help_text="Revision texts and proposed texts go along (they may be "
                                 "personal data); without it events carry paths and numbers only.")
    description = models.CharField(max_length=200, blank=True, help_text="What it is for.")
    secret = models.CharField(max_length=100, help_text="Signing secret (whsec_...), shown once.")
    previous_secret = models.CharField(
        max_length=100, blank=True,
        help_text="The secret before the last rotation: deliveries are signed with both until "
                  "previous_secret_until.")
    previous_secret_until = models.DateTimeField(null=True, blank=True,
                                                 help_text="End of the rotation's overlap window.")
    headers = models.JSONField(default=dict, blank=True,
                               help_text="Extra request headers, e.g. Authorization for Splunk HEC.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+",
                                   help_text="Who made it.")
    created_at = models.DateTimeField(auto_now_add=True, help_text="When it was made.")
    disabled_at = models.DateTimeField(
        null=True, blank=True, help_text="Disabled (after failing for the whole retry window, or "
                                         "by an admin): its events wait until it is enabled.")
    disabled_reason = models.CharField(max_length=500, blank=True, help_text="Why it was disabled.")
    removed_at = models.DateTimeField(null=True, blank=True,
                                      help_text="Removed: nothing more is sent; the log stays.")
    last_success_at = models.DateTimeField(null=True, blank=True,
                                           help_text="When a delivery last got a 2xx answer.")
    failures = models.PositiveIntegerField(default=0,
                                           help_text="Failed attempts since the last success.")

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

    event_id = models.CharField(max_length=40, help_text="The webhook-id: one per event, kept on "
                                                         "every attempt and redelivery.")
    subscription = models.ForeignKey(WebhookSubscription, on_delete=models.CASCADE,
                                     related_name="outbox", help_text="Where it goes.")
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="+", help_text="The project it is about.")
    type = models.CharField(max_length=50, help_text="Event type, e.g. memory.revision.created.")
    body = models.JSONField(help_text="What is sent: type, timestamp, data.")
    file_ref = models.UUIDField(null=True, blank=True, db_index=True,
                                help_text="The memory file it quotes, if any (erasure scrubs it).")
    created_at = models.DateTimeField(default=timezone.now, help_text="When the change committed.")
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING,
                             help_text="Where its delivery stands.")
    attempts = models.PositiveIntegerField(default=0, help_text="Attempts made.")
    next_attempt_at = models.DateTimeField(default=timezone.now,
                                           help_text="Not attempted before this (backoff).")
    retry_from = models.DateTimeField(
        default=timezone.now, help_text="Start of its retry window (its creation, or the last "
                                        "redelivery or re-enabling).")
    queued_for = models.DateTimeField(
        null=True, blank=True,
        help_text="A worker task was enqueued to run at this time (the relay enqueues again "
                  "when it did not run: a worker killed mid-delivery).")
    lease_until = models.DateTimeField(
        null=True, blank=True, help_text="A worker is delivering it until then; no other may.")
    leased_by = models.CharField(max_length=64, blank=True, help_text="Which worker.")
    delivered_at = models.DateTimeField(null=True, blank=True, help_text="When a 2xx came back.")
    last_status = models.PositiveSmallIntegerField(null=True, blank=True,
                                                   help_text="HTTP status of the last attempt.")
    last_error = models.CharField(max_length=300, blank=True, help_text="The last attempt's error.")
    scrubbed_at = models.DateTimeField(null=True, blank=True,
                                       help_text="Texts of an erased profile taken out.")

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

    event = models.ForeignKey(OutboxEvent, on_delete=models.CASCADE, related_name="log",
                              help_text="The event attempted.")
    number = models.PositiveIntegerField(help_text="1, 2, 3... per event.")
    worker = models.CharField(max_length=64, blank=True, help_text="The worker that tried.")
    started_at = models.DateTimeField(default=timezone.now, help_text="When the request began.")
    finished_at = models.DateTimeField(
        null=True, blank=True, help_text="When it ended; empty if the worker stopped mid-request.")
    status_code = models.PositiveSmallIntegerField(null=True, blank=True,
                                                   help_text="The receiver's HTTP status.")
    error = models.CharField(max_length=300, blank=True,
                             help_text="What went wrong: refused target, timeout, connection.")
    response_excerpt = models.CharField(max_length=500, blank=True,
                                        help_text="The start of the receiver's answer.")
    duration_ms = models.PositiveIntegerField(null=True, blank=True, help_text="How long it took.")

    class Meta:
        ordering = ["-started_at", "-id"]

    def __str__(self) -> str:
        return f"attempt {self.number} of {self.event_id}"

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300
