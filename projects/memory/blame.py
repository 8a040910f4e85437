"""Blame: for each line of a revision, the revision that introduced it (its author, agent
session, time and message), read from the stored line maps (memory.lineage) in one query; and
what the writing session did before the write (`tool_calls_before`).

Texts that were erased or expired are never shown: a purged revision's blame lists who and
when for each line, with no text. A line whose origin file stands under a legal hold says so.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field

from django.db.models import F

from projects.memory import holds, lineage, linemaps
from projects.memory.errors import StoreError
from projects.memory.reading import revision_texts
from projects.models import AgentSession, MemoryFile, Revision, SessionEvent

TOOL_CALLS_SHOWN = 3  # the last tool calls before a write, named on its blame lines
_RESOURCE_KEYS = ("url", "uri", "href", "link", "resource", "path", "file", "source", "target", "query")


@dataclass(frozen=True)
class ToolCall:
    """A tool call or an error the runner recorded in a session."""

    kind: str  # tool | error
    name: str  # the tool's name, or the error's message
    summary: str
    resource: str  # the URL or resource its details name, if any
    at: dt.datetime
    event_id: int


@dataclass
class Origin:
    """The revision that introduced a line, and what the viewer is told about it."""

    revision: Revision
    session: AgentSession | None = None  # the agent's session, when it is still recorded
    tool_calls: list[ToolCall] = field(default_factory=list)
    held: bool = False  # a legal hold stands over its file
    approximate: bool = False  # filled in after earlier texts were gone: may be older

    @property
    def text_gone(self) -> bool:
        return self.revision.purged_at is not None

    @property
    def session_ref(self) -> str:
        return self.revision.session_ref


@dataclass(frozen=True)
class BlameLine:
    number: int  # 1-based, in the blamed revision
    text: str | None  # None when the blamed revision's text is gone
    origin: Origin
    origin_line: int  # 1-based, in the origin revision
    starts_run: bool  # the first of consecutive lines from the same origin revision


@dataclass
class Blame:
    file: MemoryFile
    revision: Revision | None  # None: the file has no revision
    total: int  # lines in the revision
    lines: list[BlameLine]  # those asked for (start..stop)
    text_gone: bool = False  # the revision's text was erased or expired: who and when only
    text_error: str = ""  # storage did not answer; origins are shown all the same

    @property
    def held(self) -> bool:
        return any(line.origin.held for line in self.lines)


def blame(
    file: MemoryFile,
    revision: Revision | None = None,
    *,
    start: int = 1,
    stop: int | None = None,
    tool_calls: int = TOOL_CALLS_SHOWN,
    idents: list[int] | None = None,
) -> Blame:
    """Each line of `revision` (the head when None), lines `start`..`stop` (1-based, both
    included; all by default), with the revision that introduced it. `idents`: the
    revision's map, when the caller has read it (`line_count` for paging)."""
    revision = revision if revision is not None else file.head
    if revision is None or revision.is_deletion:
        return Blame(file=file, revision=revision, total=0, lines=[])
    if idents is None:
        idents = lineage.line_map(file, revision.number)
    result = Blame(file=file, revision=revision, total=len(idents), lines=[])
    first, last = max(start, 1) - 1, len(idents) if stop is None else min(stop, len(idents))
    wanted = idents[first:last]
    text_lines: list[str] | None = None
    if revision.purged_at is not None or not revision.snapshot_key:
        result.text_gone = True
    else:
        try:
            text = revision_texts(file.project, [revision])[revision.pk]
            text_lines = linemaps.lines_of(text)
        except StoreError as exc:
            result.text_error = exc.message
    origins = origins_of(file.project, {linemaps.origin(i)[0] for i in wanted}, tool_calls=tool_calls)
    previous = None
    for offset, ident in enumerate(wanted):
        pk, index = linemaps.origin(ident)
        number = first + offset + 1
        origin = origins.get(pk) or _unknown_origin(file, pk)
        text = text_lines[number - 1] if text_lines is not None and number <= len(text_lines) else None
        result.lines.append(
            BlameLine(
                number=number,
                text=text.removesuffix("\r") if text is not None else None,
                origin=origin,
                origin_line=index + 1,
                starts_run=pk != previous,
            )
        )
        previous = pk
    return result


def line_map(file: MemoryFile, revision: Revision) -> list[int]:
    """The revision's map (one query): its length is the line count, for paging; hand it to
    `blame` so it is not read twice."""
    return [] if revision.is_deletion else lineage.line_map(file, revision.number)


def _unknown_origin(file: MemoryFile, pk: int) -> Origin:
    """A line whose origin revision row is gone (its file was erased after a rename): who and
    when are not known any more."""
    return Origin(revision=Revision(pk=pk, file=file, number=0, author_kind="system", author_label="?"))


# What an origin shows (and its file's permission check and path): a page of hundreds of
# origins reads no more.
_ORIGIN_FIELDS = (
    "file_id",
    "number",
    "author_kind",
    "author_label",
    "session_ref",
    "message",
    "message_code",
    "message_params",
    "created_at",
    "purged_at",
)
_ORIGIN_FILE_FIELDS = ("project_id", "scope", "agent_id", "user_id", "path")


def origins_of(project, pks: set[int], *, tool_calls: int = TOOL_CALLS_SHOWN) -> dict[int, Origin]:
    """The origin revisions by pk, with their sessions, their last tool calls, whether a hold
    stands over them and whether their map is approximate: a few queries whatever their number."""
    revisions = list(
        Revision.objects.filter(pk__in=pks)
        .only(*_ORIGIN_FIELDS)
        .annotate(rough=F("line_map__approximate"))  # the same query: the map is one-to-one
    )
    # Their files (a few, whatever the number of revisions), each object shared by its revisions.
    files = {
        f.pk: f
        for f in MemoryFile.objects.filter(pk__in={r.file_id for r in revisions}).only(*_ORIGIN_FILE_FIELDS)
    }
    origins = {}
    by_file: dict = {}
    for r in revisions:
        r.file = files[r.file_id]
        origins[r.pk] = Origin(revision=r, approximate=bool(r.rough))
        by_file.setdefault(r.file_id, []).append(r)
    if holds.any_standing(project):
        held = holds.covering_files([group[0].file for group in by_file.values()])
        for r in revisions:
            origins[r.pk].held = r.file_id in held
    sessions = sessions_named([r.session_ref for r in revisions], details=False)
    calls = tool_calls_before_many([r for r in revisions if r.session_ref], limit=tool_calls)
    for r in revisions:
        origins[r.pk].session = sessions.get(r.session_ref)
        origins[r.pk].tool_calls = calls.get(r.pk, [])
    return origins


def sessions_named(refs, *, details: bool = True) -> dict[str, AgentSession]:
    """The recorded sessions these revision session refs name (a ref that is not a session's
    id, or a session since removed, is left out); with their agent and person, or (without
    `details`) only whom they served, for many origins at once."""
    ids = {ref: _uuid(ref) for ref in set(refs) if ref}
    found = AgentSession.objects.filter(pk__in=[i for i in ids.values() if i])
    found = found.select_related("agent", "user") if details else found.only("id", "agent_id", "user_id")
    by_id = {s.pk: s for s in found}
    return {ref: by_id[i] for ref, i in ids.items() if i in by_id}


def _uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except (ValueError, TypeError):
        return None


def resource_named(details) -> str:
    """The URL or resource a tool call's details name, if any: a value under a key such as
    `url` or `path`, else the first value that is a web address (one level of nesting)."""
    if not isinstance(details, dict):
        return ""
    values = [details] + [v for v in details.values() if isinstance(v, dict)]
    for level in values:
        for key in _RESOURCE_KEYS:
            value = level.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()[:300]
    for level in values:
        for value in level.values():
            if isinstance(value, str) and value.startswith(("http://", "https://")):
                return value[:300]
    return ""


def _call(event_id: int, kind: str, at: dt.datetime, payload: dict | None) -> ToolCall:
    payload = payload if isinstance(payload, dict) else {}
    if kind == SessionEvent.Kind.TOOL:
        name, summary = str(payload.get("name") or "?"), str(payload.get("summary") or "")
    else:
        name, summary = str(payload.get("message") or "?").split("\n", 1)[0], ""
    return ToolCall(
        kind=kind,
        name=name[:200],
        summary=summary[:500],
        resource=resource_named(payload.get("details")),
        at=at,
        event_id=event_id,
    )


def tool_calls_before(revision: Revision, *, limit: int | None = None) -> list[ToolCall]:
    """The tool calls and errors the revision's session recorded before the write, oldest
    first (the last `limit` of them with a limit). Empty for a revision no session wrote."""
    return tool_calls_before_many([revision], limit=limit).get(revision.pk, [])


def tool_calls_before_many(
    revisions: list[Revision], *, limit: int | None = None
) -> dict[int, list[ToolCall]]:
    """tool_calls_before for several revisions in one query."""
    wanted = {r.pk: _uuid(r.session_ref) for r in revisions if r.session_ref}
    wanted = {pk: sid for pk, sid in wanted.items() if sid}
    if not wanted:
        return {}
    latest = max(r.created_at for r in revisions if r.pk in wanted)
    events: dict = {}
    for row in (
        SessionEvent.objects.filter(
            session_id__in=set(wanted.values()),
            kind__in=[SessionEvent.Kind.TOOL, SessionEvent.Kind.ERROR],
            created_at__lte=latest,
        )
        .order_by("created_at", "id")
        .values_list("session_id", "id", "kind", "created_at", "payload")
    ):
        events.setdefault(row[0], []).append(_call(*row[1:]))
    found = {}
    for r in revisions:
        sid = wanted.get(r.pk)
        if sid is None:
            continue
        before = [c for c in events.get(sid, []) if c.at <= r.created_at]
        found[r.pk] = before[-limit:] if limit else before
    return found
