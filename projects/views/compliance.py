"""What keeps a project's memory in bounds: its isolation (prefix, bucket, the policies that
confine it, the check), a zip of its memory, and the erasure of a person's profile."""

import json
import tempfile

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from projects import drafts
from projects.forms.governance import EraseForm
from projects.governance import erasure, exports, isolation, jobs, permissions
from projects.memory import errors
from projects.models import Agent, MemoryFile, Revision
from projects.runners import credentials
from projects.views.base import project_view


@project_view(capability=permissions.can_manage, refused_to="projects:isolation")
def isolation_view(request, project, role):
    """The project's prefix and bucket, and the IAM-style policies that confine it."""
    agents = list(Agent.objects.filter(project=project).order_by("name"))
    if request.method == "POST":
        found = isolation.check_and_record([project], ran_by=request.user.get_username())
        (messages.warning if found else messages.success)(
            request,
            ngettext(
                "Isolation check: %(count)d finding.", "Isolation check: %(count)d findings.", len(found)
            )
            % {"count": len(found)}
            if found
            else _("Isolation check: every object has an owner and every record its object."),
        )
        return redirect("projects:isolation", slug=project.slug)
    wanted = request.GET.get("policy")
    if wanted:
        if wanted == "project":
            document, name = isolation.project_policy(project), f"{project.slug}-console"
        else:
            agent = next((a for a in agents if a.slug == wanted), None)
            if agent is None:
                raise Http404("No such agent.")
            document, name = credentials.runner_policy(agent), f"{project.slug}-{agent.slug}-runner"
        response = HttpResponse(
            json.dumps(document, indent=2), content_type="application/json; charset=utf-8"
        )
        response["Content-Disposition"] = f'attachment; filename="{name}-policy.json"'
        return response
    for agent in agents:
        agent.access = credentials.runner_access(agent)
    return render(
        request,
        "projects/isolation.html",
        {
            "project": project,
            "role": role,
            "agents": agents,
            "bucket": isolation.bucket_of(project),
            "project_policy": json.dumps(isolation.project_policy(project), indent=2),
            "last_check": project.isolation_checks.first(),
        },
    )


@project_view(capability=permissions.can_review)
def project_export_view(request, project, role):
    """A zip of the project's memory as it stands in S3, plus history.json."""
    out = tempfile.SpooledTemporaryFile(max_size=32 * 1024 * 1024)
    try:
        exports.project_export(by=request.user, project=project, out=out)
    except errors.StoreError as exc:  # a download that failed: back to the project, and why
        out.close()
        messages.error(request, _("%(problem)s No export was made.") % {"problem": exc.message})
        return redirect("projects:project_detail", slug=project.slug)
    out.seek(0)
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    return FileResponse(
        out, as_attachment=True, filename=f"{project.slug}-memory-{stamp}.zip", content_type="application/zip"
    )


@project_view(capability=permissions.can_manage)
def profile_erase_view(request, project, role, user_id):
    """Erase one employee's profile memory in this project, after a confirmation."""
    # A member, or someone who left the project and whose profile is still in it.
    person = get_object_or_404(
        get_user_model()
        .objects.filter(
            Q(memberships__project=project)
            | Q(memory_files__project=project, memory_files__scope=MemoryFile.Scope.USER)
        )
        .distinct(),
        pk=user_id,
    )
    # One action for the person everywhere the admin may erase (a GDPR request is about a
    # person, not a project): every such project, picked by default.
    choices = erasure.person_projects(person, by=request.user)
    files = MemoryFile.objects.filter(project__in=choices, scope=MemoryFile.Scope.USER, user=person)
    revisions = Revision.objects.filter(file__in=files).count()
    form = EraseForm(request.POST or None, username=person.get_username(), projects=choices)
    standing = erasure.holds_over(person, choices)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            picked = [p for p in choices if p.slug in form.cleaned_data["projects"]]
            # The erasure runs in the events worker (every version of every snapshot may take
            # many seconds); its page shows where it stands. Checked here as it will be there.
            try:
                job, new = jobs.erasure_queue(
                    by=request.user,
                    project=project,
                    user=person,
                    reason=form.cleaned_data["reason"],
                    projects=picked,
                )
            except ValidationError as exc:
                form.add_error("reason", exc)
            except errors.Held as exc:
                form.add_error(None, exc.message)
            else:
                drafts.saved(request, "erase", project.pk, person.pk)
                if new:
                    messages.success(
                        request,
                        _("Erasure of %(name)s's profile queued; this page shows it as it goes.")
                        % {"name": person.get_username()},
                    )
                else:
                    messages.warning(
                        request,
                        _("An erasure of %(name)s's profile is under way already; here it is.")
                        % {"name": person.get_username()},
                    )
                return redirect("projects:job", slug=project.slug, job_id=job.pk)
        status = 400
    return render(
        request,
        "projects/profile_erase.html",
        {
            "project": project,
            "role": role,
            "person": person,
            "form": form,
            "holds": standing,
            "unfinished": jobs.unfinished_job(f"erasure:{person.pk}", project=project),
            "file_count": files.count(),
            "revision_count": revisions,
        },
        status=status,
    )
