"""Reads that gather what an agent sees: the files of each manifest section, at the head or
as they were at a moment in the past. Assembly itself is pure (projects.injection)."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.html import escape
from django.utils.translation import gettext as _

from projects import injection, permissions, store
from projects.models import (
    Agent,
    AuditEvent,
    Flag,
    IsolationCheck,
    MemoryFile,
    Project,
    ReviewMark,
    Revision,
)


def _revision_at(files: list[MemoryFile], at: dt.datetime | None) -> dict:
    """file id -> the revision that was the head at `at` (the current head when at is None)."""
    if at is None:
        return {f.pk: f.head for f in files if f.head is not None}
    found: dict = {}
    for revision in (Revision.objects.filter(file__in=files, created_at__lte=at)
                     .select_related("file").order_by("file_id", "-number")):
        found.setdefault(revision.file_id, revision)
    return found


def context_files(*, agent: Agent, user, manifest: injection.Manifest,
                  at: dt.datetime | None = None) -> dict[str, list[injection.SourceFile]]:
    """The files each section of `manifest` draws from, keyed by tag, with their texts."""
    wanted = Q(project=agent.project, agent=agent, scope=MemoryFile.Scope.AGENT)
    if user is not None:
        wanted |= Q(project=agent.project, user=user, scope=MemoryFile.Scope.USER)
    if any(s.source.startswith(injection.WORKSPACE_PREFIX) for s in manifest.sections):
        wanted |= Q(project=agent.project, scope=MemoryFile.Scope.WORKSPACE)
    files = list(MemoryFile.objects.filter(wanted).select_related("head", "project"))
    heads = _revision_at(files, at)
    by_source: dict[str, list[tuple[MemoryFile, Revision]]] = {}
    workspace = {f.path: f for f in files if f.scope == MemoryFile.Scope.WORKSPACE}
    for spec in manifest.sections:
        chosen: list[MemoryFile] = []
        if spec.source in injection.AGENT_SOURCES:
            chosen = [f for f in files if f.scope == MemoryFile.Scope.AGENT
                      and f.path == spec.source]
        elif spec.source == injection.USER_SOURCE:
            chosen = [f for f in files if f.scope == MemoryFile.Scope.USER]
        else:
            chosen = [workspace[p] for p in injection.workspace_matches(spec.source,
                                                                        list(workspace))]
        pairs = [(f, heads.get(f.pk)) for f in chosen]
        by_source[spec.tag] = [(f, r) for f, r in pairs if r is not None and not r.is_deletion]
    revisions = {r.pk: r for pairs in by_source.values() for _, r in pairs}
    texts = store.revision_texts(agent.project, list(revisions.values()))
    return {
        tag: [injection.SourceFile(path=_display(f), text=texts[r.pk], revision=r.number,
                                   file_id=str(f.pk)) for f, r in pairs]
        for tag, pairs in by_source.items()
    }


def parse_moment(raw: str) -> dt.datetime | None:
    """A moment typed by a person ('2026-12-01T09:00', UTC unless it says otherwise)."""
    if not raw:
        return None
    value = parse_datetime(raw)
    if value is None:
        raise ValidationError(_("Give the moment as YYYY-MM-DDTHH:MM (UTC)."), code="bad_time")
    if timezone.is_naive(value):
        value = timezone.make_aware(value, dt.UTC)
    return value


def _display(file: MemoryFile) -> str:
    return f"workspace/{file.path}" if file.scope == MemoryFile.Scope.WORKSPACE else file.path


def build_context(*, agent: Agent, user, at: dt.datetime | None = None, tokenizer=None
                  ) -> injection.Assembly:
    """The one path from records to a prompt: simulate view, pre hook and command all use it."""
    from projects.tokens import get_tokenizer

    manifest = injection.parse_manifest(agent.manifest)
    files = context_files(agent=agent, user=user, manifest=manifest, at=at)
    return injection.assemble(manifest, files, tokenizer or get_tokenizer())


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


@dataclass
class ReviewItem:
    """One file with changes the reviewer has not seen: from `since` (0: never) to the head."""

    file: MemoryFile
    since: int
    revisions: list[Revision]
    by_agent: bool
    findings: list[dict]
    flags: list[Flag]
    diff: object = None


def _unreviewed(reviewer) -> QuerySet[MemoryFile]:
    """Files whose head is past the revision this reviewer last marked reviewed (0: never)."""
    seen = ReviewMark.objects.filter(reviewer=reviewer, file=OuterRef("pk")).values("number")[:1]
    return (MemoryFile.objects.filter(head__isnull=False)
            .annotate(seen=Coalesce(Subquery(seen), 0))
            .filter(head__number__gt=F("seen")))


def review_counts(*, reviewer, projects: list[Project]) -> dict:
    """How many files wait in this reviewer's queue, per project, in one query."""
    return dict(_unreviewed(reviewer).filter(project__in=projects).order_by()
                .values("project").annotate(n=Count("pk")).values_list("project", "n"))


def review_queue(*, reviewer, project: Project) -> QuerySet[MemoryFile]:
    """Files changed since this reviewer last marked them reviewed; files with agents' writes
    among the unreviewed ones first, then the most recently changed."""
    files = _unreviewed(reviewer).filter(project=project)
    agent_writes = Revision.objects.filter(file=OuterRef("pk"), number__gt=OuterRef("seen"),
                                           author_kind=Revision.AuthorKind.AGENT)
    return (files.annotate(by_agent=Exists(agent_writes))
            .select_related("head", "agent", "user", "project")
            .order_by("-by_agent", "-head__created_at", "pk"))


def review_items(files: list[MemoryFile]) -> list[ReviewItem]:
    """Each queued file with its unreviewed revisions, their scanner findings, open flags and
    the diff from the last reviewed revision to the head (texts fetched in one batch)."""
    from projects.diffing import diff_texts

    if not files:
        return []
    pending = Q()
    for file in files:
        pending |= Q(file=file, number__gte=max(file.seen, 1))
    revisions = list(Revision.objects.filter(pending).order_by("file_id", "number"))
    by_file: dict = {}
    for revision in revisions:
        by_file.setdefault(revision.file_id, []).append(revision)
    flags: dict = {}
    for flag in (Flag.objects.filter(file__in=files, resolved_at__isnull=True)
                 .select_related("revision", "created_by")):
        flags.setdefault(flag.file_id, []).append(flag)
    texts = store.revision_texts(files[0].project, revisions)
    items = []
    for file in files:
        history = by_file.get(file.pk, [])
        base = next((r for r in history if r.number == file.seen), None)
        new = [r for r in history if r.number > file.seen]
        items.append(ReviewItem(
            file=file, since=file.seen, revisions=new, by_agent=file.by_agent,
            findings=[dict(f, revision=r.number) for r in new for f in r.findings],
            flags=flags.get(file.pk, []),
            diff=diff_texts(texts[base.pk] if base else "", texts[file.head.pk]),
        ))
    return items


DASHBOARD_PROJECTS = 20


def dashboard(user) -> dict:
    """What each role needs first, for the projects the user is in (the first 20 by name;
    the project list has the rest). A constant number of queries per panel."""
    from projects.models import AgentSession, Membership, Proposal

    if user.is_superuser:
        roles = {p.pk: permissions.ADMIN for p in Project.objects.order_by("name")[:DASHBOARD_PROJECTS]}
    else:
        roles = dict(Membership.objects.filter(user=user).order_by("project__name")
                     .values_list("project_id", "role")[:DASHBOARD_PROJECTS])
    projects = {p.pk: p for p in Project.objects.filter(pk__in=roles).order_by("name")}
    managed = [p for pk, p in projects.items() if permissions.can_manage(roles[pk])]
    reviewed = [p for pk, p in projects.items() if permissions.can_review(roles[pk])]
    data: dict = {"projects": [(p, roles[p.pk]) for p in projects.values()],
                  "total_projects": permissions.visible_projects(user).count()}
    if managed:
        ids = [p.pk for p in managed]
        agents = dict(Agent.objects.filter(project__in=ids).values("project")
                      .annotate(n=Count("pk")).values_list("project", "n"))
        pending = dict(Proposal.objects.filter(project__in=ids, status=Proposal.Status.PENDING)
                       .values("project").annotate(n=Count("pk")).values_list("project", "n"))
        members = dict(Membership.objects.filter(project__in=ids).values("project")
                       .annotate(n=Count("pk")).values_list("project", "n"))
        latest = (IsolationCheck.objects.filter(project=OuterRef("pk")).order_by("-ran_at", "-pk")
                  .values("pk")[:1])
        check_ids = (Project.objects.filter(pk__in=ids).annotate(check=Subquery(latest))
                     .values_list("check", flat=True))
        checks = {c.project_id: c for c in IsolationCheck.objects.filter(pk__in=check_ids)}
        data["admin_rows"] = [{"project": p, "agents": agents.get(p.pk, 0),
                               "pending": pending.get(p.pk, 0), "members": members.get(p.pk, 0),
                               "check": checks.get(p.pk)} for p in managed]
    if reviewed:
        counts = review_counts(reviewer=user, projects=reviewed)
        data["review_rows"] = [(p, counts.get(p.pk, 0)) for p in reviewed]
        data["recent_flags"] = list(
            Flag.objects.filter(project__in=reviewed, resolved_at__isnull=True)
            .select_related("project", "file", "file__agent", "file__user", "revision",
                            "created_by")[:10])
        data["agent_writes"] = list(
            Revision.objects.filter(file__project__in=reviewed,
                                    author_kind=Revision.AuthorKind.AGENT)
            .select_related("file", "file__project", "file__agent", "file__user")
            .order_by("-created_at")[:10])
    profiles = {f.project_id: f for f in MemoryFile.objects.filter(
        project__in=projects, scope=MemoryFile.Scope.USER, user=user).select_related("head")}
    if profiles or not managed:
        pending_about_me = dict(Proposal.objects.filter(
            file__in=profiles.values(), status=Proposal.Status.PENDING).values("project")
            .annotate(n=Count("pk")).values_list("project", "n"))
        data["profile_rows"] = [{"project": p, "role": roles[p.pk], "file": profiles.get(p.pk),
                                 "pending": pending_about_me.get(p.pk, 0)}
                                for p in projects.values()]
        data["about_me"] = list(
            Revision.objects.filter(file__in=profiles.values(),
                                    author_kind=Revision.AuthorKind.AGENT)
            .select_related("file", "file__project", "author_agent")
            .order_by("-created_at")[:5])
        data["my_sessions"] = list(AgentSession.objects.filter(user=user, agent__project__in=projects)
                                   .select_related("agent", "agent__project")
                                   .order_by("-created_at")[:5])
    return data


SEARCH_TERMS_MAX = 8


def search_terms(query: str) -> list[str]:
    """The words of a query, without search operators; at most 8."""
    words = re.findall(r"\w[\w.@+-]*", query, flags=re.UNICODE)
    return [w for w in words if w.lower() not in {"or", "and", "not"}][:SEARCH_TERMS_MAX]


def search_memory(*, project: Project, query: str, history: bool = False) -> QuerySet:
    """Texts of a project's files that hold every word of the query, best first: PostgreSQL
    full-text search ('simple' configuration, so Russian and English words match as typed),
    elsewhere a LIKE per word."""
    from projects.models import SearchText

    texts = SearchText.objects.filter(file__project=project)
    if not history:
        texts = texts.filter(is_head=True)
    terms = search_terms(query)
    if connection.vendor == "postgresql":
        texts = fulltext_match(texts, terms).order_by("-rank", "-is_head", "-number")
    else:
        # SQLite's LIKE folds only ASCII case, so "мария" would miss "Мария": compare in
        # Python. A full pass over the project's texts: fine for the embedded default.
        folded = [t.casefold() for t in terms]
        matching = [pk for pk, text in texts.values_list("pk", "text").iterator(chunk_size=500)
                    if all(t in text.casefold() for t in folded)]
        texts = texts.filter(pk__in=matching).order_by("-is_head", "-created_at")
    return texts.select_related("file", "file__agent", "file__user", "file__head")


def fulltext_match(texts: QuerySet, terms: list[str]) -> QuerySet:
    """PostgreSQL: texts holding every term, with a rank. The vector is the expression of the
    GIN index made by migration 0007, so the index serves it."""
    from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector

    vector = SearchVector("text", config="simple")
    wanted = SearchQuery(" ".join(terms), config="simple", search_type="plain")
    return texts.annotate(vector=vector).filter(vector=wanted).annotate(
        rank=SearchRank(vector, wanted))


def highlight(text: str, terms: list[str], width: int = 220) -> str:
    """An escaped excerpt around the first match with every term wrapped in <mark>."""
    lowered = text.lower()
    first = min((i for i in (lowered.find(t.lower()) for t in terms) if i >= 0), default=0)
    start = max(0, first - width // 3)
    excerpt = text[start:start + width]
    pattern = re.compile("|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True)),
                         re.IGNORECASE) if terms else None
    pieces, last = [], 0
    for match in pattern.finditer(excerpt) if pattern else []:
        pieces.append(escape(excerpt[last:match.start()]))
        pieces.append(f"<mark>{escape(match.group())}</mark>")
        last = match.end()
    pieces.append(escape(excerpt[last:]))
    return ("…" if start else "") + "".join(pieces) + ("…" if start + width < len(text) else "")
