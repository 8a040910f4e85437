"""A person's rights, on the clock: their requests (access, copy, correction, erasure,
restriction, withdrawal of consent), the records kept for a regulator (answers, destruction
acts, under S3 Object Lock), and withdrawn consent."""

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from projects.models.memory import Revision
from projects.models.projects import Project


class SubjectRequest(models.Model):
    """One request from a person about their data, answered under 152-FZ, GDPR or both."""

    class Kind(models.TextChoices):
        ACCESS = "access", _("Access: what is held")
        COPY = "copy", _("Copy and portability")
        CORRECTION = "correction", _("Correction")
        ERASURE = "erasure", _("Erasure")
        RESTRICTION = "restriction", _("Restriction or objection")
        WITHDRAWAL = "withdrawal", _("Withdrawal of consent")

    class Law(models.TextChoices):
        FZ152 = "152-fz", _("152-FZ")
        GDPR = "gdpr", _("GDPR")
        BOTH = "both", _("152-FZ and GDPR")

    class Channel(models.TextChoices):
        CONSOLE = "console", _("The console (signed in)")
        EMAIL = "email", _("E-mail")
        POST = "post", _("Letter")
        IN_PERSON = "in_person", _("In person")
        PHONE = "phone", _("Phone")
        OTHER = "other", _("Other")

    class State(models.TextChoices):
        RECEIVED = "received", _("Received")
        IDENTITY_CHECKED = "identity_checked", _("Identity checked")
        EXTENDED = "extended", _("Extended")
        ANSWERED = "answered", _("Answered")
        REFUSED = "refused", _("Refused")
        CLOSED = "closed", _("Closed")

    class Ground(models.TextChoices):
        UNLAWFUL = "unlawful", _("Unlawful processing (152-FZ art. 21(3))")
        PURPOSE = "purpose_achieved", _("Purpose achieved (152-FZ art. 21(4))")
        CONSENT = "consent_withdrawn", _("Consent withdrawn (152-FZ art. 21(5))")

    class Job(models.TextChoices):
        NONE = "", _("Nothing running")
        QUEUED = "queued", _("Waiting for the worker")
        RUNNING = "running", _("Running")
        DONE = "done", _("Done")
        FAILED = "failed", _("Failed")

    OPEN_STATES = (State.RECEIVED, State.IDENTITY_CHECKED, State.EXTENDED)

    project = models.ForeignKey(
        Project,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="subject_requests",
        help_text="The project it is handled in; empty: the person everywhere (the console's register).",
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="subject_requests",
        help_text="The person's account, when they have one.",
    )
    name = models.CharField(max_length=200, blank=True, help_text="The person's name as given.")
    email = models.EmailField(blank=True, help_text="The person's e-mail address as given.")
    phone = models.CharField(max_length=40, blank=True, help_text="A phone number to search for, if given.")
    kind = models.CharField(max_length=20, choices=Kind.choices, help_text="What the person asks for.")
    law = models.CharField(max_length=10, choices=Law.choices, help_text="The law(s) it is answered under.")
    ground = models.CharField(
        max_length=20,
        choices=Ground.choices,
        blank=True,
        help_text="An erasure's ground under 152-FZ art. 21 (it sets the clock).",
    )
    language = models.CharField(
        max_length=5,
        choices=settings.LANGUAGES,
        default="en",
        help_text="The language the answer is written in (the person's).",
    )
    received_at = models.DateTimeField(default=timezone.now, help_text="When the request came in.")
    channel = models.CharField(
        max_length=20, choices=Channel.choices, default=Channel.CONSOLE, help_text="How it came in."
    )
    details = models.TextField(blank=True, help_text="What the person wrote, or a summary.")
    handler = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="handled_subject_requests",
        help_text="Who handles it (reminders go to them).",
    )
    state = models.CharField(
        max_length=20,
        choices=State.choices,
        default=State.RECEIVED,
        db_index=True,
        help_text="Where it stands.",
    )
    due_on = models.DateField(db_index=True, help_text="The deadline that counts: the earliest of its laws'.")
    deadlines = models.JSONField(
        default=dict, help_text="Each law's deadline and article: {law: {due, article}}."
    )
    identity_checked_at = models.DateTimeField(null=True, blank=True, help_text="When identity was checked.")
    identity_note = models.CharField(max_length=500, blank=True, help_text="How identity was checked.")
    extended_at = models.DateTimeField(
        null=True, blank=True, help_text="When the deadline was extended (once)."
    )
    extension_reason = models.TextField(blank=True, help_text="The reasoned notice sent to the person.")
    refusal_ground = models.TextField(blank=True, help_text="Why it was refused, as told to the person.")
    answer_note = models.TextField(blank=True, help_text="What was done, as told to the person.")
    blocked_note = models.CharField(
        max_length=500, blank=True, help_text="What stopped the last attempt to answer (a legal hold...)."
    )
    answered_at = models.DateTimeField(null=True, blank=True, help_text="When it was answered.")
    closed_at = models.DateTimeField(null=True, blank=True, help_text="When it was closed.")
    due_soon_sent_at = models.DateTimeField(
        null=True, blank=True, help_text="When the due-soon reminder went (once per deadline)."
    )
    overdue_sent_at = models.DateTimeField(
        null=True, blank=True, help_text="When the overdue reminder went (once per deadline)."
    )
    job = models.CharField(
        max_length=20, blank=True, help_text="The background work running for it: search, package, erasure."
    )
    job_state = models.CharField(
        max_length=10, choices=Job.choices, blank=True, default="", help_text="Where that work stands."
    )
    job_error = models.CharField(max_length=500, blank=True, help_text="Why it failed, for people.")
    job_at = models.DateTimeField(null=True, blank=True, help_text="When its state last changed.")
    inventory = models.JSONField(
        default=dict,
        blank=True,
        help_text="What the last search found (counts and mentions), for the handler.",
    )
    inventory_at = models.DateTimeField(null=True, blank=True, help_text="When that search ran.")
    selection = models.JSONField(
        default=dict,
        blank=True,
        help_text="The handler's choices: mentions left out, third parties' details kept (with reasons).",
    )
    revisions = models.ManyToManyField(
        Revision,
        blank=True,
        related_name="subject_requests",
        help_text="Revisions that answered it (a correction's saves).",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who registered it.",
    )
    created_at = models.DateTimeField(auto_now_add=True, help_text="When it was registered.")

    class Meta:
        ordering = ["due_on", "pk"]
        permissions = [
            ("handle_all_subject_requests", "Can handle subjects' requests of every project"),
        ]

    def __str__(self) -> str:
        return f"subject request #{self.pk}"

    def audit_label(self) -> tuple[str, dict]:
        return "subject_request", {"id": self.pk, "kind": self.kind}

    @property
    def is_open(self) -> bool:
        return self.state in self.OPEN_STATES

    @property
    def subject_label(self) -> str:
        """Whom it is about, as people read it: the account, or the name and e-mail given."""
        if self.user_id:
            full = self.user.get_full_name()
            return f"{full} ({self.user.get_username()})" if full else self.user.get_username()
        return " ".join(x for x in (self.name, f"<{self.email}>" if self.email else "") if x) or "?"


class SubjectDocument(models.Model):
    """A record kept for a regulator: an answer package or a destruction act, in S3 under
    Object Lock retention (3 years by default). Its rows are never deleted."""

    class Kind(models.TextChoices):
        PACKAGE = "package", _("Answer package")
        ACT = "act", _("Destruction act with the audit extract")

    request = models.ForeignKey(
        SubjectRequest,
        on_delete=models.PROTECT,
        related_name="documents",
        help_text="The request it answers.",
    )
    kind = models.CharField(max_length=10, choices=Kind.choices, help_text="What it is.")
    bucket = models.CharField(max_length=200, help_text="The bucket it is kept in.")
    key = models.CharField(max_length=1024, help_text="Its S3 key.")
    version_id = models.CharField(max_length=200, blank=True, help_text="Its S3 version (read by it).")
    sha256 = models.CharField(max_length=64, help_text="sha256 of the stored bytes.")
    size = models.PositiveBigIntegerField(help_text="Its size in bytes.")
    retain_until = models.DateTimeField(null=True, blank=True, help_text="S3 Object Lock retention until.")
    lock_mode = models.CharField(
        max_length=20, blank=True, help_text="COMPLIANCE or GOVERNANCE; empty: the bucket has no Object Lock."
    )
    manifest = models.JSONField(default=dict, help_text="Every file inside with its sha256.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who made it.",
    )
    created_at = models.DateTimeField(default=timezone.now, help_text="When it was made.")

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [models.UniqueConstraint(fields=["bucket", "key"], name="one_document_per_key")]

    def __str__(self) -> str:
        return f"{self.kind} of subject request #{self.request_id}"

    def audit_label(self) -> tuple[str, dict]:
        return "subject_document", {"id": self.request_id, "kind": self.kind}

    @property
    def filename(self) -> str:
        return self.key.rsplit("/", 1)[-1]


class ConsentWithdrawal(models.Model):
    """A person withdrew their consent: agents' writes to their profile are refused (in one
    project, or everywhere) until it is given again, and the erasure clock runs."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="consent_withdrawals",
        help_text="The person.",
    )
    project = models.ForeignKey(
        Project,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="Where; empty: every project.",
    )
    request = models.ForeignKey(
        SubjectRequest,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="withdrawals",
        help_text="The request that recorded it.",
    )
    withdrawn_at = models.DateTimeField(default=timezone.now, help_text="When consent was withdrawn.")
    erase_by = models.DateField(help_text="By when the profile is to be erased (152-FZ art. 21(5): 30 days).")
    restored_at = models.DateTimeField(
        null=True, blank=True, db_index=True, help_text="When consent was given again; empty while withdrawn."
    )

    class Meta:
        ordering = ["-withdrawn_at"]

    def __str__(self) -> str:
        return f"consent withdrawn by user {self.user_id}"
