"""One memory file: read, edit with live preview, history, revisions, diff, restore, delete.

Every read and write goes through projects.store (no second path to S3). A failed save never
loses text: the page comes back with the text in the editor and says what went wrong.
"""

from urllib.parse import quote

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Count
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST
from django.views.defaults import bad_request

from projects import drafts
from projects.audit import Actor
from projects.errors import explain
from projects.forms import DeleteForm, EditForm, ResolveForm, RestoreForm
from projects.governance import permissions
from projects.governance.trail import audit_read
from projects.memory import (
    adoption,
    errors,
    history,
    layout,
    merging,
    reading,
    records,
    removal,
    scanning,
    store,
)
from projects.memory import holds as memory_holds
from projects.memory.content import within_limit
from projects.memory.diffing import diff_texts
from projects.models import MemoryFile, RefusedWrite, Revision
from projects.rendering import render_markdown
from projects.system_text import actor_shown


def _file_or_404(request, slug, file_id, *, edit: bool = False):
    project, role = permissions.project_or_404(request.user, slug)
    file = (MemoryFile.objects.select_related("head", "project", "agent", "user")
            .filter(project=project, pk=file_id).first())
    if file is None or not permissions.can_read_file(request.user, role, file):
        raise Http404("No such file.")
    if edit and not permissions.can_edit_file(request.user, role, file):
        raise Http404("No such file.")
    return project, role, file


def _revision_or_404(file, number) -> Revision:
    return get_object_or_404(Revision.objects.select_related("author_user", "author_agent",
                                                             "renamed_from", "renamed_to"),
                             file=file, number=number)


def _base_context(request, project, role, file) -> dict:
    return {
        "project": project, "role": role, "file": file,
        "can_edit": permissions.can_edit_file(request.user, role, file),
        "can_delete": permissions.can_delete_file(request.user, role, file),
    }


@login_required
def file_detail(request, slug, file_id):
    project, role, file = _file_or_404(request, slug, file_id)
    context = _base_context(request, project, role, file)
    status = 200
    try:
        content = reading.file_read(file)
        context.update(content=content, html=render_markdown(content.text))
    except errors.StoreError as exc:
        context["error"] = exc.message
        status = 503
    else:
        audit_read(user=request.user, role=role, action="read.file", project=project, obj=file,
                   details={"revision": file.head.number if file.head else None})
    # Reviewers see every open flag; the author of a flagged revision sees those on their work.
    open_flags = file.flags.filter(resolved_at__isnull=True)
    if not permissions.can_review(role):
        open_flags = open_flags.filter(revision__author_user=request.user)
    context["open_flags"] = list(open_flags.select_related("revision", "created_by")
                                 .annotate(reply_count=Count("replies")))
    if permissions.can_review(role) or permissions.can_manage(role):
        context["refused"] = list(file.refused_writes.filter(state=RefusedWrite.State.PRESENT)
                                  .select_related("project"))
        context["can_delete_refused"] = permissions.can_manage(role)
        context["holds"] = memory_holds.covering_file(file)
    context["recent"] = history.file_history(file, 1, per_page=5)
    context["delete_form"] = DeleteForm(initial={"base_revision": file.head.number if file.head else 0})
    return render(request, "projects/file_detail.html", context, status=status)


@login_required
def file_edit(request, slug, file_id):
    project, role, file = _file_or_404(request, slug, file_id, edit=True)
    context = _base_context(request, project, role, file)
    context["max_bytes"] = settings.MGC_MAX_FILE_BYTES
    if request.method == "POST" and request.POST.get("action") == "resolve":
        return _resolve(request, context, file)
    if request.method == "POST":
        form = EditForm(request.POST)
        status = 400
        if form.is_valid():
            data = form.cleaned_data
            try:
                revision = store.file_save(
                    file=file, content=data["content"], actor=Actor.person(request.user),
                    message=data["message"], base_revision=data["base_revision"])
            except errors.SaveConflict as conflict:
                # Merge the person's text with what is in storage now, over the revision they
                # opened; the form is rebased on the new head so the merged text can be saved.
                context.update(_merged(file, base=data["base_revision"], head=conflict.head,
                                       theirs=conflict.head_text, yours=conflict.your_text,
                                       message=data["message"], summary=conflict.summary))
                return render(request, "projects/file_edit.html", context, status=409)
            except (errors.ContentRejected, errors.FileDeleted) as exc:
                form.add_error("content", exc.message)
            except errors.StorageUnavailable as exc:
                context["error"] = exc.message
                status = 503
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                drafts.saved(request, "edit", file.pk)
                if revision.number == data["base_revision"]:  # the head's own text: no revision
                    messages.info(request, _("Nothing changed since revision %(number)s, so no "
                                             "revision was made.") % {"number": revision.number})
                    return redirect("projects:file_detail", slug=project.slug, file_id=file.pk)
                messages.success(request, _("Saved revision %(number)s.") % {"number": revision.number})
                if revision.findings:
                    messages.warning(request, _(
                        "The scanner saw what may be personal data or a secret: %(found)s. "
                        "Reviewers see it flagged; remove it if agents should not read it.")
                        % {"found": scanning.summary(revision.findings)})
                return redirect("projects:file_detail", slug=project.slug, file_id=file.pk)
        if form.has_error("content", "merge_markers"):
            # Refused for its markers: show the choices again, the person's edits kept.
            resolve = ResolveForm(request.POST)
            if resolve.is_valid():
                data = resolve.cleaned_data
                head = _revision_or_404(file, data["merge_head"])
                context.update(_merged(
                    file, base=data["merge_base"], head=head, yours=data["your_text"],
                    theirs=reading.revision_read(head),
                    message=data["message"], summary=_("Some overlapping changes are not "
                                                       "settled yet.")))
        context.update(form=form, opened_revision=form.data.get("base_revision"),
                       preview_html=render_markdown(form.data.get("content", "")))
        return render(request, "projects/file_edit.html", context, status=status)

    try:
        content = reading.file_read(file)
    except errors.StoreError as exc:
        context["error"] = exc.message
        return render(request, "projects/file_edit.html", context, status=503)
    head = file.head
    base = head.number if head else None
    if within_limit(content.text)[1]:
        # Larger than a save allows (adopted before adoption refused such objects): a page of
        # tens of megabytes that could not be saved either. Restore a smaller revision.
        context["error"] = _("This revision is larger than a memory file may be, so it cannot "
                             "be edited here. Restore an earlier revision from the history, or "
                             "delete the file.")
        return render(request, "projects/file_edit.html", context, status=409)
    form = EditForm(initial={"content": content.text, "base_revision": base})
    context.update(form=form, opened_revision=base, content=content,
                   preview_html=render_markdown(content.text))
    return render(request, "projects/file_edit.html", context)


@login_required
def file_new(request, slug):
    """The editor for a workspace file that does not exist yet (?path=...). Its record is made
    only by the first save, so leaving the editor without saving leaves nothing behind."""
    project, role = permissions.project_or_404(request.user, slug)
    permissions.require(permissions.can_manage(role))
    try:
        path = layout.validate_workspace_path(request.GET.get("path", ""))
        if records.file_lookup(project=project, scope=MemoryFile.Scope.WORKSPACE, path=path) is None:
            records.workspace_name_free(project=project, path=path)
    except ValidationError as exc:
        messages.error(request, explain(exc))
        return redirect("projects:workspace", slug=project.slug)
    existing = records.file_lookup(project=project, scope=MemoryFile.Scope.WORKSPACE, path=path)
    if request.method == "POST":
        if existing is None and request.POST.get("action") == "resolve":
            raise Http404("No such merge.")  # nothing to merge with: no record made either
        form = EditForm(request.POST)
        if form.is_valid() or existing is not None:
            # The first save: from here on it is the file's own editor (saving, conflicts
            # with someone who created the same path meanwhile, errors with the text kept).
            try:
                file = existing or records.workspace_file_new(project=project, path=path)
            except ValidationError as exc:  # a look-alike name was made meanwhile
                form.add_error(None, exc)
            else:
                response = file_edit(request, slug, file.pk)
                if response.status_code == 302:  # saved: the new file's draft is taken too
                    drafts.saved(request, "new", project.pk, path)
                return response
        status = 400
    else:
        if existing is not None and existing.head is not None:
            return redirect("projects:file_edit", slug=project.slug, file_id=existing.pk)
        form = EditForm(initial={"content": "", "base_revision": None})
        status = 200
    draft = MemoryFile(project=project, scope=MemoryFile.Scope.WORKSPACE, path=path)
    return render(request, "projects/file_edit.html", {
        "project": project, "role": role, "file": draft, "draft": True, "can_edit": True,
        "form": form, "opened_revision": None, "max_bytes": settings.MGC_MAX_FILE_BYTES,
        "preview_html": render_markdown(form.data.get("content", ""))}, status=status)


def _merged(file: MemoryFile, *, base: int | None, head: Revision | None, theirs: str,
            yours: str, message: str, summary: str, choices: dict | None = None) -> dict:
    """The editor's context after a conflict: the three-way merge of the person's text and the
    head over the revision they opened, who changed the file in between, and the choices left."""
    base_revision = (Revision.objects.filter(file=file, number=base).select_related("file__project")
                     .first() if base else None)
    base_text = reading.revision_read(base_revision) if base_revision else ""
    head_number = head.number if head else None
    theirs_label = (_("revision %(number)s, by %(author)s") % {
        "number": head_number, "author": head.author_shown} if head else _("storage"))
    result = merging.merge(base_text, theirs, yours, choices=choices, theirs_label=theirs_label,
                           yours_label=_("your text"))
    changes = (Revision.objects.filter(file=file, number__gt=base or 0)
               .order_by("number").values_list("author_label", "author_kind"))[:50]
    changers = list(dict.fromkeys(changes))
    form = EditForm(initial={"content": result.text, "message": message,
                             "base_revision": head_number, "merging": bool(result.unresolved)})
    return {
        "form": form, "opened_revision": head_number, "preview_html": render_markdown(result.text),
        "merge": result, "merge_summary": summary, "merge_head": head,
        "merge_changers": [(actor_shown(label), Revision.AuthorKind(kind).label)
                           for label, kind in changers],
        "merge_diff": diff_texts(theirs, result.text),
        "resolve_form": ResolveForm(initial=(initial := {
            "merge_base": base, "merge_head": head_number, "your_text": yours,
            "message": message})),
        "merge_carry": ResolveForm(initial=initial, auto_id=False),  # the editor's copy
        "your_text": yours,
        "merge_hunks": [(h, (choices or {}).get(h.index)) for h in result.hunks],
    }


def _resolve(request, context: dict, file: MemoryFile):
    """Apply the person's choices for the overlapping changes; nothing is saved yet."""
    form = ResolveForm(request.POST)
    if not form.is_valid():
        if form.has_error("your_text"):  # more than a file may hold: nothing to merge
            return bad_request(request, ValidationError(form.errors["your_text"]))
        raise Http404("No such merge.")
    data = form.cleaned_data
    head = _revision_or_404(file, data["merge_head"])
    theirs = reading.revision_read(head)
    context.update(_merged(file, base=data["merge_base"], head=head, theirs=theirs,
                           yours=data["your_text"], message=data["message"],
                           summary=_("Your choices are applied below; check the text and save."),
                           choices=form.choices(request.POST)))
    return render(request, "projects/file_edit.html", context)


@login_required
@require_POST
def preview(request):
    """Live preview: the same server-side pipeline as the read view. No side effects."""
    text = request.POST.get("content", "")
    if len(text.encode("utf-8", errors="replace")) > settings.MGC_MAX_FILE_BYTES:
        return JsonResponse({"error": _("The text is larger than the file size limit.")},
                            status=413)
    text = text.replace("\r\n", "\n")
    warnings = [{"label": f.label, "line": f.line, "excerpt": f.excerpt}
                for f in scanning.scan(text)]
    return JsonResponse({"html": render_markdown(text), "warnings": warnings,
                         "bytes": len(text.encode("utf-8", errors="replace"))})


@login_required
def file_history(request, slug, file_id):
    project, role, file = _file_or_404(request, slug, file_id)
    context = _base_context(request, project, role, file)
    context["page"] = history.file_history(file, request.GET.get("page"))
    audit_read(user=request.user, role=role, action="read.history", project=project, obj=file)
    return render(request, "projects/file_history.html", context)


@login_required
def revision_detail(request, slug, file_id, number):
    project, role, file = _file_or_404(request, slug, file_id)
    revision = _revision_or_404(file, number)
    context = _base_context(request, project, role, file)
    try:
        text = reading.revision_read(revision)
    except errors.StoreError as exc:
        context.update(revision=revision, error=exc.message)
        return render(request, "projects/revision_detail.html", context, status=503)
    audit_read(user=request.user, role=role, action="read.revision", project=project, obj=file,
               details={"revision": revision.number})
    context.update(
        revision=revision, text=text, html=render_markdown(text),
        raw=request.GET.get("view") == "raw",
        # No message typed: the store records "Restore revision N" as a code, which every
        # reader then sees in their own language.
        restore_form=RestoreForm(initial={"base_revision": file.head.number if file.head else 0}),
        restore_default=_("Restore revision %(number)s") % {"number": revision.number},
        is_head=file.head_id == revision.pk,
    )
    if revision.renamed_to_id and file.is_deleted and file.head_id == revision.pk:
        moved = MemoryFile.objects.select_related("head").filter(pk=revision.renamed_to_id).first()
        if moved is not None and moved.head is not None and not moved.is_deleted and \
                permissions.can_delete_file(request.user, role, moved):
            context["undo_rename"] = {"file": moved, "form": RestoreForm(initial={
                "base_revision": moved.head.number,
                "message": _("Undo the rename to %(path)s") % {"path": moved.source_path}})}
    return render(request, "projects/revision_detail.html", context)


@login_required
def revision_raw(request, slug, file_id, number):
    project, role, file = _file_or_404(request, slug, file_id)
    revision = _revision_or_404(file, number)
    try:
        text = reading.revision_read(revision)
    except errors.StoreError as exc:
        return HttpResponse(exc.message, status=503, content_type="text/plain; charset=utf-8")
    audit_read(user=request.user, role=role, action="read.download", project=project, obj=file,
               details={"revision": revision.number})
    response = HttpResponse(text, content_type="text/markdown; charset=utf-8")
    name = file.path.rsplit("/", 1)[-1].removesuffix(".md")
    response["Content-Disposition"] = (
        f'attachment; filename="r{revision.number}.md"; '
        f"filename*=UTF-8''{quote(name, safe='')}.r{revision.number}.md")
    response["X-Content-Type-Options"] = "nosniff"
    return response


@login_required
def file_diff(request, slug, file_id):
    project, role, file = _file_or_404(request, slug, file_id)
    head_number = file.head.number if file.head else 0
    try:
        b = int(request.GET.get("b", head_number))
        a = int(request.GET.get("a", max(b - 1, 1)))
    except ValueError:
        raise Http404("No such revision.") from None
    old, new = _revision_or_404(file, a), _revision_or_404(file, b)
    context = _base_context(request, project, role, file)
    mode = "unified" if request.GET.get("mode") == "unified" else "split"
    try:
        diff = diff_texts(reading.revision_read(old), reading.revision_read(new))
    except errors.StoreError as exc:
        context.update(error=exc.message, old=old, new=new, mode=mode)
        return render(request, "projects/file_diff.html", context, status=503)
    audit_read(user=request.user, role=role, action="read.diff", project=project, obj=file,
               details={"from": old.number, "to": new.number})
    # Revision numbers are typed, not picked from a list of them, so the page costs the same
    # whatever the length of the history (bench/run.py compares 10 and 10,010 revisions).
    context.update(old=old, new=new, diff=diff, mode=mode, head_number=head_number)
    return render(request, "projects/file_diff.html", context)


@login_required
@require_POST
def file_restore(request, slug, file_id, number):
    project, role, file = _file_or_404(request, slug, file_id, edit=True)
    form = RestoreForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("The restore form was incomplete; nothing was changed."))
        return redirect("projects:revision_detail", slug=slug, file_id=file.pk, number=number)
    try:
        revision = store.file_restore(file=file, number=number, actor=Actor.person(request.user),
                                      message=form.cleaned_data["message"],
                                      base_revision=form.cleaned_data["base_revision"])
    except errors.SaveConflict as conflict:
        messages.error(request, _("%(summary)s Nothing was restored; look at the latest revision "
                                  "and try again.") % {"summary": conflict.summary})
        return redirect("projects:file_history", slug=slug, file_id=file.pk)
    except (errors.StoreError, ValidationError) as exc:
        messages.error(request, explain(exc))
        return redirect("projects:revision_detail", slug=slug, file_id=file.pk, number=number)
    drafts.saved(request, "restore", file.pk, number)
    messages.success(request, _("Restored revision %(old)s as revision %(new)s.")
                     % {"old": number, "new": revision.number})
    return redirect("projects:file_detail", slug=slug, file_id=file.pk)


@login_required
@require_POST
def file_delete(request, slug, file_id):
    project, role, file = _file_or_404(request, slug, file_id)
    if not permissions.can_delete_file(request.user, role, file):
        raise Http404("No such file.")
    form = DeleteForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("The delete form was incomplete; nothing was changed."))
        return redirect("projects:file_detail", slug=slug, file_id=file.pk)
    try:
        removal.file_delete(file=file, actor=Actor.person(request.user),
                            message=form.cleaned_data["message"],
                            base_revision=form.cleaned_data["base_revision"])
    except errors.SaveConflict as conflict:
        messages.error(request, _("%(summary)s Nothing was deleted.") % {"summary": conflict.summary})
        return redirect("projects:file_detail", slug=slug, file_id=file.pk)
    except errors.StoreError as exc:
        messages.error(request, exc.message)
        return redirect("projects:file_detail", slug=slug, file_id=file.pk)
    drafts.saved(request, "delete", file.pk)
    messages.success(request, _("Deleted. The history is kept and any revision can be restored."))
    return redirect("projects:file_detail", slug=slug, file_id=file.pk)


@login_required
@require_POST
def refused_delete(request, slug, refused_id):
    """Delete a write the console refused from storage (admins); back to where it was listed."""
    project, role = permissions.project_or_404(request.user, slug)
    permissions.require(permissions.can_manage(role))
    refused = get_object_or_404(RefusedWrite.objects.select_related("project", "file"),
                                pk=refused_id, project=project)
    try:
        adoption.refused_write_delete(refused=refused, by=request.user)
    except errors.StoreError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, _("Deleted the refused write at %(key)s from storage.")
                         % {"key": refused.relative_key})
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}) or \
            not target.startswith("/"):
        target = reverse("projects:workspace", args=[project.slug])
    return redirect(target)


@login_required
@require_POST
def file_rename_undo(request, slug, file_id, number):
    """Undo a rename from the tombstone it left: the file goes back to this path (its history
    grows on both sides: a tombstone at the new path, a revision here that names it)."""
    project, role, file = _file_or_404(request, slug, file_id, edit=True)
    tombstone = _revision_or_404(file, number)
    moved = (MemoryFile.objects.select_related("head", "project", "agent", "user")
             .filter(project=project, pk=tombstone.renamed_to_id).first())
    if moved is None or not permissions.can_delete_file(request.user, role, moved):
        raise Http404("No such rename.")
    form = RestoreForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("The form was incomplete; nothing was changed."))
        return redirect("projects:revision_detail", slug=slug, file_id=file.pk, number=number)
    try:
        _gone, revision = removal.file_rename(
            file=moved, target=file, actor=Actor.person(request.user),
            message=form.cleaned_data["message"] or _("Undo the rename to %(path)s")
            % {"path": moved.source_path}, base_revision=form.cleaned_data["base_revision"])
    except errors.SaveConflict as conflict:
        messages.error(request, _("%(summary)s Nothing was renamed; look at the latest revision "
                                  "and try again.") % {"summary": conflict.summary})
        return redirect("projects:file_history", slug=slug, file_id=moved.pk)
    except errors.StoreError as exc:
        messages.error(request, exc.message)
        return redirect("projects:revision_detail", slug=slug, file_id=file.pk, number=number)
    messages.success(request, _("Renamed back: %(path)s is revision %(number)s again.")
                     % {"path": file.source_path, "number": revision.number})
    return redirect("projects:file_detail", slug=slug, file_id=file.pk)
