"""One memory file: read, history, a revision (rendered, raw, downloaded), diff, restore,
delete, a rename undone, and deleting a write the console refused. The editor is
views/editor.py. Every read and write goes through memory.store (no second path to S3)."""

from urllib.parse import quote

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db.models import Count
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _

from projects import drafts
from projects.audit import Actor
from projects.errors import explain
from projects.forms.files import DeleteForm, RestoreForm
from projects.governance import permissions
from projects.governance.trail import audit_read
from projects.memory import adoption, blame, errors, history, reading, removal, store
from projects.memory import holds as memory_holds
from projects.memory.diffing import diff_texts
from projects.models import MemoryFile, RefusedWrite
from projects.rendering import render_markdown
from projects.views.base import file_context, file_of, on_refusal_show, project_view, revision_of


@project_view()
def file_detail_view(request, project, role, file_id):
    file = file_of(request, project, role, file_id)
    context = file_context(request, project, role, file)
    status = 200
    try:
        content = reading.file_read(file)
        context.update(content=content, html=render_markdown(content.text))
    except errors.StoreError as exc:  # the file's flags, holds and history are shown all the same
        context["error"] = exc.message
        status = 503
    else:
        audit_read(
            user=request.user,
            role=role,
            action="read.file",
            project=project,
            obj=file,
            details={"revision": file.head.number if file.head else None},
        )
    # Reviewers see every open flag; the author of a flagged revision sees those on their work.
    open_flags = file.flags.filter(resolved_at__isnull=True)
    if not permissions.can_review(role):
        open_flags = open_flags.filter(revision__author_user=request.user)
    context["open_flags"] = list(
        open_flags.select_related("revision", "created_by").annotate(reply_count=Count("replies"))
    )
    if permissions.can_review(role) or permissions.can_manage(role):
        context["refused"] = list(
            file.refused_writes.filter(state=RefusedWrite.State.PRESENT).select_related("project")
        )
        context["can_delete_refused"] = permissions.can_manage(role)
        context["holds"] = memory_holds.covering_file(file)
    context["recent"] = history.file_history(file, 1, per_page=5)
    context["delete_form"] = DeleteForm(initial={"base_revision": file.head.number if file.head else 0})
    return render(request, "projects/file_detail.html", context, status=status)


@project_view()
def file_history_view(request, project, role, file_id):
    file = file_of(request, project, role, file_id)
    context = file_context(request, project, role, file)
    context["page"] = history.file_history(file, request.GET.get("page"))
    audit_read(user=request.user, role=role, action="read.history", project=project, obj=file)
    return render(request, "projects/file_history.html", context)


@project_view()
def revision_detail_view(request, project, role, file_id, number):
    file = file_of(request, project, role, file_id)
    revision = revision_of(file, number)
    context = file_context(request, project, role, file)
    context["revision"] = revision
    with on_refusal_show("projects/revision_detail.html", context):
        text = reading.revision_read(revision)
    audit_read(
        user=request.user,
        role=role,
        action="read.revision",
        project=project,
        obj=file,
        details={"revision": revision.number},
    )
    context.update(
        text=text,
        html=render_markdown(text),
        raw=request.GET.get("view") == "raw",
        # No message typed: the store records "Restore revision N" as a code, which every
        # reader then sees in their own language.
        restore_form=RestoreForm(initial={"base_revision": file.head.number if file.head else 0}),
        restore_default=_("Restore revision %(number)s") % {"number": revision.number},
        is_head=file.head_id == revision.pk,
    )
    if revision.session_ref:  # an agent's write: its session, and what it did before writing
        session = blame.sessions_named([revision.session_ref]).get(revision.session_ref)
        if permissions.can_see_session(request.user, role, session):
            context.update(session=session, tool_calls=blame.tool_calls_before(revision))
    if revision.renamed_to_id and file.is_deleted and file.head_id == revision.pk:
        moved = MemoryFile.objects.select_related("head").filter(pk=revision.renamed_to_id).first()
        if (
            moved is not None
            and moved.head is not None
            and not moved.is_deleted
            and permissions.can_delete_file(request.user, role, moved)
        ):
            context["undo_rename"] = {
                "file": moved,
                "form": RestoreForm(
                    initial={
                        "base_revision": moved.head.number,
                        "message": _("Undo the rename to %(path)s") % {"path": moved.source_path},
                    }
                ),
            }
    return render(request, "projects/revision_detail.html", context)


@project_view()
def revision_raw_view(request, project, role, file_id, number):
    file = file_of(request, project, role, file_id)
    revision = revision_of(file, number)
    try:
        text = reading.revision_read(revision)
    except errors.StoreError as exc:  # a download: plain text, as the file would have been
        return HttpResponse(exc.message, status=503, content_type="text/plain; charset=utf-8")
    audit_read(
        user=request.user,
        role=role,
        action="read.download",
        project=project,
        obj=file,
        details={"revision": revision.number},
    )
    response = HttpResponse(text, content_type="text/markdown; charset=utf-8")
    name = file.path.rsplit("/", 1)[-1].removesuffix(".md")
    response["Content-Disposition"] = (
        f'attachment; filename="r{revision.number}.md"; '
        f"filename*=UTF-8''{quote(name, safe='')}.r{revision.number}.md"
    )
    response["X-Content-Type-Options"] = "nosniff"
    return response


@project_view()
def file_diff_view(request, project, role, file_id):
    file = file_of(request, project, role, file_id)
    head_number = file.head.number if file.head else 0
    try:
        b = int(request.GET.get("b", head_number))
        a = int(request.GET.get("a", max(b - 1, 1)))
    except ValueError:
        raise Http404("No such revision.") from None
    old, new = revision_of(file, a), revision_of(file, b)
    context = file_context(request, project, role, file)
    mode = "unified" if request.GET.get("mode") == "unified" else "split"
    context.update(old=old, new=new, mode=mode)
    with on_refusal_show("projects/file_diff.html", context):
        diff = diff_texts(reading.revision_read(old), reading.revision_read(new))
    audit_read(
        user=request.user,
        role=role,
        action="read.diff",
        project=project,
        obj=file,
        details={"from": old.number, "to": new.number},
    )
    # Revision numbers are typed, not picked from a list of them, so the page costs the same
    # whatever the length of the history (bench/run.py compares 10 and 10,010 revisions).
    context.update(diff=diff, head_number=head_number)
    return render(request, "projects/file_diff.html", context)


@project_view(methods=("POST",), refused_to="projects:revision_detail")
def file_restore_view(request, project, role, file_id, number):
    file = file_of(request, project, role, file_id, edit=True)
    form = RestoreForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("The restore form was incomplete; nothing was changed."))
        return redirect("projects:revision_detail", slug=project.slug, file_id=file.pk, number=number)
    try:
        revision = store.file_restore(
            file=file,
            number=number,
            actor=Actor.person(request.user),
            message=form.cleaned_data["message"],
            base_revision=form.cleaned_data["base_revision"],
        )
    except errors.SaveConflict as conflict:
        messages.error(
            request,
            _("%(summary)s Nothing was restored; look at the latest revision and try again.")
            % {"summary": conflict.summary},
        )
        return redirect("projects:file_history", slug=project.slug, file_id=file.pk)
    except ValidationError as exc:
        messages.error(request, explain(exc))
        return redirect("projects:revision_detail", slug=project.slug, file_id=file.pk, number=number)
    drafts.saved(request, "restore", file.pk, number)
    messages.success(
        request, _("Restored revision %(old)s as revision %(new)s.") % {"old": number, "new": revision.number}
    )
    return redirect("projects:file_detail", slug=project.slug, file_id=file.pk)


@project_view(methods=("POST",), refused_to="projects:file_detail")
def file_delete_view(request, project, role, file_id):
    file = file_of(request, project, role, file_id)
    if not permissions.can_delete_file(request.user, role, file):
        raise Http404("No such file.")
    form = DeleteForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("The delete form was incomplete; nothing was changed."))
        return redirect("projects:file_detail", slug=project.slug, file_id=file.pk)
    try:
        removal.file_delete(
            file=file,
            actor=Actor.person(request.user),
            message=form.cleaned_data["message"],
            base_revision=form.cleaned_data["base_revision"],
        )
    except errors.SaveConflict as conflict:
        messages.error(request, _("%(summary)s Nothing was deleted.") % {"summary": conflict.summary})
        return redirect("projects:file_detail", slug=project.slug, file_id=file.pk)
    drafts.saved(request, "delete", file.pk)
    messages.success(request, _("Deleted. The history is kept and any revision can be restored."))
    return redirect("projects:file_detail", slug=project.slug, file_id=file.pk)


@project_view(capability=permissions.can_manage, methods=("POST",))
def refused_delete_view(request, project, role, refused_id):
    """Delete a write the console refused from storage (admins); back to where it was listed."""
    refused = get_object_or_404(
        RefusedWrite.objects.select_related("project", "file"), pk=refused_id, project=project
    )
    try:
        adoption.refused_write_delete(refused=refused, by=request.user)
    except errors.StoreError as exc:  # back where it was listed, as after a delete
        messages.error(request, exc.message)
    else:
        messages.success(
            request, _("Deleted the refused write at %(key)s from storage.") % {"key": refused.relative_key}
        )
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}
    ) or not target.startswith("/"):
        target = reverse("projects:workspace", args=[project.slug])
    return redirect(target)


@project_view(methods=("POST",), refused_to="projects:revision_detail")
def file_rename_undo_view(request, project, role, file_id, number):
    """Undo a rename from the tombstone it left: the file goes back to this path (its history
    grows on both sides: a tombstone at the new path, a revision here that names it)."""
    file = file_of(request, project, role, file_id, edit=True)
    tombstone = revision_of(file, number)
    moved = (
        MemoryFile.objects.select_related("head", "project", "agent", "user")
        .filter(project=project, pk=tombstone.renamed_to_id)
        .first()
    )
    if moved is None or not permissions.can_delete_file(request.user, role, moved):
        raise Http404("No such rename.")
    form = RestoreForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("The form was incomplete; nothing was changed."))
        return redirect("projects:revision_detail", slug=project.slug, file_id=file.pk, number=number)
    try:
        _gone, revision = removal.file_rename(
            file=moved,
            target=file,
            actor=Actor.person(request.user),
            message=form.cleaned_data["message"]
            or _("Undo the rename to %(path)s") % {"path": moved.source_path},
            base_revision=form.cleaned_data["base_revision"],
        )
    except errors.SaveConflict as conflict:
        messages.error(
            request,
            _("%(summary)s Nothing was renamed; look at the latest revision and try again.")
            % {"summary": conflict.summary},
        )
        return redirect("projects:file_history", slug=project.slug, file_id=moved.pk)
    messages.success(
        request,
        _("Renamed back: %(path)s is revision %(number)s again.")
        % {"path": file.source_path, "number": revision.number},
    )
    return redirect("projects:file_detail", slug=project.slug, file_id=file.pk)
