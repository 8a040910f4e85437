"""Memory over its whole life: a project's retention rules with their preview, and its legal
holds (placed and released by admins and compliance officers)."""

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _

from projects.forms.lifecycle import HoldForm, HoldReleaseForm, RetentionRuleForm
from projects.governance import holds, jobs, permissions, retention
from projects.models import BackgroundJob, LegalHold, MemoryFile, RetentionRule
from projects.views.base import project_view


@project_view(capability=permissions.can_review)
def retention_view(request, project, role):
    """The rules (admins add and remove them, errors at the field) and what they expire today
    and in the next 30 days, exactly as `manage.py retention --dry-run` prints it."""
    form = RetentionRuleForm(request.POST or None)
    status = 200
    if request.method == "POST":
        permissions.require(permissions.can_manage(role))
        if "run" in request.POST:
            # A run may expire thousands of files and versions: the events worker does it, as
            # `manage.py retention` would, and the job's page shows it as it goes.
            job, new = jobs.retention_queue(by=request.user, project=project)
            if new:
                messages.success(request, _("Retention run queued; this page shows it as it goes."))
            else:
                messages.warning(request, _("A retention run is under way already; here it is."))
            return redirect("projects:job", slug=project.slug, job_id=job.pk)
        if "remove" in request.POST:
            rule = get_object_or_404(RetentionRule, project=project, pk=request.POST["remove"])
            retention.rule_remove(by=request.user, rule=rule)
            messages.success(request, _("Removed the rule %(rule)s.") % {"rule": rule.describe()})
            return redirect("projects:retention", slug=project.slug)
        if form.is_valid():
            try:
                rule = retention.rule_add(by=request.user, project=project, **form.cleaned_data)
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                messages.success(
                    request,
                    _("Added the rule %(rule)s. The preview below shows what it expires.")
                    % {"rule": rule.describe()},
                )
                return redirect("projects:retention", slug=project.slug)
        status = 400
    return render(
        request,
        "projects/retention.html",
        {
            "project": project,
            "role": role,
            "form": form,
            "rows": retention.preview(project),
            "days": retention.PREVIEW_DAYS,
            "can_edit": permissions.can_manage(role),
            "runs": jobs.jobs_of(project, kind=BackgroundJob.Kind.RETENTION, limit=3),
        },
        status=status,
    )


@project_view(capability=permissions.can_hold)
def holds_view(request, project, role):
    """Standing and released holds; place one on the project, a person, a file or a glob."""
    people = get_user_model().objects.filter(memberships__project=project).order_by("username")
    form = HoldForm(
        request.POST or None, people=people, project=project, initial={"file": request.GET.get("file", "")}
    )
    status = 200
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            try:
                # One page of versions here; a larger hold goes on in the events worker, its
                # progress on this page. A sweep the storage cut short is taken on again by the
                # same placement, reconcile or the periodic sweep: the hold stands meanwhile.
                hold, sweep = holds.hold_place(
                    by=request.user,
                    project=project,
                    reason=data["reason"],
                    case_reference=data["case_reference"],
                    user=data["person"],
                    file=data["file"],
                    glob=data["glob"],
                    budget=holds.INLINE_VERSIONS,
                )
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                said = _("Placed legal hold #%(id)s on %(what)s.") % {"id": hold.pk, "what": hold.describe()}
                if sweep.existing:
                    said = _("Legal hold #%(id)s on %(what)s was placed before: no second hold.") % {
                        "id": hold.pk,
                        "what": hold.describe(),
                    }
                said += " " + holds.sweep_summary(sweep)
                if sweep.finished:
                    messages.success(request, said)
                else:
                    messages.warning(request, said)
                if sweep.note:
                    messages.warning(request, sweep.note)
                return redirect("projects:holds", slug=project.slug)
        status = 400
    return render(
        request,
        "projects/holds.html",
        {
            "project": project,
            "role": role,
            "form": form,
            "release_form": HoldReleaseForm(),
            "holds": holds.holds_of(project),
            "hold_files": _hold_files(project),
        },
        status=status,
    )


@project_view(capability=permissions.can_hold, methods=("POST",))
def hold_release_view(request, project, role, hold_id):
    hold = get_object_or_404(LegalHold, project=project, pk=hold_id)
    form = HoldReleaseForm(request.POST)
    note = form.cleaned_data["note"] if form.is_valid() else ""
    sweep = holds.hold_release(by=request.user, hold=hold, note=note, budget=holds.INLINE_VERSIONS)
    said = _("Released legal hold #%(id)s on %(what)s.") % {"id": hold.pk, "what": hold.describe()}
    said += " " + holds.sweep_summary(sweep)
    if sweep.finished:
        messages.success(request, said)
    else:
        messages.warning(request, said)
    return redirect("projects:holds", slug=project.slug)


HOLD_SUGGESTIONS = 500  # paths offered as the file is typed; any other is still typed in full


def _hold_files(project) -> list[str]:
    """The paths a hold on one file is chosen from, as the pages show them."""
    files = (
        MemoryFile.objects.filter(project=project, head__isnull=False)
        .select_related("agent", "user")
        .order_by("scope", "path")[:HOLD_SUGGESTIONS]
    )
    return sorted(f.display_path for f in files)
