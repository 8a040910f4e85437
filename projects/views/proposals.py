"""Proposals agents made under the hook policy: the list with a diff of each, and the
decision (admins and compliance; an employee decides those on their own USER.md)."""

from types import SimpleNamespace

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _

from projects import drafts
from projects.governance import permissions
from projects.governance.trail import audit_reads
from projects.memory import blame, errors, poisoning, reading
from projects.memory.content import appended
from projects.memory.diffing import diff_texts
from projects.models import Proposal
from projects.runners import proposals
from projects.views import paging
from projects.views.base import project_view


@project_view()
def proposal_list_view(request, project, role):
    """Admins and compliance see every proposal; an employee sees those on their own USER.md
    and decides them (consent to what agents record about them)."""
    status = request.GET.get("status", "pending")
    proposals = (
        Proposal.objects.filter(
            permissions.visible_proposals(request.user, role), project=project, status=status
        )
        .select_related(
            "file", "file__head", "file__agent", "file__user", "agent", "session", "decided_by", "revision"
        )
        .order_by("-quarantined", "-created_at")  # what the poisoning scanner held, first
    )
    page = paging.page_of(proposals, paging.REVIEW, request)
    items = []
    for proposal in page:
        try:
            current = reading.file_read(proposal.file).text if proposal.file.head else ""
        except errors.StoreError:  # the proposal is shown, its diff against nothing
            current = ""
        after = {"append": appended(current, proposal.content), "delete": "", "rename": current}.get(
            proposal.mode, proposal.content
        )
        proposal.can_decide = permissions.can_decide_proposal(request.user, role, proposal)
        # On a held write to their own profile, a person's "approve" is their consent.
        proposal.consenting = proposal.quarantined and not permissions.can_release_quarantined(role)
        proposal.session_visible = proposal.session_id is not None and (
            permissions.sees_everyone(role) or proposal.session.user_id == request.user.pk
        )
        proposal.found_groups = _found_groups(proposal)
        if proposal.quarantined:
            items.append((proposal, _quarantined_diff(proposal, current, after)))
        else:
            items.append((proposal, diff_texts(current, after)))
    _tool_calls_before([p for p, _diff in items if p.quarantined and p.session_id])
    # One read per proposal shown (its diff quotes the file), not one per visit.
    audit_reads(
        user=request.user,
        role=role,
        action="read.proposals",
        project=project,
        reads=[(p, {"file": str(p.file_id)}) for p, _diff in items],
    )
    return render(
        request,
        "projects/proposal_list.html",
        {"project": project, "role": role, "page": page, "items": items, "status": status},
    )


def _found_groups(proposal: Proposal) -> list[list[dict]]:
    """What consolidation found, as groups of lines with their origins: each duplicate with
    the copy kept, each contradiction's two lines, the notes folded."""
    found = proposal.consolidation_details or {}
    groups = [[item["kept"], item["line"]] for item in found.get("removed", [])]
    groups += [[item["older"], item["newer"]] for item in found.get("contradictions", [])]
    if found.get("lines"):
        groups.append(found["lines"])
    return groups


def _quarantined_diff(proposal: Proposal, current: str, after: str):
    """A held write's diff as its reviewer must read it: hidden characters shown (zero-width,
    bidi controls, tag characters spelled out), and the lines where the scanner found
    something marked (`proposal.flagged`: line numbers of the text after)."""
    found = poisoning.scan(proposal.content)
    lines = proposal.content.splitlines()
    text = proposal.content
    flagged_text = {
        poisoning.visible(line)
        for f in found
        for line in lines[f.line - 1 : f.line + text.count("\n", f.start, max(f.start, f.end - 1))]
    }
    shown_after = poisoning.visible(after)
    proposal.flagged = {
        number for number, line in enumerate(shown_after.splitlines(), start=1) if line in flagged_text
    }
    proposal.findings = (proposal.poisoning or {}).get("findings", [])
    return diff_texts(poisoning.visible(current), shown_after)


def _tool_calls_before(held: list[Proposal]) -> None:
    """Beside each held write: the tool calls and errors its session recorded before it
    (what the agent had just read), as blame shows them for a revision."""
    stand_ins = [
        SimpleNamespace(pk=p.pk, session_ref=str(p.session_id), created_at=p.created_at) for p in held
    ]
    calls = blame.tool_calls_before_many(stand_ins) if stand_ins else {}
    for proposal in held:
        proposal.tool_calls = calls.get(proposal.pk, [])


@project_view(methods=("POST",), refused_to="projects:proposal_list")
def proposal_decide_view(request, project, role, proposal_id):
    proposal = get_object_or_404(
        Proposal.objects.filter(permissions.visible_proposals(request.user, role)).select_related("file"),
        pk=proposal_id,
        project=project,
    )
    permissions.require(permissions.can_decide_proposal(request.user, role, proposal))
    note = request.POST.get("note", "").replace("\x00", "\ufffd")[:500]  # storable anywhere
    decision = request.POST.get("decision")
    if decision == "approve":
        try:
            revision = proposals.proposal_approve(proposal=proposal, by=request.user, note=note)
        except errors.SaveConflict as exc:
            messages.error(
                request,
                _(
                    "The file changed since the agent proposed this change: "
                    "%(summary)s Reject it, or ask the agent again."
                )
                % {"summary": exc.summary},
            )
            return redirect("projects:proposal_list", slug=project.slug)
        if revision is None:
            messages.success(
                request,
                _(
                    "Your consent is recorded. This write was held as suspect: an admin or a "
                    "compliance officer releases it."
                ),
            )
        elif proposal.mode == "delete":
            messages.success(
                request,
                _("Approved: %(file)s is deleted (revision %(number)s); its history is kept.")
                % {"file": proposal.file, "number": revision.number},
            )
        else:
            messages.success(
                request,
                _("Approved: %(file)s is now revision %(number)s.")
                % {"file": revision.file, "number": revision.number},
            )
    elif decision == "reject":
        proposals.proposal_reject(proposal=proposal, by=request.user, note=note)
        messages.success(request, _("Rejected. Nothing was written."))
    else:
        messages.error(request, _("Choose approve or reject."))
        return redirect("projects:proposal_list", slug=project.slug)
    drafts.saved(request, "decide", proposal.pk)
    return redirect("projects:proposal_list", slug=project.slug)
