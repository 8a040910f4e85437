"""The audit trail: who did what and when, with filters, and its export as CSV or JSONL."""

from django.contrib.auth.decorators import login_required
from django.http import StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone

from projects.audit import ACTIONS
from projects.forms.governance import AuditFilterForm
from projects.governance import permissions, trail
from projects.models import AuditEvent
from projects.views import paging


@login_required
def audit_log_view(request):
    """Who did what, when: filters by project, actor, action and time; CSV/JSONL export."""
    projects = permissions.reviewable_projects(request.user)
    permissions.require(request.user.is_superuser or projects.exists())
    form = AuditFilterForm(request.GET or None, projects=projects, actions=ACTIONS)
    status = 200
    filters = {}
    if form.is_bound:
        if form.is_valid():
            data = form.cleaned_data
            filters = {
                "project": data["project"],
                "actor": data["actor"].strip(),
                "action": data["action"],
                "since": data["since"],
                "until": data["until"],
            }
        else:
            status = 400
    events = trail.audit_events(user=request.user, **filters) if status == 200 else AuditEvent.objects.none()
    export = request.GET.get("export")
    if export in ("csv", "jsonl") and status == 200:
        return _export(request, events, export, filters)
    page = paging.page_of(events, paging.AUDIT, request)
    links = trail.object_links(page.object_list)
    for event in page.object_list:
        event.link = links.get(event.pk)
    return render(
        request,
        "projects/audit_log.html",
        {"form": form, "page": page, "filtered": any(filters.values())},
        status=status,
    )


def _export(request, events, kind: str, filters: dict):
    """Streamed, so a large trail never sits in memory (governance.trail.export_lines)."""
    lines, content_type = trail.export_lines(events, kind=kind, by=request.user, filters=filters)
    response = StreamingHttpResponse(lines, content_type=content_type)
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="audit-{stamp}.{kind}"'
    return response
