"""A project's memory health, for its admins and compliance officers: what `manage.py
memory_health` prints, with trends over 30 and 90 days."""

from django.shortcuts import render

from projects.governance import health, permissions
from projects.memory.health.report import project_health
from projects.views.base import project_view


@project_view(capability=permissions.can_review)
def memory_health_view(request, project, role):
    return render(
        request,
        "projects/memory_health.html",
        {
            "project": project,
            "role": role,
            "report": project_health(project),
            "trends": health.trends(project),
        },
    )
