"""Records of the console. Memory content lives in S3; these rows say what it is and who wrote it."""

import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.utils import timezone
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
    role = models.CharField(max_length=20, choices=Role.choices, help_text="What the person may do.")
    created_at = models.DateTimeField(auto_now_add=True, help_text="When the membership was granted.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "project"], name="one_membership_per_project"),
        ]
        ordering = ["project__name", "user__username"]

    def __str__(self) -> str:
        return f"{self.user} in {self.project} as {self.role}"


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
    snapshot_key = models.CharField(
        max_length=1024, blank=True, help_text="S3 key of the immutable copy; empty for a deletion.",
    )
    is_deletion = models.BooleanField(default=False, help_text="A tombstone: the file was deleted.")
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

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.agent} session {str(self.id)[:8]}"


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

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"flag on {self.file} r{self.revision.number if self.revision_id else '?'}"


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
