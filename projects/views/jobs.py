"""A background job's page (an erasure, a retention run): where it stands, refreshed while it
runs; a failed one can be started again and goes on from where it stopped."""

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _

from projects.governance import jobs, permissions
from projects.models import BackgroundJob
from projects.views.base import project_view


@project_view(capability=permissions.can_review)
def job_view(request, project, role, job_id):
    job = get_object_or_404(BackgroundJob.objects.select_related("requested_by"), project=project, pk=job_id)
    if request.method == "POST":
        permissions.require(permissions.can_manage(role))
        if jobs.job_retry(job=job):
            messages.success(request, _("Started again: it goes on from where it stopped."))
        else:
            messages.warning(request, _("It is not failed, or another like it is under way."))
        return redirect("projects:job", slug=project.slug, job_id=job.pk)
    return render(
        request,
        "projects/job.html",
        {
            "project": project,
            "role": role,
            "job": job,
            "stalled": jobs.stalled(job),
            "can_retry": permissions.can_manage(role) and job.state == BackgroundJob.State.FAILED,
        },
    )
