"""Projects and agents: created and changed by admins, audited."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count
from django.utils import timezone
from django.utils.translation import gettext as _

from projects.audit import Actor, audit_record
from projects.governance.members import member_set
from projects.memory import layout
from projects.models import Agent, Membership, Project


@transaction.atomic
def agent_create(*, by, project: Project, slug: str, name: str, description: str = "") -> Agent:
    if Agent.objects.filter(project=project, slug__iexact=slug).exists():  # "Analyst" too
        raise ValidationError(
            _("This project already has an agent called %(slug)s."), code="agent_slug", params={"slug": slug}
        )
    agent = Agent.objects.create(project=project, slug=slug, name=name, description=description)
    audit_record(
        actor=Actor.person(by),
        action="agent.create",
        project=project,
        obj=agent,
        details={"slug": slug, "name": name},
    )
    return agent


@transaction.atomic
def project_update(
    *, by, project: Project, name: str, description: str, stale_days: int | None = None
) -> Project:
    changed = {
        field: value
        for field, value in (("name", name), ("description", description), ("stale_days", stale_days))
        if getattr(project, field) != value
    }
    if changed:
        for field, value in changed.items():
            setattr(project, field, value)
        project.save(update_fields=list(changed))
        audit_record(
            actor=Actor.person(by),
            action="project.update",
            project=project,
            obj=project,
            details={"changed": sorted(changed)},
        )
    return project


@transaction.atomic
def project_create(
    *, by, slug: str, name: str, description: str = "", bucket: str = "", key_prefix: str = ""
) -> Project:
    """A new project; its creator becomes its first admin. Bucket and prefix are fixed from
    here on: the keys of every file are built from them."""
    if Project.objects.filter(slug__iexact=slug).exists():  # "Incidents" too
        raise ValidationError(
            _("A project called %(slug)s exists."), code="project_slug", params={"slug": slug}
        )
    project = Project(slug=slug, name=name, description=description, bucket=bucket, key_prefix=key_prefix)
    layout.project_prefix(project.id, key_prefix)  # refuses a malformed prefix
    project.save()
    audit_record(
        actor=Actor.person(by),
        action="project.create",
        project=project,
        obj=project,
        details={"slug": slug, "bucket": bucket, "prefix": project.prefix},
    )
    member_set(by=by, project=project, user=by, role=Membership.Role.ADMIN)
    return project


def count_agents(projects) -> None:
    """Set `agent_count` on each of these projects (one query, for one page of a list: an
    annotation over the whole list would group every project before the page is cut)."""
    counts = dict(
        Agent.objects.filter(project__in=[p.pk for p in projects])
        .values("project")
        .annotate(n=Count("pk"))
        .values_list("project", "n")
    )
    for project in projects:
        project.agent_count = counts.get(project.pk, 0)


@transaction.atomic
def archive_set(*, by, target: Project | Agent, archived: bool) -> bool:
    """Archive a project or an agent (hidden from lists, pre hooks refused), or bring it back.
    Audited; nothing is deleted, memory and history stay. False when it was so already."""
    if bool(target.archived_at) == archived:
        return False
    target.archived_at = timezone.now() if archived else None
    target.save(update_fields=["archived_at"])
    kind = "project" if isinstance(target, Project) else "agent"
    project = target if isinstance(target, Project) else target.project
    audit_record(
        actor=Actor.person(by),
        action=f"{kind}.{'archive' if archived else 'unarchive'}",
        project=project,
        obj=target,
        details={"slug": target.slug},
    )
    return True
