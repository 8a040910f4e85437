"""Review: the reviewer's queue of changed files, one file of it at a time, marks, and flags
with their threads (the author of a flagged revision answers, a reviewer resolves)."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _

from projects import drafts
from projects.errors import explain
from projects.governance import permissions, review, trail
from projects.memory import errors
from projects.models import Flag, MemoryFile
from projects.views import paging
from projects.views.base import project_view


@project_view(capability=permissions.can_review)
def review_queue_view(request, project, role):
    queue = review.review_queue(reviewer=request.user, project=project)
    page = paging.page_of(queue, paging.REVIEW, request)
    status = 200
    try:
        items = review.review_items(list(page.object_list))
    except errors.StoreError as exc:  # the queue and the flags are shown all the same
        items, status = [], 503
        messages.error(request, exc.message)
    _audit_review_reads(request, role, project, items)
    open_flags = Flag.objects.filter(project=project, resolved_at__isnull=True).select_related(
        "file", "file__agent", "file__user", "revision", "created_by"
    )
    return render(
        request,
        "projects/review_queue.html",
        {
            "project": project,
            "role": role,
            "page": page,
            "items": items,
            "open_flags": open_flags[:50],
            "open_flag_count": open_flags.count(),
        },
        status=status,
    )


def _audit_review_reads(request, role, project, items) -> None:
    """One read per file whose changes the page showed (not one per visit; a reload within
    trail.READ_WINDOW adds nothing)."""
    trail.audit_reads(
        user=request.user,
        role=role,
        action="read.review",
        project=project,
        reads=[(item.file, {"revision": item.file.head.number, "since": item.since}) for item in items],
    )


@project_view(capability=permissions.can_review)
def review_file_view(request, project, role, file_id):
    """One file of the reviewer's queue on its own page: where "Mark reviewed" leads next."""
    queue = review.review_queue(reviewer=request.user, project=project)
    file = queue.filter(pk=file_id).first()
    if file is None:
        file = get_object_or_404(MemoryFile, project=project, pk=file_id)
        messages.info(
            request, _("You have reviewed %(path)s up to its latest revision.") % {"path": file.display_path}
        )
        return redirect("projects:review_queue", slug=project.slug)
    status = 200
    try:
        items = review.review_items([file])
    except errors.StoreError as exc:  # the file's header and the queue's count all the same
        items, status = [], 503
        messages.error(request, exc.message)
    _audit_review_reads(request, role, project, items)
    return render(
        request,
        "projects/review_file.html",
        {
            "project": project,
            "role": role,
            "file": file,
            "item": items[0] if items else None,
            "queued": queue.count(),
        },
        status=status,
    )


@project_view(capability=permissions.can_review, methods=("POST",))
def review_mark_view(request, project, role, file_id):
    """Mark reviewed, then on to the next file of the queue (or back to it when none is left)."""
    file = get_object_or_404(MemoryFile, project=project, pk=file_id)
    # Its place in the queue before the mark takes it out: the next file is the one after it.
    queued = review.review_queue(reviewer=request.user, project=project).filter(pk=file.pk).first()
    try:
        review.review_mark(reviewer=request.user, file=file, number=_int(request.POST.get("number")))
    except ValidationError as exc:
        messages.error(request, explain(exc))
        return redirect(_back(request, "projects:review_queue", project.slug))
    following = review.review_next(reviewer=request.user, project=project, after=queued)
    if following is None:
        messages.success(
            request,
            _("Marked %(path)s reviewed. All files are reviewed up to their latest revision.")
            % {"path": file.display_path},
        )
        return redirect("projects:review_queue", slug=project.slug)
    messages.success(
        request,
        _("Marked %(path)s reviewed. Next in your queue: %(next)s.")
        % {"path": file.display_path, "next": following.display_path},
    )
    return redirect("projects:review_file", slug=project.slug, file_id=following.pk)


@project_view(capability=permissions.can_review, methods=("POST",))
def flag_create_view(request, project, role, file_id):
    file = get_object_or_404(MemoryFile, project=project, pk=file_id)
    try:
        review.flag_create(
            by=request.user,
            file=file,
            number=_int(request.POST.get("number")),
            comment=request.POST.get("comment", ""),
        )
    except ValidationError as exc:
        messages.error(request, explain(exc))
    else:
        # The review queue's form and a revision page's form keep drafts of their own.
        drafts.saved(request, "flag", file.pk)
        drafts.saved(request, "flag", file.pk, request.POST.get("number"))
        messages.success(request, _("Flagged %(path)s.") % {"path": file.display_path})
    return redirect(_back(request, "projects:review_queue", project.slug))


def _flag_of(request, project, role, flag_id) -> Flag:
    """The flag, for a reviewer of its project or the author of the flagged revision."""
    flag = (
        Flag.objects.select_related(
            "file", "file__agent", "file__user", "file__project", "revision", "created_by", "resolved_by"
        )
        .filter(project=project, pk=flag_id)
        .first()
    )
    if flag is None or not permissions.can_see_flag(request.user, role, flag):
        raise Http404("No such flag.")
    return flag


@project_view()
def flag_detail_view(request, project, role, flag_id):
    """A flag with its thread: the author of the flagged revision answers here, a reviewer
    resolves it (a note is required, and the button asks first)."""
    return _flag_page(request, project, role, _flag_of(request, project, role, flag_id))


def _flag_page(
    request, project, role, flag: Flag, *, reply_error: str = "", resolve_error: str = "", status: int = 200
):
    return render(
        request,
        "projects/flag_detail.html",
        {
            "project": project,
            "role": role,
            "flag": flag,
            "file": flag.file,
            "replies": flag.replies.select_related("author"),
            "can_resolve": permissions.can_resolve_flag(role),
            "is_author": flag.revision.author_user_id == request.user.pk,
            "reply_error": reply_error,
            "resolve_error": resolve_error,
            "reply_text": request.POST.get("text", "") if reply_error else "",
            "resolve_note": request.POST.get("note", "") if resolve_error else "",
        },
        status=status,
    )


@project_view(methods=("POST",))
def flag_reply_view(request, project, role, flag_id):
    flag = _flag_of(request, project, role, flag_id)
    try:
        review.flag_reply(by=request.user, flag=flag, text=request.POST.get("text", ""))
    except ValidationError as exc:
        return _flag_page(request, project, role, flag, reply_error=explain(exc), status=400)
    drafts.saved(request, "reply", flag.pk)
    messages.success(request, _("Your answer is in the flag's thread."))
    return redirect("projects:flag_detail", slug=project.slug, flag_id=flag.pk)


@project_view(methods=("POST",))
def flag_resolve_view(request, project, role, flag_id):
    flag = _flag_of(request, project, role, flag_id)
    permissions.require(permissions.can_resolve_flag(role))
    try:
        review.flag_resolve(by=request.user, flag=flag, note=request.POST.get("note", ""))
    except ValidationError as exc:  # nothing resolved; the page asks for the note again
        return _flag_page(request, project, role, flag, resolve_error=explain(exc), status=400)
    drafts.saved(request, "resolve", flag.pk)
    messages.success(request, _("Resolved the flag on %(path)s.") % {"path": flag.file.display_path})
    return redirect(_back(request, "projects:review_queue", project.slug))


def _int(raw) -> int:
    try:
        return int(raw)
    except (TypeError, ValueError):
        raise ValidationError(_("The form was incomplete; nothing was changed."), code="incomplete") from None


def _back(request, name: str, slug: str) -> str:
    """Back to the page the form was on (same site only), else to `name`."""
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return reverse(name, kwargs={"slug": slug})
