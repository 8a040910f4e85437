"""Agents' sessions: the list, and one session with the exact prompt its pre hook returned
(checked against its sha256), tokens per file, its events, and what re-assembling it now
would change."""

import json

from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from projects.errors import explain
from projects.governance import permissions
from projects.governance.trail import audit_read
from projects.memory import blame, errors, receipts
from projects.memory.diffing import diff_texts
from projects.models import AgentSession, MemoryFile, Revision, SessionEvent
from projects.runners import context as prompt_context
from projects.runners import origins as prompt_origins
from projects.views import paging
from projects.views.base import project_view
from projects.views.provenance import prompt_rows


@project_view()
def session_list_view(request, project, role):
    sessions = AgentSession.objects.filter(agent__project=project).select_related("agent", "user")
    if not permissions.sees_everyone(role):
        sessions = sessions.filter(user=request.user)
    page = paging.page_of(sessions.order_by("-created_at"), paging.LIST, request)
    return render(request, "projects/session_list.html", {"project": project, "role": role, "page": page})


@project_view()
def session_detail_view(request, project, role, session_id):
    """One session: the exact prompt its pre hook returned (from S3, checked against its
    sha256), tokens per file, the events, and a diff if re-assembling it now differs."""
    session = get_object_or_404(
        AgentSession.objects.select_related("agent", "user"), pk=session_id, agent__project=project
    )
    if not permissions.sees_everyone(role) and session.user_id != request.user.pk:
        raise Http404("No such session.")
    file_ids = {f["file_id"] for s in session.receipt for f in s["files"] if f.get("file_id")}
    known = set(str(pk) for pk in MemoryFile.objects.filter(pk__in=file_ids).values_list("pk", flat=True))
    raw = permissions.sees_everyone(role)  # the runner's JSON is for admins and reviewers
    context = {
        "project": project,
        "role": role,
        "session": session,
        "known": known,
        "events": [
            (
                e,
                _event_lines(e),
                json.dumps(e.payload, indent=2, ensure_ascii=False, sort_keys=True) if raw else None,
            )
            for e in _events_of(session)
        ],
        "at": session.created_at.strftime("%Y-%m-%dT%H:%M:%S.%f"),
        "writes": _writes(request, role, session),
        "open_origins": bool(request.GET.get("origins")),
    }
    if session.prompt_removed:
        # Erased or expired on purpose: say who and why, instead of a receipt that fails its
        # check (re-assembling would only show what the erasure took out).
        removed = dict(session.prompt_removed)
        removed["when"] = parse_datetime(removed.get("at", "")) if removed.get("at") else None
        context["removed"], context["stored_prompt"] = removed, None
        audit_read(user=request.user, role=role, action="read.session", project=project, obj=session)
        return render(request, "projects/session_detail.html", context)
    try:
        context["stored_prompt"] = receipts.prompt_read(project=project, sha256=session.prompt_sha256)
        again = prompt_context.build_context(agent=session.agent, user=session.user, at=session.created_at)
    except errors.StoreError as exc:  # the session's own record is shown all the same
        context["prompt_error"] = exc.message
    except ValidationError as exc:  # today's manifest no longer parses
        context["prompt_error"] = explain(exc)
    else:
        context["reassembled"] = again
        if context["stored_prompt"] is not None and again.sha256 != session.prompt_sha256:
            context["reassembly_diff"] = diff_texts(context["stored_prompt"], again.prompt)
        try:  # each line's origin, as of the revisions the receipt names
            if context["stored_prompt"] is not None:
                origins = prompt_origins.session_origins(session, context["stored_prompt"])
            else:
                origins = prompt_origins.assembly_origins(project, again)
            context["origin_rows"] = prompt_rows(request, project, role, origins)
        except errors.StoreError as exc:
            context["prompt_error"] = exc.message
    audit_read(user=request.user, role=role, action="read.session", project=project, obj=session)
    return render(request, "projects/session_detail.html", context)


def _writes(request, role, session: AgentSession) -> list[dict]:
    """The revisions this session wrote, each with the tool calls and errors it recorded
    before that write (what the agent was doing when it wrote)."""
    revisions = list(
        Revision.objects.filter(session_ref=str(session.pk))
        .select_related("file", "file__agent", "file__user")
        .order_by("created_at", "pk")
    )
    calls = blame.tool_calls_before_many(revisions)
    return [
        {
            "revision": r,
            "readable": permissions.can_read_file(request.user, role, r.file),
            "before": calls.get(r.pk, []),
        }
        for r in revisions
    ]


def _events_of(session: AgentSession) -> list[SessionEvent]:
    """The session's events, the pre hook's first: kept on the session row itself since the
    hook writes one row (older sessions have it as an event of its own)."""
    events = list(session.events.all())
    if not any(e.kind == SessionEvent.Kind.PRE for e in events):
        events.insert(
            0,
            SessionEvent(
                session=session,
                kind=SessionEvent.Kind.PRE,
                created_at=session.created_at,
                payload={
                    "total_tokens": session.total_tokens,
                    "prompt_sha256": session.prompt_sha256,
                    "bucket_checked": session.bucket_checked,
                },
            ),
        )
    return events


def _event_lines(event) -> list[str]:
    """A hook's event as sentences a person reads (the JSON stays one click away for staff)."""
    payload = event.payload or {}
    if event.kind == "pre":
        lines = [
            ngettext(
                "Assembled a prompt of %(count)s token.",
                "Assembled a prompt of %(count)s tokens.",
                payload.get("total_tokens") or 0,
            )
            % {"count": payload.get("total_tokens") or 0}
        ]
        if payload.get("bucket_checked") is False:
            lines.append(_("Storage could not be listed: the prompt came from the console's records."))
        return lines
    if event.kind == "tool":
        return [
            _("Tool %(name)s: %(summary)s")
            % {"name": payload.get("name", "?"), "summary": payload.get("summary") or "–"}
        ]
    if event.kind == "error":
        return [_("Error: %(message)s") % {"message": payload.get("message") or "–"}]
    lines = [_("Summary: %(summary)s") % {"summary": payload["summary"]}] if payload.get("summary") else []
    for result in payload.get("results", []):
        status, path = result.get("status"), result.get("path", "?")
        if status == "written" and result.get("unchanged"):
            lines.append(_("%(path)s: unchanged") % {"path": path})
        elif status == "written":
            lines.append(
                _("%(path)s: written as revision %(number)s")
                % {"path": path, "number": result.get("revision")}
            )
        elif status == "proposed":
            lines.append(_("%(path)s: proposed, waiting for approval") % {"path": path})
        elif status == "conflict":
            lines.append(_("%(path)s: not written, the file had changed") % {"path": path})
        else:
            lines.append(
                _("%(path)s: refused (%(reason)s)") % {"path": path, "reason": result.get("message", status)}
            )
    return lines
