"""The audit trail as people read it: filtered for one reviewer, and reads of memory by
compliance staff recorded as events."""

from __future__ import annotations

import csv
import datetime as dt
import itertools
import json
import uuid
from collections.abc import Iterator

from django.db.models import QuerySet
from django.urls import reverse
from django.utils import timezone

from projects.audit import Actor, audit_record
from projects.governance import permissions
from projects.models import Agent, AgentSession, AuditEvent, MemoryFile, Project, Proposal


def audit_events(
    *,
    user,
    project: Project | None = None,
    actor: str = "",
    action: str = "",
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
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


# A reload, a back button or a second tab is not a new read: the same person reading the same
# thing (action, object, details such as the revision) within this window is recorded once.
# A new revision changes the details, so reading it is recorded at once.
READ_WINDOW = dt.timedelta(minutes=10)


def audit_read(
    *, user, role: str, action: str, project: Project, obj: object | None = None, details: dict | None = None
) -> None:
    """Record a read of memory when the reader's role is audited (compliance staff), once per
    READ_WINDOW for the same read."""
    audit_reads(user=user, role=role, action=action, project=project, reads=[(obj, details)])


def audit_reads(
    *, user, role: str, action: str, project: Project, reads: list[tuple[object | None, dict | None]]
) -> int:
    """Record several reads of one kind (a page showing several files): one event per object,
    leaving out those this person already read the same way within READ_WINDOW. One query
    finds the recent ones. Returns how many events were recorded."""
    if not permissions.reads_are_audited(role) or not reads:
        return 0
    keys = [(_object_key(obj), _normal(details)) for obj, details in reads]
    recent = AuditEvent.objects.filter(
        actor_user=user,
        action=action,
        project=project,
        object_id__in={object_id for (_type, object_id), _details in keys},
        created_at__gte=timezone.now() - READ_WINDOW,
    ).values_list("object_type", "object_id", "details")
    seen = {((object_type, object_id), _canonical(details)) for object_type, object_id, details in recent}
    recorded = 0
    for (obj, details), (key, normal) in zip(reads, keys, strict=True):
        if (key, _canonical(normal)) in seen:
            continue
        seen.add((key, _canonical(normal)))
        audit_record(actor=Actor.person(user), action=action, project=project, obj=obj, details=details)
        recorded += 1
    return recorded


def _object_key(obj: object | None) -> tuple[str, str]:
    """(object_type, object_id) as audit_record stores them."""
    if obj is None:
        return "", ""
    return type(obj).__name__.lower(), str(getattr(obj, "pk", "") or "")


def _normal(details: dict | None) -> object:
    """Details as the database gives them back (audit_record stores them through JSON)."""
    return json.loads(json.dumps(details or {}, default=str))


def _canonical(details: object) -> str:
    return json.dumps(details, sort_keys=True, ensure_ascii=False)


EXPORT_FIELDS = [
    "seq",
    "created_at",
    "actor_label",
    "action",
    "project",
    "object_type",
    "object_id",
    "object_repr",
    "details",
    "prev_hash",
    "hash",
]


def export_lines(events: QuerySet[AuditEvent], *, kind: str, by, filters: dict) -> tuple[Iterator[str], str]:
    """(lines, content type) of a CSV or JSON Lines export of `events`, oldest first. The
    export is itself an audit event; the lines are the trail as it stood when it was asked
    for, without that event."""
    mark = audit_record(
        actor=Actor.person(by),
        action="audit.export",
        project=filters.get("project"),
        details={"format": kind, "filters": {k: v for k, v in filters.items() if v}},
    )
    ordered = events.filter(seq__lt=mark.seq).order_by("seq", "id").iterator(chunk_size=2000)
    if kind == "csv":
        writer = csv.writer(_Echo())
        rows = (writer.writerow([_cell(value) for value in _row(e).values()]) for e in ordered)
        return itertools.chain([writer.writerow(EXPORT_FIELDS)], rows), "text/csv; charset=utf-8"
    return (
        (json.dumps(_row(e), ensure_ascii=False, default=str) + "\n" for e in ordered),
        "application/x-ndjson; charset=utf-8",
    )


class _Echo:
    def write(self, value):
        return value


def _cell(value) -> str:
    """A CSV cell that a spreadsheet shows as text: a leading = + - @ would run as a formula."""
    if value is None or isinstance(value, int):
        return "" if value is None else str(value)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _row(event: AuditEvent) -> dict:
    return {
        "seq": event.seq,
        "created_at": event.created_at.isoformat(),
        "actor_label": event.actor_label,
        "action": event.action,
        "project": event.project.slug if event.project_id else "",
        "object_type": event.object_type,
        "object_id": event.object_id,
        "object_repr": event.object_repr,
        "details": event.details,
        "prev_hash": event.prev_hash,
        "hash": event.hash,
    }


def object_links(events) -> dict[int, str]:
    """event pk -> the page of the object it names, for the events on one page of the trail
    (one query per kind of object; objects gone since have no link). The page itself decides
    who may open it."""
    wanted: dict[str, set[str]] = {}
    for event in events:
        if event.object_id and event.project_id:
            wanted.setdefault(event.object_type, set()).add(event.object_id)
    found: dict[tuple[str, str], str] = {}
    for file in MemoryFile.objects.filter(pk__in=_uuids(wanted.get("memoryfile"))).select_related("project"):
        found["memoryfile", str(file.pk)] = reverse("projects:file_detail", args=[file.project.slug, file.pk])
    for agent in Agent.objects.filter(pk__in=_uuids(wanted.get("agent"))).select_related("project"):
        found["agent", str(agent.pk)] = reverse(
            "projects:agent_detail", args=[agent.project.slug, agent.slug]
        )
    for session in AgentSession.objects.filter(pk__in=_uuids(wanted.get("agentsession"))).select_related(
        "agent__project"
    ):
        found["agentsession", str(session.pk)] = reverse(
            "projects:session_detail", args=[session.agent.project.slug, session.pk]
        )
    for proposal in Proposal.objects.filter(pk__in=_ints(wanted.get("proposal"))).select_related("project"):
        found["proposal", str(proposal.pk)] = (
            reverse("projects:proposal_list", args=[proposal.project.slug]) + f"?status={proposal.status}"
        )
    for project in Project.objects.filter(pk__in=_uuids(wanted.get("project"))):
        found["project", str(project.pk)] = reverse("projects:project_detail", args=[project.slug])
    links = {}
    for event in events:
        url = found.get((event.object_type, event.object_id))
        if url is None and event.object_type == "membership" and event.project_id:
            url = reverse("projects:members", args=[event.project.slug])
        if url:
            links[event.pk] = url
    return links


def _uuids(values) -> list:
    out = []
    for value in values or ():
        try:
            out.append(uuid.UUID(value))
        except ValueError:
            continue
    return out


def _ints(values) -> list[int]:
    return [int(v) for v in values or () if v.isascii() and v.isdigit()]
