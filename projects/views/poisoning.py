"""A project's poisoning scan (issue 37, item 4), for admins and compliance: start a scan (now,
or through every stored revision) that the events worker runs, watch its state, read what it
found and how far each finding went, and "Remove and flag" one."""

import uuid

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _

from projects.errors import explain
from projects.governance import permissions, poison_scans
from projects.memory import poisoning
from projects.models import PoisonScan
from projects.views.base import project_view


@project_view(capability=permissions.can_scan_memory, refused_to="projects:poisoning")
def poisoning_view(request, project, role):
    if request.method == "POST":
        scan = poison_scans.scan_queue(
            by=request.user, project=project, history=bool(request.POST.get("history"))
        )
        if scan is None:
            messages.warning(request, _("A scan of this project is running already."))
        else:
            messages.success(
                request, _("Scan queued: the events worker runs it; this page shows where it stands.")
            )
        return redirect("projects:poisoning", slug=project.slug)
    scan = poison_scans.latest_scan(project)
    findings = []
    for finding in scan.findings if scan is not None and scan.state == PoisonScan.State.DONE else []:
        introduced = finding.get("introduced") or {}
        findings.append(
            {
                **finding,
                "label": poisoning.LABELS.get(finding["family"], finding["family"]),
                "session_link": _is_uuid(introduced.get("session")),
            }
        )
    running = scan is not None and scan.state in (PoisonScan.State.QUEUED, PoisonScan.State.RUNNING)
    return render(
        request,
        "projects/poisoning.html",
        {"project": project, "role": role, "scan": scan, "findings": findings, "running": running},
    )


@project_view(capability=permissions.can_scan_memory, methods=["POST"], refused_to="projects:poisoning")
def poisoning_remove_view(request, project, role, scan_id: int):
    scan = get_object_or_404(PoisonScan, pk=scan_id, project=project)
    try:
        revision, flag = poison_scans.poisoning_remove_and_flag(
            by=request.user, scan=scan, key=request.POST.get("key", "")
        )
    except ValidationError as exc:
        messages.error(request, explain(exc))
        return redirect("projects:poisoning", slug=project.slug)
    if revision is not None:
        messages.success(
            request,
            _("Removed in revision %(number)s of %(path)s; the revision that introduced it is flagged.")
            % {"number": revision.number, "path": revision.file.display_path},
        )
    else:
        messages.success(request, _("The line was gone already; the revision that introduced it is flagged."))
    return redirect("projects:poisoning", slug=project.slug)


def _is_uuid(value) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True
