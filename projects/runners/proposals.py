"""Proposals an agent's post hook made (writes its hook policy sends to a person): approving
one applies it as the agent's revision, rejecting one writes nothing. Both are audited, and
both are safe to repeat (a double click, two reviewers at once)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from projects.audit import Actor, audit_record
from projects.memory import errors, records, removal
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
            revision = apply_write(file, locked.mode, locked.content, locked.base_revision, actor, message)
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
    proposal.refresh_from_db()
    return revision


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
