"""The audit trail as people read it: filtered for one reviewer, and reads of memory by
compliance staff recorded as events."""

from __future__ import annotations

import datetime as dt

from django.db.models import QuerySet

from projects.audit import Actor, audit_record
from projects.governance import permissions
from projects.models import AuditEvent, Project


def audit_events(*, user, project: Project | None = None, actor: str = "", action: str = "",
                 since: dt.datetime | None = None, until: dt.datetime | None = None
                 ) -> QuerySet[AuditEvent]:
    """The audit trail as one reviewer may see it, newest first. Events with no project
    (console-wide ones) are for superusers only."""
    if user.is_superuser:
        events = AuditEvent.objects.all()
    else:
        events = AuditEvent.objects.filter(project__in=permissions.reviewable_projects(user))
    if project is not None:
        events = events.filter(project=project)
    if actor:
        events = events.filter(actor_label__icontains=actor)
    if action.endswith("."):
        events = events.filter(action__startswith=action)
    elif action:
        events = events.filter(action=action)
    if since is not None:
        events = events.filter(created_at__gte=since)
    if until is not None:
        events = events.filter(created_at__lt=until)
    return events.select_related("project").order_by("-seq", "-id")


def audit_read(*, user, role: str, action: str, project: Project, obj: object | None = None,
               details: dict | None = None) -> None:
    """Record a read of memory when the reader's role is audited (compliance staff)."""
    if permissions.reads_are_audited(role):
        audit_record(actor=Actor.person(user), action=action, project=project, obj=obj,
                     details=details)
