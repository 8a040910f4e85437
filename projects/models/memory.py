"""Memory files and their history: what the bucket holds, as the console recorded it."""

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from projects import system_text
from projects.memory import layout
from projects.models.projects import Agent, Project


class MemoryFile(models.Model):
    class Scope(models.TextChoices):
        AGENT = layout.SCOPE_AGENT, _("Agent")
        USER = layout.SCOPE_USER, _("User")
        WORKSPACE = layout.SCOPE_WORKSPACE, _("Workspace")

    id = models.UUIDField(
        primary_key=True,
        default=uuid.uuid4,
        editable=False,
        help_text="Immutable id; names the file's history folder in S3.",
    )
    project = models.ForeignKey(
        Project,
        on_delete=models.CASCADE,
        related_name="files",
        help_text="Owning project.",
    )
    scope = models.CharField(max_length=20, choices=Scope.choices, help_text="Whose memory it is.")
    agent = models.ForeignKey(
        Agent,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="files",
        help_text="The agent, for SOUL.md / AGENTS.md / TOOLS.md.",
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="memory_files",
        help_text="The employee, for USER.md.",
    )
    path = models.CharField(
        max_length=layout.MAX_PATH_CHARS,
        help_text="File name (agent/user scope) or workspace-relative path.",
    )
    key = models.CharField(max_length=1024, help_text="S3 key of the head object.")
    head = models.ForeignKey(
        "Revision",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Latest revision (one query to the head).",
    )
    head_etag = models.CharField(
        max_length=100,
        blank=True,
        help_text="ETag of the head object as the console wrote it; a different one in S3 "
        "means someone wrote to the bucket directly.",
    )
    refused_etag = models.CharField(
        max_length=100,
        blank=True,
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
        MemoryFile,
        on_delete=models.CASCADE,
        related_name="revisions",
        help_text="The file this revision belongs to.",
    )
    number = models.PositiveIntegerField(help_text="1..n per file, no gaps.")
    sha256 = models.CharField(max_length=64, help_text="sha256 of the UTF-8 content.")
    size = models.PositiveIntegerField(help_text="Content size in bytes.")
    author_kind = models.CharField(
        max_length=20,
        choices=AuthorKind.choices,
        help_text="Who wrote it: person, agent, external.",
    )
    author_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The person, when a person wrote it.",
    )
    author_agent = models.ForeignKey(
        Agent,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The agent, when an agent wrote it.",
    )
    author_label = models.CharField(
        max_length=200,
        blank=True,
        help_text="Author as shown, kept if the account goes away.",
    )
    session_ref = models.CharField(
        max_length=64,
        blank=True,
        help_text="Agent session id when an agent's hook wrote it.",
    )
    message = models.CharField(max_length=500, blank=True, help_text="Why the change was made.")
    message_code = models.CharField(
        max_length=50,
        blank=True,
        help_text="Set when the console wrote the message (system_text.MESSAGES): shown in the "
        "reader's language; `message` keeps its English text.",
    )
    message_params = models.JSONField(default=dict, blank=True, help_text="The parameters of message_code.")
    snapshot_key = models.CharField(
        max_length=1024,
        blank=True,
        help_text="S3 key of the immutable copy; empty for a deletion.",
    )
    is_deletion = models.BooleanField(default=False, help_text="A tombstone: the file was deleted.")
    expired_rule = models.CharField(
        max_length=300,
        blank=True,
        help_text="On the tombstone a retention rule wrote when the file expired: the rule.",
    )
    purged_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When this revision's stored text was deleted (retention); the row stays.",
    )
    request_ref = models.CharField(
        max_length=120,
        blank=True,
        default="",
        help_text="The runner request (and write) that made it, when it carried an Idempotency-Key: "
        "a retry of that request finds its write here even if another save recorded it first.",
    )
    restored_from = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Number of the revision this one restores.",
    )
    tokens = models.JSONField(
        default=dict,
        blank=True,
        help_text='Tokens of this revision\'s part of a prompt, per encoding ({"o200k_base": n}): '
        "counted once, by the first pre hook that injects it (runners.context).",
    )
    origin = models.JSONField(
        null=True,
        blank=True,
        help_text="Who wrote this revision's lines (people, agents, external), as a prompt's fence "
        "names them: found once, from the line maps, by the first pre hook that injects it "
        "(runners.context); empty until then.",
    )
    merged_base = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="On a save that settled a three-way merge: the revision the person had opened "
        "(the merge base); its lines keep their authors.",
    )
    renamed_from = models.ForeignKey(
        MemoryFile,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="On a renamed file's first revision at its new path: the file it was.",
    )
    renamed_to = models.ForeignKey(
        MemoryFile,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="On the tombstone a rename leaves at the old path: the file it became.",
    )
    findings = models.JSONField(
        default=list,
        blank=True,
        help_text="Likely personal data and secrets the scanner saw (kind, place, masked excerpt).",
    )
    poisoning = models.JSONField(
        default=dict,
        blank=True,
        help_text="What the poisoning scanner found in the lines this revision brought (memory.quarantine): "
        "findings (family, span, reason, masked excerpt), the guard model's verdict, who decided; "
        "on a released write, who released it.",
    )
    created_at = models.DateTimeField(auto_now_add=True, help_text="When it was recorded.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["file", "number"], name="revision_number_per_file"),
        ]
        indexes = [
            # A session's page lists what it wrote.
            models.Index(
                fields=["session_ref"], condition=~models.Q(session_ref=""), name="revision_session"
            ),
            # Each runner write asks whether its request made a revision already (a retry):
            # without it, the answer read every revision of the file (10,000: 3 ms a post).
            models.Index(
                fields=["file", "request_ref"], condition=~models.Q(request_ref=""), name="revision_request"
            ),
        ]
        ordering = ["file", "-number"]

    def __str__(self) -> str:
        return f"{self.file} r{self.number}"

    @property
    def display_message(self) -> str:
        """The message in the reader's language when the console wrote it, else as stored."""
        if not self.message_code:
            return self.message
        return system_text.render(system_text.MESSAGES, self.message_code, self.message_params, self.message)

    @property
    def author_shown(self) -> str:
        return system_text.actor_shown(self.author_label)


class LineMap(models.Model):
    """Where each line of one revision came from (memory.linemaps): stored by the save that
    made the revision, as a skip-delta over revision `base`, so blame of any revision is one
    query of at most log2(n) + 1 rows. No text: it stays when texts are purged."""

    revision = models.OneToOneField(
        Revision,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="line_map",
        help_text="The revision whose lines this maps.",
    )
    file = models.ForeignKey(
        MemoryFile, on_delete=models.CASCADE, related_name="+", help_text="The revision's file."
    )
    number = models.PositiveIntegerField(help_text="The revision's number.")
    base = models.PositiveIntegerField(
        help_text="The revision number this map is stored against (0: written out whole)."
    )
    lines = models.PositiveIntegerField(help_text="How many lines the revision has.")
    data = models.BinaryField(help_text="The segments (linemaps.encode).")
    approximate = models.BooleanField(
        default=False,
        help_text="Filled in after the texts of earlier revisions were deleted: a line that looks "
        "new here may be older.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["file", "number"], name="one_line_map_per_revision"),
        ]

    def __str__(self) -> str:
        return f"line map of {self.file_id} r{self.number}"


class RefusedWrite(models.Model):
    """An object found in the bucket that breaks the console's own rules for a memory file (too
    large, not UTF-8 text, a NUL, a name the layout refuses): never adopted, injected or served
    raw. The file's recorded head stays its head; admins see it and can delete it."""

    class Reason(models.TextChoices):
        TOO_LARGE = "too_large", _("over the size limit")
        NOT_TEXT = "not_text", _("not UTF-8 text")
        BINARY = "binary", _("holds NUL bytes")
        NAME = "name", _("a name the console refuses")
        NOT_DIRECT = "not_direct", _("a direct write the hook policy does not allow")
        POISONED = "poisoned", _("instructions planted in memory")

    class State(models.TextChoices):
        PRESENT = "present", _("in storage")
        REPLACED = "replaced", _("replaced by a later write")
        DELETED = "deleted", _("deleted")

    project = models.ForeignKey(
        Project,
        on_delete=models.CASCADE,
        related_name="refused_writes",
        help_text="The project whose prefix holds it.",
    )
    file = models.ForeignKey(
        MemoryFile,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="refused_writes",
        help_text="The file whose key it is at; empty for a refused name.",
    )
    key = models.CharField(max_length=1024, help_text="Its S3 key.")
    etag = models.CharField(max_length=100, help_text="Its ETag when found.")
    version_id = models.CharField(
        max_length=200, blank=True, help_text="Its version, when the bucket keeps versions."
    )
    size = models.BigIntegerField(help_text="Its size in bytes.")
    reason = models.CharField(max_length=20, choices=Reason.choices, help_text="Which rule it breaks.")
    detail = models.JSONField(
        default=dict, blank=True, help_text="The rule's figures: limit, position of a bad byte."
    )
    writer_agent = models.ForeignKey(
        Agent,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The agent whose runner provably wrote it (signed metadata), if any.",
    )
    writer_session = models.CharField(
        max_length=64, blank=True, help_text="The session its signed metadata names."
    )
    writer_label = models.CharField(max_length=200, help_text="Who wrote it, as shown.")
    found_at = models.DateTimeField(auto_now_add=True, help_text="When the console found it.")
    state = models.CharField(
        max_length=10,
        choices=State.choices,
        default=State.PRESENT,
        db_index=True,
        help_text="Whether it is still in storage.",
    )
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The admin who deleted it.",
    )
    resolved_at = models.DateTimeField(null=True, blank=True, help_text="When it was deleted or replaced.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "key", "etag"], name="one_refusal_per_object"),
        ]
        ordering = ["-found_at"]

    def __str__(self) -> str:
        return f"refused write at {self.key}"

    @property
    def relative_key(self) -> str:
        """The key under the project's prefix, as people read it (workspace/..., agents/...)."""
        return self.key.removeprefix(self.project.prefix)


class SearchText(models.Model):
    """A searchable copy of one revision's text (derived from S3; the bucket stays the source).
    The head of each live file has is_head set; older revisions stay for history search."""

    file = models.ForeignKey(
        MemoryFile, on_delete=models.CASCADE, related_name="search_texts", help_text="The file."
    )
    number = models.PositiveIntegerField(help_text="Revision number.")
    is_head = models.BooleanField(default=True, help_text="The file's current text.")
    text = models.TextField(help_text="The revision's text.")
    created_at = models.DateTimeField(default=timezone.now, help_text="When the revision was made.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["file", "number"], name="one_search_text_per_revision"),
        ]
        # No index holds is_head: a save clears it on the old head's copy, and an indexed
        # column would make that update rewrite every index entry, the full-text ones of the
        # whole old text included (memory/indexing.py). The head's copy is found by number.

    def __str__(self) -> str:
        return f"search text of {self.file_id} r{self.number}"
