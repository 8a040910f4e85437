"""What every page of a project does first, written once: `project_view`, and for the pages of
one memory file, `file_of` and `file_context`.

    @project_view(capability=permissions.can_manage, methods=("POST",),
                  refused_to="projects:agent_settings")
    def credentials_revoke_view(request, project, role, agent_slug, token_id): ...

The decorator signs the person in, answers 405 to a method the page does not take, finds the
project by the URL's slug and the person's role in it, and checks the capability the page
needs (a function of the role, from governance.permissions). An unknown project, one the
person is not in and a missing capability are all the same 404: a refusal must not tell that
the project exists. The view is then called with the project and the role in place of the
slug, and the URL's other arguments as they were.

A refusal (projects.errors.Refusal: the store's, the hooks', the credentials') that the view
leaves to it becomes what a person can act on:
- after a POST, its message on the next page and a redirect to `refused_to`: a URL name given
  as many of this URL's arguments as it takes (project URLs nest: /p/<slug>/f/<file_id>/...,
  so the page a form belongs to takes a leading part of the form's own). Without one: this
  page again, or the project's page when this URL takes only POSTs;
- any other request gets a page with the message and status 503, the project's links around
  it (a GET changes nothing, so there is nothing to redirect to);
- inside `with on_refusal_show(template, context):` the view's own page is shown instead, with
  the context it had so far, the message as `error`, and 503 (a file's page keeps its tabs).
A view still handles a refusal itself where its page shows more than that: the editor keeps
the text typed, a conflict shows both sides, a form puts the error at its field, a page shows
what it could read beside what it could not.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_http_methods

from projects import logs
from projects.errors import Refusal, explain
from projects.governance import permissions
from projects.models import MemoryFile, Project, Revision

REFUSED_TEMPLATE = "projects/refused.html"


def project_view(
    *,
    capability: Callable[[str | None], bool] | None = None,
    methods: Iterable[str] | None = None,
    refused_to: str | None = None,
):
    """Decorate `view(request, project, role, **kwargs)` as the page at /p/<slug>/...;
    `methods` None takes any method (as a plain Django view does)."""
    allowed = [m.upper() for m in methods] if methods is not None else None
    post_only = allowed == ["POST"]

    def decorate(view):
        @functools.wraps(view)
        def page(request, slug, **kwargs):
            project, role = permissions.project_or_404(request.user, slug)
            logs.bind(project=project.slug)
            if capability is not None:
                permissions.require(capability(role))
            try:
                return view(request, project, role, **kwargs)
            except _ShownOn as shown:
                return render(
                    request, shown.template, {**shown.context, "error": explain(shown.refusal)}, status=503
                )
            except Refusal as exc:
                return _refused(
                    request, exc, project, role, kwargs, refused_to=refused_to, post_only=post_only
                )

        if allowed is not None:
            page = require_http_methods(allowed)(page)
        return login_required(page)

    return decorate


class _ShownOn(Exception):
    def __init__(self, refusal: Refusal, template: str, context: dict):
        super().__init__(refusal.message)
        self.refusal, self.template, self.context = refusal, template, context


@contextlib.contextmanager
def on_refusal_show(template: str, context: dict):
    """A refusal inside is shown on this page: `template` with `context` as it stands when
    the refusal comes, the message as `error`, status 503 (project_view renders it)."""
    try:
        yield
    except Refusal as exc:
        raise _ShownOn(exc, template, context) from exc


def _refused(
    request,
    exc: Refusal,
    project: Project,
    role: str,
    kwargs: dict,
    *,
    refused_to: str | None,
    post_only: bool,
):
    if request.method == "POST":
        messages.error(request, explain(exc))
        if refused_to is not None:
            return redirect(_url_for(refused_to, {"slug": project.slug, **kwargs}))
        if post_only:
            return redirect("projects:project_detail", slug=project.slug)
        return redirect(request.get_full_path())
    return render(
        request, REFUSED_TEMPLATE, {"project": project, "role": role, "error": explain(exc)}, status=503
    )


def _url_for(name: str, kwargs: dict) -> str:
    """`name` reversed with the longest leading part of `kwargs` (in the URL's order) it takes."""
    items = list(kwargs.items())
    while True:
        try:
            return reverse(name, kwargs=dict(items))
        except NoReverseMatch:
            if len(items) <= 1:
                raise
            items.pop()


# --- The pages of one file ------------------------------------------------------------------------


def file_of(request, project: Project, role: str, file_id, *, edit: bool = False) -> MemoryFile:
    """The file, if the person may read it (and edit it, with `edit`); else the same 404 as a
    file that does not exist."""
    file = (
        MemoryFile.objects.select_related("head", "project", "agent", "user")
        .filter(project=project, pk=file_id)
        .first()
    )
    if file is None or not permissions.can_read_file(request.user, role, file):
        raise Http404("No such file.")
    if edit and not permissions.can_edit_file(request.user, role, file):
        raise Http404("No such file.")
    return file


def revision_of(file: MemoryFile, number) -> Revision:
    return get_object_or_404(
        Revision.objects.select_related("author_user", "author_agent", "renamed_from", "renamed_to"),
        file=file,
        number=number,
    )


def file_context(request, project: Project, role: str, file: MemoryFile) -> dict:
    """What every file page's header needs (its tabs show what the person may do)."""
    return {
        "project": project,
        "role": role,
        "file": file,
        "can_edit": permissions.can_edit_file(request.user, role, file),
        "can_delete": permissions.can_delete_file(request.user, role, file),
    }
