"""Proposals an agent's post hook made (writes its hook policy sends to a person): approving
one applies it as the agent's revision, rejecting one writes nothing. Both are audited, and
both are safe to repeat (a double click, two reviewers at once).

A quarantined proposal (a write the poisoning scanner held, memory/quarantine.py) is released
only by an admin or a compliance officer, with a reason; on a profile its person consents
first (their "approve" is that consent, and writes nothing). The agent has no way here: it is
not a person with a role. The release is audited as memory.poisoning.release."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from projects.audit import Actor, audit_record
from projects.memory import errors, quarantine, records, removal
from projects.models import MemoryFile, Proposal, Revision
from projects.runners import injection
from projects.runners.hooks import apply_write, session_actor
from projects.runners.policy import HookError
from projects.system_text import message as system_message


def proposal_approve(*, proposal: Proposal, by, note: str = ""):
    """Apply a pending proposal as the agent's revision; the approver is in the audit trail.
    Returns the revision it wrote: a delete's tombstone, a rename's revision at the new path.

    One transaction holds the proposal's row lock, the state check, the write and the audit
    event, so a double click (or two reviewers at once) applies it once: the second sees it
    approved and gets the same revision back."""
    with transaction.atomic():
        locked = Proposal.objects.select_for_update().get(pk=proposal.pk)
        if locked.status == Proposal.Status.APPROVED and locked.revision_id:
            return Revision.objects.get(pk=locked.revision_id)
        if locked.status != Proposal.Status.PENDING:
            raise HookError("not_pending", _("This proposal was already decided."))
        file = MemoryFile.objects.select_related("head", "project").get(pk=locked.file_id)
        released = None
        if locked.quarantined:
            released = _release_allowed(locked, file, by, note)
            if released is None:  # the person consented; an admin or compliance officer releases
                proposal.refresh_from_db()
                return None
        if locked.mode != "replace" and file.is_deleted:
            # Appending would bring the file back holding only the addition, which nobody
            # proposed; a replace on a deleted file is refused by its stale base already.
            raise HookError(
                "file_deleted",
                _("The file was deleted after this was proposed: restore it first, or reject the proposal."),
            )
        # The agent, as its session wrote (on behalf of the person who signed in, via MCP).
        actor = (
            session_actor(locked.session)
            if locked.session_id and locked.session.agent_id == locked.agent_id
            else Actor.for_agent(locked.agent, str(locked.session_id or ""))
        )
        message = (
            system_message("approved_note", user=by.get_username(), note=note)
            if note
            else system_message("approved", user=by.get_username())
        )
        if locked.mode == "delete":
            revision = removal.file_delete(
                file=file, actor=actor, message=message, base_revision=locked.base_revision
            )
        elif locked.mode == "rename":
            try:
                target = records.workspace_file_new(
                    project=file.project, path=locked.new_path.removeprefix(injection.WORKSPACE_PREFIX)
                )
            except ValidationError as exc:
                raise HookError("bad_path", " ".join(exc.messages)) from None
            _tombstone, revision = removal.file_rename(
                file=file, target=target, actor=actor, message=message, base_revision=locked.base_revision
            )
        else:
            revision = apply_write(
                file, locked.mode, locked.content, locked.base_revision, actor, message, released=released
            )
        locked.status = Proposal.Status.APPROVED
        locked.decided_by, locked.decided_at = by, timezone.now()
        locked.decision_note, locked.revision = note[:500], revision
        locked.save()
        audit_record(
            actor=Actor.person(by),
            action="proposal.approve",
            project=locked.project,
            obj=locked,
            details={"revision": revision.number, "note": note[:500]},
        )
        if released is not None:
            audit_record(
                actor=Actor.person(by),
                action=quarantine.RELEASED,
                project=locked.project,
                obj=locked,
                details={
                    "path": file.source_path,
                    "revision": revision.number,
                    "families": quarantine.poisoning.families(locked.poisoning.get("findings", [])),
                    "note": note[:500],
                    "consented_by": locked.consented_by.get_username() if locked.consented_by_id else None,
                },
            )
    proposal.refresh_from_db()
    return revision


def _release_allowed(locked: Proposal, file: MemoryFile, by, note: str) -> dict | None:
    """Who may release a quarantined write, under its row lock: the release record, or None
    when `by` only gave the profile's person's consent (recorded here). HookError otherwise."""
    role = quarantine.role_of(by, locked.project)
    consenting = role is not None and quarantine.consents(by, locked)
    releasing = quarantine.releases(role)
    if not consenting and not releasing:
        raise HookError(
            "release_denied", _("Only an admin or a compliance officer releases a quarantined write.")
        )
    if consenting and locked.consented_by_id is None:
        locked.consented_by, locked.consented_at = by, timezone.now()
        locked.save(update_fields=["consented_by", "consented_at"])
        audit_record(
            actor=Actor.person(by), action="proposal.consent", project=locked.project, obj=locked, details={}
        )
    if not releasing:
        return None
    if file.scope == MemoryFile.Scope.USER and locked.consented_by_id is None:
        raise HookError(
            "consent_needed",
            _("This changes a person's profile: they consent first, then it can be released."),
        )
    if not note.strip():
        raise HookError("note_required", _("Say why you release a quarantined write: the reason is audited."))
    return {"by": by.get_username(), "note": note[:500], "at": timezone.now().isoformat()}


def proposal_reject(*, proposal: Proposal, by, note: str = "") -> None:
    with transaction.atomic():
        locked = Proposal.objects.select_for_update().get(pk=proposal.pk)
        if locked.status == Proposal.Status.REJECTED:
            return
        if locked.status != Proposal.Status.PENDING:
            raise HookError("not_pending", _("This proposal was already decided."))
        locked.status = Proposal.Status.REJECTED
        locked.decided_by, locked.decided_at = by, timezone.now()
        locked.decision_note = note[:500]
        locked.save()
        audit_record(
            actor=Actor.person(by),
            action="proposal.reject",
            project=locked.project,
            obj=locked,
            details={"note": note[:500]},
        )
    proposal.refresh_from_db()


def proposals_decide(*, proposals: list[Proposal], by, decision: str, note: str = "") -> tuple[list, list]:
    """Approve or reject many proposals with one note (bulk review): each is decided by
    `proposal_approve` / `proposal_reject`, in its own transaction with its own audit event,
    so one that fails (its file moved on, decided meanwhile) leaves the others decided.
    Returns (decided, failed), failed as (proposal, message)."""
    if decision not in ("approve", "reject"):
        raise ValueError(decision)
    decided, failed = [], []
    for proposal in proposals:
        try:
            if decision == "approve":
                proposal_approve(proposal=proposal, by=by, note=note)
            else:
                proposal_reject(proposal=proposal, by=by, note=note)
        except (HookError, errors.StoreError) as exc:
            failed.append((proposal, getattr(exc, "message", str(exc))))
        else:
            decided.append(proposal)
    return decided, failed
