"""Subjects' requests: the register (the console's, and each project's), one request with its
clock and its steps, a person's own ask, and the downloads of answers and acts (audited).

Long work (finding what is held, making the package, erasing) is queued for the worker; the
request's page shows where it stands and refreshes itself while it runs."""

from __future__ import annotations

import datetime as dt

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from projects.errors import Refusal, explain
from projects.forms.subjects import AskForm, RequestForm
from projects.governance import permissions, subject_jobs, subject_records, subjects
from projects.models import AuditEvent, MemoryFile, SubjectDocument, SubjectRequest
from projects.views.base import project_view
from projects.views.paging import LIST, page_of

Kind, State = SubjectRequest.Kind, SubjectRequest.State
STATE_FILTERS = ("open", "", *State.values)


def _register_page(request, *, project=None, role=None):
    state = request.GET.get("state", "open")
    state = state if state in STATE_FILTERS else "open"
    kind = request.GET.get("kind", "")
    kind = kind if kind in Kind.values else ""
    found = subjects.requests_of(request.user, state=state, kind=kind, project=project)
    handles = permissions.handles_all_requests(request.user)
    where = (
        [project]
        if project is not None
        else list(
            permissions.reviewable_projects(request.user).filter(archived_at__isnull=True).order_by("name")
        )
    )
    can_register = handles or bool(where)
    form = None
    status = 200
    if can_register:
        form = RequestForm(
            request.POST or None,
            projects=where,
            register=handles and project is None,
            initial={"language": translation.get_language(), "project": project.slug if project else ""},
        )
        if request.method == "POST":
            if form.is_valid():
                data = form.cleaned_data
                try:
                    opened = subjects.request_open(
                        by=request.user,
                        user=data["person"],
                        project=data["project"],
                        **{
                            k: data[k] or ""
                            for k in (
                                "name",
                                "email",
                                "phone",
                                "kind",
                                "law",
                                "ground",
                                "channel",
                                "language",
                                "details",
                            )
                        },
                        received_at=data["received_at"],
                    )
                except ValidationError as exc:
                    form.add_error(None, exc)
                else:
                    messages.success(
                        request,
                        _("Registered request #%(id)s; it is due on %(due)s.")
                        % {"id": opened.pk, "due": opened.due_on.isoformat()},
                    )
                    return redirect("projects:subject_request", request_id=opened.pk)
            status = 400
    elif request.method == "POST":
        raise Http404("No such page.")
    today = timezone.localdate()
    page = page_of(found, LIST, request)
    return render(
        request,
        "projects/subject_requests.html",
        {
            "project": project,
            "role": role,
            "page": page,
            "form": form,
            "state": state,
            "kind": kind,
            "states": State.choices,
            "kinds": Kind.choices,
            "today": today,
            "soon": today + dt.timedelta(days=_soon_days()),
            "handles": handles or bool(where),
        },
        status=status,
    )


def _soon_days() -> int:
    from django.conf import settings

    return settings.MGC_SUBJECT_DUE_SOON_DAYS


@login_required
@require_http_methods(["GET", "POST"])
def register_view(request):
    """The console's register: every request the person may see, by due date."""
    return _register_page(request)


@project_view(capability=permissions.can_review, methods=("GET", "POST"))
def project_register_view(request, project, role):
    """One project's requests, for its admins and compliance officers."""
    return _register_page(request, project=project, role=role)


@login_required
@require_http_methods(["GET", "POST"])
def ask_view(request):
    """A person asks what is held about them (or for a copy, a correction, erasure...)."""
    form = AskForm(request.POST or None, initial={"language": translation.get_language()})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        opened = subjects.request_open(
            by=request.user,
            user=request.user,
            kind=data["kind"],
            law=data["law"],
            language=data["language"],
            details=data["details"],
            channel=SubjectRequest.Channel.CONSOLE,
        )
        messages.success(
            request,
            _("Your request #%(id)s is registered. It is to be answered by %(due)s.")
            % {"id": opened.pk, "due": opened.due_on.isoformat()},
        )
        return redirect("projects:subject_request", request_id=opened.pk)
    return render(
        request, "projects/subject_ask.html", {"form": form}, status=400 if request.method == "POST" else 200
    )


def _visible(request, request_id) -> SubjectRequest:
    found = (
        permissions.visible_requests(request.user)
        .select_related("project", "user", "handler", "created_by")
        .filter(pk=request_id)
        .first()
    )
    if found is None:
        raise Http404("No such request.")
    return found


@login_required
def request_view(request, request_id):
    """One request: whom it is about, its clock, what was found, its records and history."""
    subject_request = _visible(request, request_id)
    handles = permissions.can_handle_request(request.user, subject_request)
    history = AuditEvent.objects.filter(
        object_type="subjectrequest", object_id=str(subject_request.pk)
    ).order_by("seq", "pk")
    inventory = subject_request.inventory or {}
    excluded = set((subject_request.selection or {}).get("excluded", []))
    kept = (subject_request.selection or {}).get("keep", {})
    running = subject_request.job_state in (SubjectRequest.Job.QUEUED, SubjectRequest.Job.RUNNING)
    profiles = [] if not handles else inventory.get("profiles", [])
    context = {
        "req": subject_request,
        "handles": handles,
        "history": history if handles else history.filter(action__in=_PUBLIC_STEPS),
        "documents": subject_request.documents.all(),
        "inventory": inventory if handles else {},
        "mentions": [dict(m, included=m["id"] not in excluded) for m in inventory.get("mentions", [])]
        if handles
        else [],
        "third_parties": [dict(t, reason=kept.get(t["key"], "")) for t in inventory.get("third_parties", [])]
        if handles
        else [],
        "profiles": profiles,
        "running": running,
        "today": timezone.localdate(),
        "soon": timezone.localdate() + dt.timedelta(days=_soon_days()),
        "job_label": {
            subject_jobs.SEARCH: _("Finding what is held"),
            subject_jobs.PACKAGE: _("Making the answer package"),
            subject_jobs.ERASURE: _("Erasing and making the act"),
        }.get(subject_request.job, subject_request.job),
        "can_package": subject_request.kind in (Kind.ACCESS, Kind.COPY),
        "can_erase": subject_request.kind in (Kind.ERASURE, Kind.WITHDRAWAL),
        "needs_note": subject_request.kind in (Kind.CORRECTION, Kind.RESTRICTION),
        "corrections": _correction_targets(request.user, subject_request),
        "linked": subject_request.revisions.select_related("file", "file__project", "file__user"),
    }
    return render(request, "projects/subject_request.html", context)


def _correction_targets(user, subject_request: SubjectRequest) -> list[MemoryFile]:
    """The person's profiles this viewer may correct from a correction request."""
    if subject_request.kind != Kind.CORRECTION or not subject_request.is_open or not subject_request.user_id:
        return []
    files = MemoryFile.objects.filter(
        scope=MemoryFile.Scope.USER, user_id=subject_request.user_id
    ).select_related("project", "user", "head")
    if subject_request.project_id:
        files = files.filter(project_id=subject_request.project_id)
    return [
        f for f in files if permissions.can_edit_file(user, permissions.role_in(user, f.project) or "", f)
    ]


# What the person themselves sees of a request's history (the steps, not the staff's work).
_PUBLIC_STEPS = [
    "subject_request.open",
    "subject_request.identity",
    "subject_request.extend",
    "subject_request.answer",
    "subject_request.refuse",
    "subject_request.close",
]


def _step(request, subject_request: SubjectRequest, step: str):
    text = request.POST.get("text", "")
    if step == "identity":
        return subjects.identity_check(by=request.user, request=subject_request, note=text), _(
            "Identity checked."
        )
    if step == "extend":
        done = subjects.request_extend(by=request.user, request=subject_request, reason=text)
        return done, _("Extended: now due on %(due)s.") % {"due": done.due_on.isoformat()}
    if step == "refuse":
        return subjects.request_refuse(by=request.user, request=subject_request, ground=text), _("Refused.")
    if step == "answer":
        return subjects.request_answer_note(by=request.user, request=subject_request, note=text), _(
            "Answered."
        )
    if step == "close":
        return subjects.request_close(by=request.user, request=subject_request, note=text), _("Closed.")
    if step == "assign":
        handler = get_user_model().objects.filter(username=request.POST.get("handler", "").strip()).first()
        done = subjects.request_assign(by=request.user, request=subject_request, handler=handler)
        return done, _("Handler changed.")
    if step in subject_jobs.JOBS:
        if step == subject_jobs.ERASURE and not subject_request.is_open:
            raise ValidationError(
                _("The request is %(state)s.") % {"state": subject_request.get_state_display()}
            )
        started = subject_jobs.job_queue(by=request.user, request=subject_request, job=step)
        return subject_request, (
            _("Started; this page shows when it is done.") if started else _("It is running already.")
        )
    if step == "select":
        excluded = [m for m in request.POST.getlist("mention") if m]
        shown = {m["id"] for m in (subject_request.inventory or {}).get("mentions", [])}
        keep = {key: request.POST.get(f"reason:{key}", "") for key in request.POST.getlist("keep")}
        subject_jobs.selection_save(
            by=request.user, request=subject_request, excluded=sorted(shown - set(excluded)), keep=keep
        )
        return subject_request, _("Your choices are saved; the next package follows them.")
    raise Http404("No such step.")


@login_required
@require_POST
def request_step_view(request, request_id, step):
    subject_request = _visible(request, request_id)
    if not permissions.can_handle_request(request.user, subject_request):
        raise Http404("No such request.")
    try:
        _done, said = _step(request, subject_request, step)
    except (ValidationError, Refusal) as exc:
        messages.error(request, explain(exc))
    else:
        messages.success(request, said)
    return redirect("projects:subject_request", request_id=subject_request.pk)


@login_required
def document_view(request, request_id, document_id):
    """Download an answer or an act (audited: one event per download)."""
    subject_request = _visible(request, request_id)
    if not permissions.can_handle_request(request.user, subject_request):
        raise Http404("No such request.")
    document = get_object_or_404(SubjectDocument, request=subject_request, pk=document_id)
    try:
        data = subject_records.document_read(by=request.user, document=document)
    except Refusal as exc:
        messages.error(request, explain(exc))
        return redirect("projects:subject_request", request_id=subject_request.pk)
    response = HttpResponse(data, content_type="application/zip")
    response["Content-Disposition"] = (
        f'attachment; filename="request-{subject_request.pk}-{document.filename}"'
    )
    return response


@login_required
def request_status_view(request, request_id):
    """Where the request's background job stands (the page polls it while it runs)."""
    subject_request = _visible(request, request_id)
    if not permissions.can_handle_request(request.user, subject_request):
        raise Http404("No such request.")
    running = subject_request.job_state in (SubjectRequest.Job.QUEUED, SubjectRequest.Job.RUNNING)
    return JsonResponse({"job": subject_request.job, "state": subject_request.job_state, "running": running})
