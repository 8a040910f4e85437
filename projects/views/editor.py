"""The editor of a memory file, with live preview: a save, a conflict merged three ways with
the overlapping changes to choose, and a new workspace file (made by its first save).

Every write goes through memory.store (no second path to S3). A failed save never loses
text: the page comes back with the text in the editor and says what went wrong.
"""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST
from django.views.defaults import bad_request

from projects import drafts
from projects.audit import Actor
from projects.errors import explain
from projects.forms.files import EditForm, ResolveForm
from projects.governance import permissions, subjects
from projects.memory import errors, layout, merging, poisoning, reading, records, scanning, store
from projects.memory.content import within_limit
from projects.memory.diffing import diff_texts
from projects.models import MemoryFile, Revision, SubjectRequest
from projects.rendering import render_markdown
from projects.system_text import actor_shown
from projects.views.base import file_context, file_of, on_refusal_show, project_view, revision_of


@project_view()
def file_edit_view(request, project, role, file_id):
    return _editor(request, project, role, file_of(request, project, role, file_id, edit=True))


def _editor(request, project, role, file: MemoryFile):
    context = file_context(request, project, role, file)
    context["max_bytes"] = settings.MGC_MAX_FILE_BYTES
    context["subject_request"] = _correcting(request, file)
    if request.method == "POST" and request.POST.get("action") == "resolve":
        return _resolve(request, context, file)
    if request.method == "POST":
        form = EditForm(request.POST)
        status = 400
        if form.is_valid():
            data = form.cleaned_data
            try:
                revision = store.file_save(
                    file=file,
                    content=data["content"],
                    actor=Actor.person(request.user),
                    message=data["message"],
                    base_revision=data["base_revision"],
                    merged_base=_merge_base(request, data["base_revision"]),
                )
            except errors.SaveConflict as conflict:
                # Merge the person's text with what is in storage now, over the revision they
                # opened; the form is rebased on the new head so the merged text can be saved.
                context.update(
                    _merged(
                        file,
                        base=data["base_revision"],
                        head=conflict.head,
                        theirs=conflict.head_text,
                        yours=conflict.your_text,
                        message=data["message"],
                        summary=conflict.summary,
                    )
                )
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
                    messages.info(
                        request,
                        _("Nothing changed since revision %(number)s, so no revision was made.")
                        % {"number": revision.number},
                    )
                    return redirect("projects:file_detail", slug=project.slug, file_id=file.pk)
                messages.success(request, _("Saved revision %(number)s.") % {"number": revision.number})
                if context["subject_request"] is not None:
                    subjects.correction_link(
                        by=request.user, request=context["subject_request"], revision=revision
                    )
                    messages.info(
                        request,
                        _("Revision %(number)s is linked to subject request #%(id)s.")
                        % {"number": revision.number, "id": context["subject_request"].pk},
                    )
                if revision.findings:
                    messages.warning(
                        request,
                        _(
                            "The scanner saw what may be personal data or a secret: %(found)s. "
                            "Reviewers see it flagged; remove it if agents should not read it."
                        )
                        % {"found": scanning.summary(revision.findings)},
                    )
                if (revision.poisoning or {}).get("findings"):
                    messages.warning(
                        request,
                        _(
                            "The text reads like instructions planted for agents: %(found)s. It is "
                            "saved; reviewers see it flagged. Agents read it as memory."
                        )
                        % {"found": poisoning.summary(revision.poisoning["findings"])},
                    )
                return redirect("projects:file_detail", slug=project.slug, file_id=file.pk)
        if form.has_error("content", "merge_markers"):
            # Refused for its markers: show the choices again, the person's edits kept.
            resolve = ResolveForm(request.POST)
            if resolve.is_valid():
                data = resolve.cleaned_data
                head = revision_of(file, data["merge_head"])
                context.update(
                    _merged(
                        file,
                        base=data["merge_base"],
                        head=head,
                        yours=data["your_text"],
                        theirs=reading.revision_read(head),
                        message=data["message"],
                        summary=_("Some overlapping changes are not settled yet."),
                    )
                )
        context.update(
            form=form,
            opened_revision=form.data.get("base_revision"),
            preview_html=render_markdown(form.data.get("content", "")),
        )
        return render(request, "projects/file_edit.html", context, status=status)

    with on_refusal_show("projects/file_edit.html", context):
        content = reading.file_read(file)
    head = file.head
    base = head.number if head else None
    if within_limit(content.text)[1]:
        # Larger than a save allows (adopted before adoption refused such objects): a page of
        # tens of megabytes that could not be saved either. Restore a smaller revision.
        context["error"] = _(
            "This revision is larger than a memory file may be, so it cannot "
            "be edited here. Restore an earlier revision from the history, or "
            "delete the file."
        )
        return render(request, "projects/file_edit.html", context, status=409)
    form = EditForm(initial={"content": content.text, "base_revision": base})
    context.update(
        form=form, opened_revision=base, content=content, preview_html=render_markdown(content.text)
    )
    return render(request, "projects/file_edit.html", context)


@project_view(capability=permissions.can_manage)
def file_new_view(request, project, role):
    """The editor for a workspace file that does not exist yet (?path=...). Its record is made
    only by the first save, so leaving the editor without saving leaves nothing behind."""
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
                response = _editor(
                    request, project, role, file_of(request, project, role, file.pk, edit=True)
                )
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
    return render(
        request,
        "projects/file_edit.html",
        {
            "project": project,
            "role": role,
            "file": draft,
            "draft": True,
            "can_edit": True,
            "form": form,
            "opened_revision": None,
            "max_bytes": settings.MGC_MAX_FILE_BYTES,
            "preview_html": render_markdown(form.data.get("content", "")),
        },
        status=status,
    )


def _merged(
    file: MemoryFile,
    *,
    base: int | None,
    head: Revision | None,
    theirs: str,
    yours: str,
    message: str,
    summary: str,
    choices: dict | None = None,
) -> dict:
    """The editor's context after a conflict: the three-way merge of the person's text and the
    head over the revision they opened, who changed the file in between, and the choices left."""
    base_revision = (
        Revision.objects.filter(file=file, number=base).select_related("file__project").first()
        if base
        else None
    )
    base_text = reading.revision_read(base_revision) if base_revision else ""
    head_number = head.number if head else None
    theirs_label = (
        _("revision %(number)s, by %(author)s") % {"number": head_number, "author": head.author_shown}
        if head
        else _("storage")
    )
    result = merging.merge(
        base_text, theirs, yours, choices=choices, theirs_label=theirs_label, yours_label=_("your text")
    )
    changes = (
        Revision.objects.filter(file=file, number__gt=base or 0)
        .order_by("number")
        .values_list("author_label", "author_kind")
    )[:50]
    changers = list(dict.fromkeys(changes))
    form = EditForm(
        initial={
            "content": result.text,
            "message": message,
            "base_revision": head_number,
            "merging": bool(result.unresolved),
        }
    )
    return {
        "form": form,
        "opened_revision": head_number,
        "preview_html": render_markdown(result.text),
        "merge": result,
        "merge_summary": summary,
        "merge_head": head,
        "merge_changers": [(actor_shown(label), Revision.AuthorKind(kind).label) for label, kind in changers],
        "merge_diff": diff_texts(theirs, result.text),
        "resolve_form": ResolveForm(
            initial=(
                initial := {
                    "merge_base": base,
                    "merge_head": head_number,
                    "your_text": yours,
                    "message": message,
                }
            )
        ),
        "merge_carry": ResolveForm(initial=initial, auto_id=False),  # the editor's copy
        "your_text": yours,
        "merge_hunks": [(h, (choices or {}).get(h.index)) for h in result.hunks],
    }


def _correcting(request, file: MemoryFile):
    """The subject's request a profile is corrected for (`?request=` or the form's field),
    when it is a correction about this profile's owner that the person may answer."""
    wanted = request.POST.get("subject_request") or request.GET.get("request")
    if not (wanted and str(wanted).isdigit()) or file.scope != MemoryFile.Scope.USER:
        return None
    found = SubjectRequest.objects.filter(
        pk=int(wanted), kind=SubjectRequest.Kind.CORRECTION, user_id=file.user_id
    ).first()
    if found is None or not found.is_open:
        return None
    if not (permissions.can_handle_request(request.user, found) or found.user_id == request.user.pk):
        return None
    return found


def _merge_base(request, base_revision: int | None) -> int | None:
    """The revision the person had opened, when the text saved settles a merge on top of the
    head it was merged with (the editor carries both): its lines keep their authors."""
    if "merge_head" not in request.POST:
        return None
    carried = ResolveForm(request.POST)
    if not carried.is_valid() or carried.cleaned_data["merge_head"] != base_revision:
        return None
    return carried.cleaned_data["merge_base"] or None


def _resolve(request, context: dict, file: MemoryFile):
    """Apply the person's choices for the overlapping changes; nothing is saved yet."""
    form = ResolveForm(request.POST)
    if not form.is_valid():
        if form.has_error("your_text"):  # more than a file may hold: nothing to merge
            return bad_request(request, ValidationError(form.errors["your_text"]))
        raise Http404("No such merge.")
    data = form.cleaned_data
    head = revision_of(file, data["merge_head"])
    theirs = reading.revision_read(head)
    context.update(
        _merged(
            file,
            base=data["merge_base"],
            head=head,
            theirs=theirs,
            yours=data["your_text"],
            message=data["message"],
            summary=_("Your choices are applied below; check the text and save."),
            choices=form.choices(request.POST),
        )
    )
    return render(request, "projects/file_edit.html", context)


@login_required
@require_POST
def preview_view(request):
    """Live preview: the same server-side pipeline as the read view. No side effects."""
    text = request.POST.get("content", "")
    if len(text.encode("utf-8", errors="replace")) > settings.MGC_MAX_FILE_BYTES:
        return JsonResponse({"error": _("The text is larger than the file size limit.")}, status=413)
    text = text.replace("\r\n", "\n")
    warnings = [{"label": f.label, "line": f.line, "excerpt": f.excerpt} for f in scanning.scan(text)]
    warnings += [  # instructions planted for agents: a warning, as personal data is
        {"label": str(poisoning.LABELS.get(f.family, f.family)), "line": f.line, "excerpt": f.excerpt}
        for f in poisoning.scan(text, trusted_domains=settings.MGC_POISON_TRUSTED_DOMAINS)
    ]
    return JsonResponse(
        {
            "html": render_markdown(text),
            "warnings": warnings,
            "bytes": len(text.encode("utf-8", errors="replace")),
        }
    )
