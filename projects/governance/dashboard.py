"""What each role needs first on the dashboard, in a constant number of queries."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db.models import Count, OuterRef, Q, Subquery
from django.utils import timezone

from projects.governance import permissions, prompts
from projects.governance.review import flags_on_work_of, review_counts
from projects.models import (
    Agent,
    AgentSession,
    Flag,
    IsolationCheck,
    Membership,
    MemoryFile,
    Project,
    Proposal,
    Revision,
    SubjectRequest,
    WebhookSubscription,
)

DASHBOARD_PROJECTS = 20


def dashboard(user) -> dict:
    """What each role needs first, for the projects the user is in (the first 20 by name;
    the project list has the rest). A constant number of queries per panel."""

    if user.is_superuser:
        roles = {
            p.pk: permissions.ADMIN
            for p in Project.objects.filter(archived_at__isnull=True).order_by("name")[:DASHBOARD_PROJECTS]
        }
    else:
        roles = dict(
            Membership.objects.filter(user=user, project__archived_at__isnull=True)
            .order_by("project__name")
            .values_list("project_id", "role")[:DASHBOARD_PROJECTS]
        )
    projects = {p.pk: p for p in Project.objects.filter(pk__in=roles).order_by("name")}
    managed = [p for pk, p in projects.items() if permissions.can_manage(roles[pk])]
    reviewed = [p for pk, p in projects.items() if permissions.can_review(roles[pk])]
    data: dict = {
        "projects": [(p, roles[p.pk]) for p in projects.values()],
        "total_projects": permissions.visible_projects(user).filter(archived_at__isnull=True).count(),
        # Flags on what this person wrote: theirs to answer, whatever their role.
        "my_flags": flags_on_work_of(user, list(projects)),
    }
    if managed:
        ids = [p.pk for p in managed]
        agents = dict(
            Agent.objects.filter(project__in=ids)
            .values("project")
            .annotate(n=Count("pk"))
            .values_list("project", "n")
        )
        pending = dict(
            Proposal.objects.filter(project__in=ids, status=Proposal.Status.PENDING)
            .values("project")
            .annotate(n=Count("pk"))
            .values_list("project", "n")
        )
        members = dict(
            Membership.objects.filter(project__in=ids)
            .values("project")
            .annotate(n=Count("pk"))
            .values_list("project", "n")
        )
        latest = (
            IsolationCheck.objects.filter(project=OuterRef("pk")).order_by("-ran_at", "-pk").values("pk")[:1]
        )
        check_ids = (
            Project.objects.filter(pk__in=ids)
            .annotate(check=Subquery(latest))
            .values_list("check", flat=True)
        )
        checks = {c.project_id: c for c in IsolationCheck.objects.filter(pk__in=check_ids)}
        # Webhooks disabled after failing: the admins' notice (mail goes too, where it can).
        data["disabled_webhooks"] = list(
            WebhookSubscription.objects.filter(
                project__in=ids, disabled_at__isnull=False, removed_at__isnull=True
            )
            .select_related("project")
            .order_by("-disabled_at")[:10]
        )
        data["admin_rows"] = [
            {
                "project": p,
                "agents": agents.get(p.pk, 0),
                "pending": pending.get(p.pk, 0),
                "members": members.get(p.pk, 0),
                "check": checks.get(p.pk),
            }
            for p in managed
        ]
    if reviewed:
        counts = review_counts(reviewer=user, projects=reviewed)
        data["review_rows"] = [(p, counts.get(p.pk, 0)) for p in reviewed]
        data["recent_flags"] = list(
            Flag.objects.filter(project__in=reviewed, resolved_at__isnull=True).select_related(
                "project", "file", "file__agent", "file__user", "revision", "created_by"
            )[:10]
        )
        data["agent_writes"] = list(
            Revision.objects.filter(file__project__in=reviewed, author_kind=Revision.AuthorKind.AGENT)
            .select_related("file", "file__project", "file__agent", "file__user")
            .order_by("-created_at")[:10]
        )
    data.update(_subject_requests(user, reviewed))
    if managed or reviewed:  # prompts cut to a cap or the budget, loud for who can act on it
        data["truncated_agents"] = prompts.truncated_agents([p.pk for p in {*managed, *reviewed}])
        data["recent_days"] = prompts.RECENT_DAYS
    profiles = {
        f.project_id: f
        for f in MemoryFile.objects.filter(
            project__in=projects, scope=MemoryFile.Scope.USER, user=user
        ).select_related("head")
    }
    if profiles or not managed:
        pending_about_me = dict(
            Proposal.objects.filter(file__in=profiles.values(), status=Proposal.Status.PENDING)
            .values("project")
            .annotate(n=Count("pk"))
            .values_list("project", "n")
        )
        data["profile_rows"] = [
            {
                "project": p,
                "role": roles[p.pk],
                "file": profiles.get(p.pk),
                "pending": pending_about_me.get(p.pk, 0),
            }
            for p in projects.values()
        ]
        data["about_me"] = list(
            Revision.objects.filter(file__in=profiles.values(), author_kind=Revision.AuthorKind.AGENT)
            .select_related("file", "file__project", "author_agent")
            .order_by("-created_at")[:5]
        )
        data["my_sessions"] = list(
            AgentSession.objects.filter(user=user, agent__project__in=projects)
            .select_related("agent", "agent__project")
            .order_by("-created_at")[:5]
        )
    return data


def _subject_requests(user, reviewed: list[Project]) -> dict:
    """Subjects' requests: the open ones a handler answers, by due date (overdue and due soon
    counted), and the person's own requests with where they stand. Three queries at most."""
    today = timezone.localdate()
    soon = today + dt.timedelta(days=settings.MGC_SUBJECT_DUE_SOON_DAYS)
    data: dict = {
        "my_requests": list(SubjectRequest.objects.filter(user=user).order_by("-received_at")[:5]),
        "requests_today": today,
        "requests_soon": soon,
    }
    if permissions.handles_all_requests(user) or reviewed:
        mine = permissions.visible_requests(user).filter(state__in=list(SubjectRequest.OPEN_STATES))
        counts = mine.aggregate(
            overdue=Count("pk", filter=Q(due_on__lt=today)),
            soon=Count("pk", filter=Q(due_on__gte=today, due_on__lte=soon)),
            open=Count("pk"),
        )
        data["open_requests"] = list(
            mine.select_related("user", "project", "handler").order_by("due_on", "pk")[:10]
        )
        data["request_counts"] = counts
    return data
