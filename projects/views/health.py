"""A project's memory health, for its admins and compliance officers: what `manage.py
memory_health` prints, with trends over 30 and 90 days."""

from django.shortcuts import render

from projects.governance import health, permissions
from projects.governance.trail import audit_reads
from projects.memory.health.report import project_health
from projects.models import MemoryFile
from projects.views.base import project_view


@project_view(capability=permissions.can_review)
def memory_health_view(request, project, role):
    report = project_health(project)
    # The page quotes lines of memory files (profiles among them): one audited read per file
    # it quotes from, as the proposals page records the files its diffs quote.
    quoted = {
        line["file_id"] for item in report["duplicates"] + report["contradictions"] for line in item["lines"]
    }
    quoted |= {line["file_id"] for line in report["stale"]["notes"]}
    files = MemoryFile.objects.filter(pk__in=quoted).order_by("pk")
    audit_reads(
        user=request.user,
        role=role,
        action="read.health",
        project=project,
        reads=[(f, {"file": str(f.pk)}) for f in files],
    )
    return render(
        request,
        "projects/memory_health.html",
        {"project": project, "role": role, "report": report, "trends": health.trends(project)},
    )
