"""What agent runners hold and leave behind: tokens, S3 credentials, sessions and their events,
idempotency records."""

import uuid

from django.conf import settings
from django.db import models

from projects.models.projects import Agent


class AgentToken(models.Model):
    """A runner's bearer token for one agent. Only its sha256 is stored; shown once."""

    agent = models.ForeignKey(
        Agent, on_delete=models.CASCADE, related_name="tokens", help_text="The agent this token acts as."
    )
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. 'prod runner'.")
    prefix = models.CharField(max_length=16, help_text="First characters, to recognise it.")
    token_hash = models.CharField(max_length=64, unique=True, help_text="sha256 of the token.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who created it.",
    )
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

    token = models.ForeignKey(
        AgentToken,
        on_delete=models.CASCADE,
        related_name="credentials",
        help_text="The runner token these credentials belong to.",
    )
    agent = models.ForeignKey(
        Agent,
        on_delete=models.CASCADE,
        related_name="credentials",
        help_text="The agent whose runner uses them.",
    )
    iam_user = models.CharField(max_length=64, help_text="Name of the IAM user in the object store.")
    access_key_id = models.CharField(max_length=128, help_text="The access key id (not secret).")
    policy = models.JSONField(default=dict, help_text="The policy attached when last written.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who issued them.",
    )
    created_at = models.DateTimeField(auto_now_add=True, help_text="When they were issued.")
    revoked_at = models.DateTimeField(
        null=True, blank=True, help_text="When the access key (or the user) was deleted."
    )

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["token"],
                condition=models.Q(revoked_at__isnull=True),
                name="one_live_credential_per_token",
            ),
        ]

    def __str__(self) -> str:
        return f"S3 credentials {self.access_key_id} of {self.token}"

    def audit_label(self) -> tuple[str, dict]:
        return "credential", {"key": self.access_key_id, "token": str(self.token)}


class AgentSession(models.Model):
    """One run of an agent for a user: what the pre hook injected, then what happened."""

    id = models.UUIDField(
        primary_key=True,
        default=uuid.uuid4,
        editable=False,
        help_text="Session id the runner sends back to post/tool/error.",
    )
    agent = models.ForeignKey(
        Agent, on_delete=models.CASCADE, related_name="sessions", help_text="The agent that ran."
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="agent_sessions",
        help_text="The employee the agent worked for.",
    )
    external_ref = models.CharField(
        max_length=200, blank=True, help_text="The runner's own session id, if it sent one."
    )
    prompt_sha256 = models.CharField(max_length=64, help_text="sha256 of the injected prompt.")
    total_tokens = models.PositiveIntegerField(default=0, help_text="Tokens of the prompt.")
    tokenizer = models.CharField(max_length=60, blank=True, help_text="Encoding that counted.")
    receipt = models.JSONField(default=list, help_text="Per section: files and revisions injected.")
    prompt_stored = models.BooleanField(
        default=False, help_text="The exact prompt is kept in S3 under its sha256 (_prompts/)."
    )
    budget = models.PositiveIntegerField(
        null=True, blank=True, help_text="The manifest's total token budget then."
    )
    truncated = models.BooleanField(default=False, help_text="A section was cut to its cap or to the budget.")
    over_budget = models.BooleanField(
        default=False, help_text="Before any cut to the budget, the prompt was over it."
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True, help_text="Pre hook time.")
    ended_at = models.DateTimeField(null=True, blank=True, help_text="When the post hook came.")
    bucket_checked = models.BooleanField(
        null=True,
        blank=True,
        help_text="The pre hook looked at what runners may have written to the bucket (false: "
        "storage could not be listed; empty: a session from before this was kept).",
    )
    prompt_removed = models.JSONField(
        null=True,
        blank=True,
        help_text="Why the kept prompt is gone: {how: erased|expired, at, by, reason or rule}.",
    )
    request_key = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text="The pre hook's Idempotency-Key, if the runner sent one: the same key again "
        "(a retry after a lost answer) gets this session, not a second one.",
    )
    carried_indexed = models.BooleanField(
        default=False,
        help_text="Its receipt's files are in SessionFile (done by its post hook, or by the first "
        "look at where a line went): kept off the pre hook's path.",
    )
    profile = models.ForeignKey(
        "projects.MemoryFile",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The person's profile (USER.md) the prompt injected, if any. The reference is "
        "the erasure's guard on the pre hook's path: the database checks it when the session "
        "commits, so a session cannot commit against a profile an erasure removed meanwhile.",
    )
    via = models.CharField(
        max_length=10,
        blank=True,
        default="",
        help_text="mcp: opened by the console's own MCP endpoint, whose user (if any) signed in "
        "through the identity provider; the agent's writes are then theirs to answer for too "
        '("agent X, on behalf of person Y, via MCP"). Empty: a runner\'s session.',
    )

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "request_key"],
                condition=~models.Q(request_key=""),
                name="session_request_key_once",
            ),
        ]
        indexes = [
            models.Index(
                fields=["created_at"],
                condition=models.Q(carried_indexed=False),
                name="session_carried_pending",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.agent} session {str(self.id)[:8]}"

    def audit_label(self) -> tuple[str, dict]:
        return "session", {"agent": self.agent.name, "id": str(self.id)[:8]}


class PendingPrompt(models.Model):
    """A prompt a pre hook returned, kept here until S3 has it (memory.receipts): the session
    row and this one commit together, so the exact prompt is durable when the runner gets it,
    and the PUT to S3 runs after the answer. A crash before the PUT leaves the row, and the
    worker's sweep stores it. Erasure and retention delete the row with the S3 object."""

    project = models.ForeignKey(
        "projects.Project", on_delete=models.CASCADE, related_name="+", help_text="The project."
    )
    sha256 = models.CharField(max_length=64, help_text="sha256 of the prompt: its S3 name.")
    text = models.TextField(help_text="The prompt's exact text.")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The person it was assembled for (a hold over them holds the stored prompt).",
    )
    created_at = models.DateTimeField(auto_now_add=True, help_text="When the pre hook kept it.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "sha256"], name="pending_prompt_once"),
        ]

    def __str__(self) -> str:
        return f"pending prompt {self.sha256[:12]}"


class SessionFile(models.Model):
    """One file, at one revision, that a session's prompt carried (from its receipt): what
    "where did this line go" searches. The file is named by id, not by a foreign key, so the
    row outlives an erasure of the file (who was told, and when, stays; no text is here).
    Written after the pre hook (memory.carried.index_sessions), never on its path."""

    session = models.ForeignKey(
        AgentSession, on_delete=models.CASCADE, related_name="carried", help_text="The session."
    )
    file_ref = models.UUIDField(help_text="The MemoryFile's id.")
    path = models.CharField(max_length=400, help_text="The path as the receipt names it.")
    revision = models.PositiveIntegerField(help_text="The revision injected.")
    tag = models.CharField(max_length=80, help_text="The section that carried it.")
    cut = models.BooleanField(
        default=False, help_text="The section was truncated: some of the file's lines may have been left out."
    )
    created_at = models.DateTimeField(help_text="When the session's prompt was assembled.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "file_ref"], name="one_session_file"),
        ]
        indexes = [
            models.Index(fields=["file_ref", "revision"], name="session_file_revision"),
            models.Index(fields=["file_ref", "-created_at"], name="session_file_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.path} r{self.revision} in {self.session_id}"


class IdempotencyRecord(models.Model):
    """One runner request sent with an Idempotency-Key: a retry with the same key and body gets
    the first answer back and writes nothing (kept in the database, so on any worker or host).
    A post hook's writes are noted as each commits, so a retry after a crash goes on from the
    first write that did not."""

    class State(models.TextChoices):
        RUNNING = "running", "running"
        DONE = "done", "done"

    agent = models.ForeignKey(
        Agent, on_delete=models.CASCADE, related_name="+", help_text="The agent whose token sent the request."
    )
    key = models.CharField(max_length=200, help_text="The Idempotency-Key header.")
    endpoint = models.CharField(max_length=50, help_text="Which endpoint, e.g. hooks/post.")
    request_sha256 = models.CharField(max_length=64, help_text="sha256 of endpoint and body.")
    state = models.CharField(
        max_length=10,
        choices=State.choices,
        default=State.RUNNING,
        help_text="running until the answer is stored.",
    )
    lease_until = models.DateTimeField(
        help_text="A worker on another host is on it until then (its heartbeat renews it); after "
        "that a retry may take over."
    )
    owner = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text="The attempt that runs it: machine, process id and start, a random part. Each "
        "write checks it is still the owner before it commits; empty once released.",
    )
    claimed_at = models.DateTimeField(null=True, blank=True, help_text="When the owner took the request on.")
    partial = models.JSONField(
        default=dict, blank=True, help_text="Results of the writes committed so far, by index."
    )
    status_code = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="HTTP status of the answer."
    )
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

    session = models.ForeignKey(
        AgentSession, on_delete=models.CASCADE, related_name="events", help_text="The session."
    )
    kind = models.CharField(max_length=10, choices=Kind.choices, help_text="Which hook.")
    created_at = models.DateTimeField(auto_now_add=True, help_text="When it was recorded.")
    payload = models.JSONField(default=dict, help_text="What the runner sent, and the outcome.")

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.kind} in {self.session_id}"


class McpSession(models.Model):
    """One MCP session at the console's own endpoint (/mcp/): who opened it (a person signed
    in through the identity provider, or a runner token), the agent chosen (by the URL or a
    tool) and the console session its pre hook opened. Its id is the Mcp-Session-Id the
    client sends back; a request from anyone else finds no such session."""

    id = models.UUIDField(
        primary_key=True, default=uuid.uuid4, editable=False, help_text="The Mcp-Session-Id header's value."
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="The person whose access token opened it (empty for a runner token).",
    )
    token = models.ForeignKey(
        AgentToken,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="The runner token that opened it, for an agent host without a person.",
    )
    agent = models.ForeignKey(
        Agent,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="The agent chosen, by the endpoint's URL or the memory_use_agent tool.",
    )
    session = models.ForeignKey(
        AgentSession,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The console session the pre hook opened for the chosen agent.",
    )
    protocol_version = models.CharField(max_length=20, help_text="The MCP revision agreed at initialize.")
    client = models.CharField(max_length=200, blank=True, help_text="The client's name and version.")
    created_at = models.DateTimeField(auto_now_add=True, help_text="When the client initialized.")
    last_seen_at = models.DateTimeField(help_text="The last request (to within a minute).")
    ended_at = models.DateTimeField(null=True, blank=True, help_text="When it ended.")
    ended_reason = models.CharField(
        max_length=40, blank=True, help_text="client_left, idle, signed_out, agent_changed."
    )

    class Meta:
        indexes = [models.Index(fields=["ended_at", "last_seen_at"], name="mcp_session_idle")]

    def __str__(self) -> str:
        return f"MCP session {str(self.id)[:8]}"
