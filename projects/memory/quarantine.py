"""Poisoned writes held for a person (issue 37): the poisoning scanner on the save path.

Every write that brings text into memory passes `store.write_revision` (the post hook, the
sandbox, both MCP servers, the memory tool, an approved proposal, the editor, restore, merge)
or `adoption.adopt_s3_state` (what a runner wrote to the bucket directly). Both call
`screen()` here, so no door has to remember it: the rules of memory/poisoning.py, and the
guard model's second opinion when one is configured (memory/classifier.py), over the lines the
write brings (a line the head held already was judged when it came).

What happens to a write with a finding depends only on who wrote it:
- a person saving in the console: written, with the findings on the revision (the editor
  warned them as they typed, as it does for personal data);
- an agent, by whichever door: never written. write_revision raises `Quarantined` before it
  touches the bucket, and the store, once it let go of the file's lock, makes the write a
  proposal marked quarantined (`hold`). The post hook answers it as
  {"status": "proposed", "code": "quarantined", "findings": [family, ...]};
- a direct write to the bucket: a refused write (memory/refusals.py, reason `poisoned`), never
  adopted nor injected, shown to admins and reviewers with its findings.

Only an admin or a compliance officer releases a quarantined write, and a profile's also needs
its person's consent (runners/proposals.py); the agent has no door to it. Its revision then
carries the findings and who released it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext as _

from projects.audit import Actor, audit_record
from projects.memory import classifier, layout, poisoning
from projects.memory.errors import StoreError
from projects.models import AgentSession, Membership, MemoryFile, Proposal, Revision

DETECTED = "memory.poisoning.quarantine"  # audit actions; the webhook events are in outbox
RELEASED = "memory.poisoning.release"

_KINDS = {
    layout.SCOPE_AGENT: poisoning.KIND_AGENT,
    layout.SCOPE_USER: poisoning.KIND_PROFILE,
    layout.SCOPE_WORKSPACE: poisoning.KIND_WORKSPACE,
}


@dataclass(frozen=True)
class Screening:
    """What the scanner found in the lines a write brings, and who decided."""

    findings: list[dict] = field(default_factory=list)
    classifier: dict = field(default_factory=dict)
    decided_by: str = "rules"

    @property
    def suspect(self) -> bool:
        return bool(self.findings)

    @property
    def families(self) -> list[str]:
        return poisoning.families(self.findings)

    def as_dict(self) -> dict:
        """What a revision, a proposal or a refused write keeps: empty when nothing was found
        and no guard model was asked."""
        if not self.findings and self.classifier.get("status", classifier.OFF) == classifier.OFF:
            return {}
        return {"findings": self.findings, "classifier": self.classifier, "decided_by": self.decided_by}


class Quarantined(StoreError):
    """An agent's write with findings: not applied, held as a quarantined proposal."""

    code = "quarantined"

    def __init__(self, screening: Screening, proposal: Proposal | None = None):
        super().__init__(
            _("Held for review: the text looks like instructions planted in memory (%(families)s).")
            % {"families": ", ".join(screening.families)}
        )
        self.screening = screening
        self.proposal = proposal

    @property
    def families(self) -> list[str]:
        return self.screening.families


RELEASERS = (Membership.Role.ADMIN, Membership.Role.COMPLIANCE)


def role_of(user, project) -> str | None:
    """The person's role in the project (superusers are admins), as governance.permissions
    reads it; here so that the release rule lives beside the quarantine it ends."""
    if user is None or not user.is_authenticated:
        return None
    if user.is_superuser:
        return Membership.Role.ADMIN
    return Membership.objects.filter(user=user, project=project).values_list("role", flat=True).first()


def releases(role: str | None) -> bool:
    """An admin or a compliance officer releases a held write; an agent is no person with a
    role, so none of its doors (token, S3 credentials, MCP, memory tool) leads here."""
    return role in RELEASERS


def consents(user, proposal: Proposal) -> bool:
    """The person whose profile (USER.md) the proposal changes: their consent is asked."""
    file = proposal.file
    return file.scope == MemoryFile.Scope.USER and file.user_id == user.pk


def held_for_people(actor: Actor) -> bool:
    """Whose writes with findings are held rather than applied: everyone's but a person's in
    the console (an agent by any door; direct writes are refused in adoption)."""
    return actor.kind != Revision.AuthorKind.PERSON and actor.agent is not None


CONTEXT_LINES = 40  # around what a write brings: enough for the comment or fence it sits in


def screen(file: MemoryFile, text: str, old_text=None) -> Screening:
    """The scanner over what `text`, the new content of `file`, brings. `old_text` is the
    head's text (or a function that reads it): lines it held already were judged when they
    came, so the rules read the new lines with CONTEXT_LINES around them (an append to a long
    file costs what the append is), and a finding on an old line is not the write's. The
    guard model, when configured, reads the new lines."""
    kind = _KINDS.get(file.scope, poisoning.KIND_WORKSPACE)
    trusted = settings.MGC_POISON_TRUSTED_DOMAINS
    old = old_text() if callable(old_text) else (old_text or "")
    old_lines = set(old.split("\n")) if old else set()
    lines = text.split("\n")
    new_at = [i for i, line in enumerate(lines) if line.strip() and line not in old_lines]
    if not new_at:
        return Screening()
    first = max(0, new_at[0] - CONTEXT_LINES)
    last = min(len(lines), new_at[-1] + 1 + CONTEXT_LINES)
    window = "\n".join(lines[first:last])
    offset = sum(len(line) + 1 for line in lines[:first])
    brought = set(new_at)
    found = [
        _placed(f, first, offset)
        for f in poisoning.scan(window, kind=kind, trusted_domains=trusted)
        if any(
            first + f.line - 1 + k in brought
            for k in range(window.count("\n", f.start, max(f.start, f.end - 1)) + 1)
        )
    ]
    if not settings.MGC_POISON_CLASSIFIER_URL:
        return Screening(findings=found)
    added = "\n".join(lines[i] for i in new_at)
    verdict = classifier.classify(added)
    if verdict.status == classifier.FLAGGED and not found:
        found = [
            poisoning.PoisonFinding(
                family=poisoning.CLASSIFIER,
                reason=f"{poisoning.CLASSIFIER}.{verdict.label}",
                start=0,
                end=len(added),
                line=1,
                column=1,
                excerpt=poisoning.masked_excerpt(added, 0, min(len(added), 120)),
                signals=(f"score:{verdict.score:.2f}",),
            ).as_dict()
        ]
    decided = classifier.PoisonCheck(findings=found, verdict=verdict).decided_by
    return Screening(findings=found, classifier=verdict.as_dict(), decided_by=decided)


def _placed(finding, first_line: int, offset: int) -> dict:
    """A finding in the scanned window, placed in the whole text."""
    data = finding.as_dict()
    data.update(line=finding.line + first_line, start=finding.start + offset, end=finding.end + offset)
    return data


def screen_write(locked: MemoryFile, data: bytes, actor: Actor, *, released: dict | None, renamed: bool):
    """write_revision's step 0, under the row lock: the scan, and Quarantined for a write that
    is held. Returns what the revision keeps (findings; who released it)."""
    if renamed:  # a rename moves text the store judged when it came
        return {}
    from projects.memory.reading import revision_texts  # reading imports the models only

    head = locked.head

    def old_text() -> str:
        if head is None or head.is_deletion:
            return ""
        try:
            return revision_texts(locked.project, [head])[head.pk]
        except StoreError:
            return ""

    screening = screen(locked, data.decode("utf-8"), old_text)
    if screening.suspect and released is None and held_for_people(actor):
        raise Quarantined(screening)
    kept = screening.as_dict()
    if released and kept:
        kept["released"] = released
    return kept


def hold(
    quarantined: Quarantined,
    *,
    file: MemoryFile,
    actor: Actor,
    mode: str,
    content: str,
    base_revision: int | None,
) -> Quarantined:
    """Make a held write a quarantined proposal, audited (memory.poisoning.detected for
    webhooks and the SIEM). Returns the exception, carrying the proposal, to raise."""
    quarantined.proposal = proposal_create(
        file=file,
        actor=actor,
        mode=mode,
        content=content,
        base_revision=base_revision,
        screening=quarantined.screening,
    )
    return quarantined


def proposal_create(
    *,
    file: MemoryFile,
    actor: Actor,
    mode: str,
    content: str,
    base_revision: int | None,
    new_path: str = "",
    screening: Screening | None = None,
    consolidation: str = "",
    found: dict | None = None,
) -> Proposal:
    """A proposal of an agent's write (its hook policy asks for approval, or the write is held).
    Its content is screened here, so a proposal with findings is quarantined whatever made it."""
    if screening is None and content and mode in ("append", "replace"):
        screening = screen(file, content, _head_text(file) if mode == "replace" else "")
    screening = screening or Screening()
    with transaction.atomic():
        proposal = Proposal.objects.create(
            project=file.project,
            file=file,
            agent=actor.agent,
            session=_session(actor),
            mode=mode,
            content=content,
            base_revision=base_revision,
            new_path=new_path,
            quarantined=screening.suspect,
            poisoning=screening.as_dict(),
            consolidation=consolidation,
            consolidation_details=found or {},
        )
        details = {"path": file.source_path, "mode": mode}
        if new_path:
            details["new_path"] = new_path
        if consolidation:  # made by manage.py consolidate (runners.consolidation), not a session
            details["consolidation"] = consolidation
        project = file.project
        audit_record(actor=actor, action="proposal.create", project=project, obj=proposal, details=details)
        if screening.suspect:
            audit_record(
                actor=actor,
                action=DETECTED,
                project=file.project,
                obj=proposal,
                details={**details, "families": screening.families, "decided_by": screening.decided_by},
            )
    return proposal


def _head_text(file: MemoryFile) -> str:
    from projects.memory.reading import revision_texts

    head = file.head
    if head is None or head.is_deletion:
        return ""
    try:
        return revision_texts(file.project, [head])[head.pk]
    except StoreError:
        return ""


def _session(actor: Actor) -> AgentSession | None:
    try:
        ref = uuid.UUID(actor.session_ref)
    except (ValueError, TypeError):
        return None
    return AgentSession.objects.filter(pk=ref, agent=actor.agent).first()
