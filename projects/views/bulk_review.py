"""Bulk review: many pending proposals chosen by a filter (agent, consolidation job, path) or
by hand, approved or rejected with one note. Keyboard-driven (static/js/bulk-review.js: j/k
move, x select, a/r approve/reject); each decision is its own audited event
(runners.proposals.proposals_decide)."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from projects.governance import permissions
from projects.models import Proposal
from projects.runners import proposals as proposal_services
from projects.views.base import project_view

SHOWN = 200  # rows on the page; "all matching the filter" reaches beyond them
JOBS = ("agent", "merge", "fold", "summary", "contradiction")


def _filtered(request, project, role, params):
    found = Proposal.objects.filter(
        permissions.visible_proposals(request.user, role), project=project, status=Proposal.Status.PENDING
    )
    if params.get("agent"):
        found = found.filter(agent__slug=params["agent"])
    job = params.get("job")
    if job == "agent":
        found = found.filter(consolidation="")
    elif job in JOBS:
        found = found.filter(consolidation=job)
    if params.get("path"):
        found = found.filter(file__path__icontains=params["path"])
    return found.select_related("file", "file__agent", "file__user", "agent").order_by("created_at", "pk")


def _filters(params) -> dict:
    return {key: params.get(key, "")[:200] for key in ("agent", "job", "path") if params.get(key)}


@project_view()
def proposal_bulk_view(request, project, role):
    params = request.POST if request.method == "POST" else request.GET
    filters = _filters(params)
    matching = _filtered(request, project, role, filters)
    if request.method == "POST":
        decision = request.POST.get("decision")
        if decision not in ("approve", "reject"):
            messages.error(request, _("Choose approve or reject."))
        else:
            if request.POST.get("scope") == "filter":
                chosen = list(matching)
            else:
                wanted = [int(pk) for pk in request.POST.getlist("ids") if pk.isdigit()]
                chosen = list(matching.filter(pk__in=wanted))
            chosen = [p for p in chosen if permissions.can_decide_proposal(request.user, role, p)]
            note = request.POST.get("note", "").replace("\x00", "\ufffd")[:500]
            decided, failed = proposal_services.proposals_decide(
                proposals=chosen, by=request.user, decision=decision, note=note
            )
            if decided:
                text = (
                    ngettext("Approved %(n)s proposal.", "Approved %(n)s proposals.", len(decided))
                    if decision == "approve"
                    else ngettext("Rejected %(n)s proposal.", "Rejected %(n)s proposals.", len(decided))
                )
                messages.success(request, text % {"n": len(decided)})
            elif not failed:
                messages.error(request, _("Nothing was selected that you may decide."))
            for proposal, reason in failed:
                messages.error(request, f"{proposal.file.display_path}: {reason}")
        url = reverse("projects:proposal_bulk", args=[project.slug])
        return redirect(f"{url}?{urlencode(filters)}" if filters else url)
    rows = list(matching[:SHOWN])
    for proposal in rows:
        proposal.can_decide = permissions.can_decide_proposal(request.user, role, proposal)
    return render(
        request,
        "projects/proposal_bulk.html",
        {
            "project": project,
            "role": role,
            "rows": rows,
            "total": matching.count(),
            "filters": filters,
            "agents": project.agents.order_by("slug").values_list("slug", flat=True),
            "jobs": JOBS,
        },
    )
