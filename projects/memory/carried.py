"""Where a line or a revision went: the sessions whose prompts carried it, found from their
receipts (SessionFile rows, one per file a prompt carried) and the stored line maps.

A line still in the file counts every session that received a revision from the one that
introduced it on; a line removed in revision M counts the sessions that received revisions
from its first up to M-1 (and again from a revision that brought it back, such as a
restore). A line a rename carried over counts the sessions of the file it came from too.

The rows are written off the pre hook's path (its one INSERT stays one): a session's post hook
indexes it, and every question asked here first indexes the sessions still waiting
(`index_sessions`), so an answer counts every session recorded before it.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q, QuerySet

from projects.memory import lineage, linemaps, receipts
from projects.models import AgentSession, LineMap, MemoryFile, Revision, SessionFile

INDEX_BATCH = 1000  # sessions indexed in one transaction


@dataclass(frozen=True)
class Span:
    """Revisions first..last (both included) of one file that held the line."""

    file_id: object
    path: str
    first: int
    last: int


@dataclass
class Carried:
    file: MemoryFile
    revision: int
    line: int | None  # 1-based, in `revision`; None: the whole revision
    spans: list[Span]
    sessions: QuerySet  # SessionFile rows, newest first
    origin: Revision | None = None  # the revision that introduced the line


def carried(file: MemoryFile, *, revision: int, line: int | None = None) -> Carried:
    """The sessions that carried revision `revision` of `file` (with `line`, that line of it,
    wherever it stood). ValueError for a line the revision does not have."""
    if line is None:
        spans = [Span(file.pk, file.source_path, revision, revision)]
        return Carried(file=file, revision=revision, line=None, spans=spans, sessions=sessions_over(spans))
    idents = lineage.line_map(file, revision)
    if not 1 <= line <= len(idents):
        raise ValueError(f"revision {revision} has {len(idents)} lines")
    ident = idents[line - 1]
    spans = line_spans(file, ident)
    origin = Revision.objects.filter(pk=linemaps.origin(ident)[0]).select_related("file").first()
    return Carried(
        file=file, revision=revision, line=line, spans=spans, sessions=sessions_over(spans), origin=origin
    )


def index_sessions(sessions: list[AgentSession] | None = None) -> int:
    """Write the SessionFile rows of sessions not indexed yet (these ones, or all), a batch a
    transaction. Safe to run at once from several processes: each takes rows the others have
    not locked (PostgreSQL's SKIP LOCKED), and a row written twice is ignored. Returns how many
    sessions it indexed."""
    done = 0
    while True:
        with transaction.atomic():
            pending = AgentSession.objects.filter(carried_indexed=False)
            if sessions is not None:
                pending = pending.filter(pk__in=[s.pk for s in sessions])
            batch = list(
                pending.select_for_update(skip_locked=True)
                .order_by("created_at")
                .only("id", "created_at", "receipt")[:INDEX_BATCH]
            )
            if not batch:
                return done
            SessionFile.objects.bulk_create(
                [
                    SessionFile(
                        session=session,
                        file_ref=f["file_id"],
                        path=f["path"],
                        revision=f["revision"],
                        tag=f["tag"],
                        cut=f["cut"],
                        created_at=session.created_at,
                    )
                    for session in batch
                    for f in receipts.carried_files(session.receipt)
                ],
                ignore_conflicts=True,
            )
            AgentSession.objects.filter(pk__in=[s.pk for s in batch]).update(carried_indexed=True)
        done += len(batch)
        if sessions is not None:
            return done


def sessions_over(spans: list[Span]) -> QuerySet:
    """SessionFile rows of the sessions that received a revision inside one of the spans (the
    sessions still waiting are indexed first)."""
    if not spans:
        return SessionFile.objects.none()
    index_sessions()
    wanted = Q()
    for span in spans:
        wanted |= Q(file_ref=span.file_id, revision__gte=span.first, revision__lte=span.last)
    return (
        SessionFile.objects.filter(wanted)
        .select_related("session", "session__agent", "session__user")
        .order_by("-created_at", "-pk")
    )


def line_spans(file: MemoryFile, ident: int, *, _seen: set | None = None) -> list[Span]:
    """The revisions of `file` (and of the files a rename brought it from) whose text held the
    line `ident`, as spans. Walks the stored deltas from the line's first revision on, tracking
    the line's place; no map is built."""
    seen = _seen if _seen is not None else set()
    if file.pk in seen:
        return []
    seen.add(file.pk)
    head = file.head.number if file.head_id else 0
    if head == 0:
        return []
    lineage.line_map(file, head)  # fills in history older than line maps
    origin_pk = linemaps.origin(ident)[0]
    introduced = Revision.objects.filter(pk=origin_pk, file=file).values_list("number", flat=True).first()
    start = introduced or 1
    positions: dict[int, int | None] = {}
    spans: list[Span] = []
    open_at = None
    for number, base, data in (
        LineMap.objects.filter(file=file, number__gte=start)
        .order_by("number")
        .values_list("number", "base", "data")
        .iterator(chunk_size=2000)
    ):
        at = linemaps.position_in(bytes(data), positions.get(base), ident)
        positions[number] = at
        if at is not None and open_at is None:
            open_at = number
        elif at is None and open_at is not None:
            spans.append(Span(file.pk, file.source_path, open_at, number - 1))
            open_at = None
    if open_at is not None:
        spans.append(Span(file.pk, file.source_path, open_at, head))
    # A rename carries the line to another file, and a rename back brings it home: follow
    # both ways (each file once).
    related = set(
        Revision.objects.filter(renamed_from=file).exclude(file=file).values_list("file_id", flat=True)
    )
    if introduced is None:
        moved_here = Revision.objects.filter(file=file, renamed_from__isnull=False)
        related |= set(moved_here.values_list("renamed_from_id", flat=True))
    for other in MemoryFile.objects.filter(pk__in=related - seen).select_related("head").order_by("pk"):
        spans += line_spans(other, ident, _seen=seen)
    return spans
