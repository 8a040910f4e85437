"""Where lines came from and where they went: a file's Blame tab, the sessions that carried a
line or a revision (a page, and CSV), and the origins shown beside a prompt's lines (the
simulation and a session's page use `prompt_rows`). Same role rules as the file itself;
sessions that served someone else are named to an employee, never opened."""

from __future__ import annotations

import csv
from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.html import escape, format_html
from django.utils.translation import gettext as _

from projects.governance import permissions
from projects.governance.trail import audit_read
from projects.memory import blame as memory_blame
from projects.memory import carried as memory_carried
from projects.templatetags.console import origin_markup, origin_words
from projects.views import paging
from projects.views.base import file_context, file_of, on_refusal_show, project_view, revision_of

BLAME_LINES = 500  # lines of a blame page
CARRIED_ROWS = paging.AUDIT


def _number(raw, default: int | None) -> int | None:
    try:
        value = int(raw)
    except (TypeError, ValueError):
        return default
    return value if value > 0 else default


def blame_url(project, file_id, revision: int, line: int | None = None) -> str:
    """The Blame tab at a revision, scrolled to a line (the page that holds it)."""
    query = {"r": revision}
    if line:
        query["line"] = line
    anchor = f"#L{line}" if line else ""
    return f"{reverse('projects:file_blame', args=[project.slug, file_id])}?{urlencode(query)}{anchor}"


def carried_url(project, file_id, revision: int, line: int | None = None) -> str:
    query = {"r": revision}
    if line:
        query["line"] = line
    return f"{reverse('projects:file_carried', args=[project.slug, file_id])}?{urlencode(query)}"


def origin_view(
    request, project, role, origin: memory_blame.Origin | None, urls: dict | None = None
) -> dict | None:
    """What a page shows of a line's origin: the revision (a link where the person may read
    its file), author, time, message; the session and its last tool calls where the person
    may see that session; held, approximate, text gone. (The tag `origin_html` shows it.)"""
    if origin is None:
        return None
    revision = origin.revision
    file = revision.file if revision.number else None
    readable = file is not None and permissions.can_read_file(request.user, role, file)
    session = origin.session
    visible = permissions.can_see_session(request.user, role, session)
    # URLs nest (/p/<slug>/f/<file>/r/<n>/, /p/<slug>/sessions/<id>/): a page of hundreds of
    # origins reverses each prefix once (`urls` keeps them for the request).
    urls = {} if urls is None else urls

    def prefix(name: str, *args) -> str:
        key = (name, *args)
        if key not in urls:
            urls[key] = reverse(name, args=[project.slug, *args])
        return urls[key]

    return {
        "revision": revision,
        "file": file,
        "readable": readable,
        "revision_url": f"{prefix('projects:file_detail', file.pk)}r/{revision.number}/" if readable else "",
        "session_ref": revision.session_ref,
        "session_url": f"{prefix('projects:session_list')}{session.pk}/" if visible else "",
        "tool_calls": origin.tool_calls if visible else [],
        "held": origin.held,
        "approximate": origin.approximate,
        "text_gone": origin.text_gone,
    }


@project_view()
def file_blame_view(request, project, role, file_id):
    file = file_of(request, project, role, file_id)
    context = file_context(request, project, role, file)
    head = file.head
    number = _number(request.GET.get("r"), head.number if head else None)
    revision = revision_of(file, number) if number else None
    context.update(revision=revision, head_number=head.number if head else 0)
    if revision is None or revision.is_deletion:
        context["last_live"] = (
            file.revisions.filter(is_deletion=False, number__lte=number or 0).order_by("-number").first()
        )
        return render(request, "projects/file_blame.html", context)
    with on_refusal_show("projects/file_blame.html", context):
        idents = memory_blame.line_map(file, revision)
        wanted = _number(request.GET.get("line"), None)
        # ?line=K opens the page that holds line K (origin links carry it); a page link wins.
        page_number = request.GET.get("page") or ((wanted - 1) // BLAME_LINES + 1 if wanted else None)
        page = Paginator(range(1, len(idents) + 1), BLAME_LINES).get_page(page_number)
        found = memory_blame.blame(
            file, revision, start=page.start_index() if idents else 1, stop=page.end_index(), idents=idents
        )
    # Rows as flat tuples (number, text, class, what the origin cell says): a page of hundreds
    # of lines costs a template lookup per value, not per attribute of nested objects.
    seen: dict[int, str] = {}
    urls: dict = {}
    words = origin_words()
    rows = []
    for line in found.lines:
        pk = line.origin.revision.pk
        css = "run" if line.starts_run else "cont"
        if line.starts_run or line.number == wanted:
            if pk not in seen:
                shown = origin_view(request, project, role, line.origin, urls)
                seen[pk] = origin_markup(shown, file, words)
            cell = seen[pk]
        else:  # a line from the same revision as the one above says so, briefly
            cell = escape(_("r%(number)s, as above") % {"number": line.origin.revision.number})
            cell = format_html('<span class="muted small">{}</span>', cell)
        if line.number == wanted:
            css += " wanted"
        rows.append((str(line.number), line.text, css, cell))  # a str: no number formatting
    audit_read(
        user=request.user,
        role=role,
        action="read.blame",
        project=project,
        obj=file,
        details={"revision": revision.number},
    )
    context.update(
        blame=found,
        rows=rows,
        page=page,
        wanted=wanted,
        carried_base=carried_url(project, file.pk, revision.number) + "&line=",
    )
    return render(request, "projects/file_blame.html", context)


def _carried(request, project, role, file):
    number = _number(request.GET.get("r"), file.head.number if file.head else None)
    if number is None:
        raise Http404("No such revision.")
    revision = revision_of(file, number)
    line = _number(request.GET.get("line"), None)
    try:
        found = memory_carried.carried(file, revision=revision.number, line=line)
    except ValueError:
        raise Http404("No such line.") from None
    sessions = found.sessions
    if not permissions.sees_everyone(role):
        sessions = sessions.filter(session__user=request.user)
    return revision, line, found, sessions


@project_view()
def file_carried_view(request, project, role, file_id):
    """The sessions whose prompts carried a revision, or one line of it (?r=N&line=K)."""
    file = file_of(request, project, role, file_id)
    context = file_context(request, project, role, file)
    revision, line, found, sessions = _carried(request, project, role, file)
    audit_read(
        user=request.user,
        role=role,
        action="read.carried",
        project=project,
        obj=file,
        details={"revision": revision.number, "line": line},
    )
    if request.GET.get("format") == "csv":
        return _csv(file, revision, line, sessions)
    text, origin = None, None
    if line is not None:
        with on_refusal_show("projects/file_carried.html", context):
            one = memory_blame.blame(file, revision, start=line, stop=line)
        if one.lines:
            text = one.lines[0].text
            origin = origin_view(request, project, role, one.lines[0].origin)
    context.update(
        revision=revision,
        line=line,
        text=text,
        origin=origin,
        spans=found.spans,
        page=paging.page_of(sessions, CARRIED_ROWS, request),
        blame_link=blame_url(project, file.pk, revision.number, line),
    )
    return render(request, "projects/file_carried.html", context)


class _Echo:
    def write(self, value):
        return value


def _csv(file, revision, line, sessions) -> StreamingHttpResponse:
    writer = csv.writer(_Echo())
    header = [
        _("session"),
        _("agent"),
        _("person served"),
        _("started (UTC)"),
        _("file"),
        _("revision"),
        _("section"),
        _("section cut"),
    ]

    def rows():
        yield writer.writerow(header)
        for row in sessions.iterator(chunk_size=500):
            session = row.session
            yield writer.writerow(
                [
                    str(session.pk),
                    session.agent.slug,
                    session.user.get_username() if session.user_id else "",
                    row.created_at.isoformat(),
                    row.path,
                    row.revision,
                    row.tag,
                    "yes" if row.cut else "no",
                ]
            )

    response = StreamingHttpResponse(rows(), content_type="text/csv; charset=utf-8")
    name = f"carried-r{revision.number}" + (f"-line{line}" if line else "") + ".csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def prompt_rows(request, project, role, origins) -> list[dict]:
    """The lines of a prompt with what the page shows of their origins (runners.origins); an
    origin is written out on the first of consecutive lines it shares."""
    seen: dict[int, dict | None] = {}
    urls: dict = {}
    rows = []
    previous = None
    for item in origins:
        line = item.line
        origin = None
        key = None
        if item.origin is not None:
            pk = key = item.origin.revision.pk
            if pk not in seen:
                seen[pk] = origin_view(request, project, role, item.origin, urls)
            origin = seen[pk]
        readable = item.file is not None and permissions.can_read_file(request.user, role, item.file)
        rows.append(
            {
                "line": line,
                "file": item.file,
                "origin": origin,
                "starts_run": key is None or key != previous,
                "erased": item.erased,
                "readable": readable,
                "blame_url": (
                    blame_url(project, item.file.pk, line.revision, line.line)
                    if readable and line.line
                    else ""
                ),
            }
        )
        previous = key
    return rows
