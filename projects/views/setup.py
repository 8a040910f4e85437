"""Projects and agents: opening a project (superusers), its name, description and archiving,
and a new agent (the project's admins). An agent's own settings are views/agents.py."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _

from projects import drafts
from projects.forms.setup import AgentForm, NewProjectForm, ProjectForm
from projects.governance import permissions, setup
from projects.views.base import project_view


@login_required
def project_new_view(request):
    """Superusers open projects; the creator becomes the project's first admin."""
    permissions.require(request.user.is_superuser)
    form = NewProjectForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            project = setup.project_create(by=request.user, **form.cleaned_data)
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            drafts.saved(request, "project-new")
            messages.success(
                request, _("Created %(name)s. Add members and agents next.") % {"name": project.name}
            )
            return redirect("projects:project_detail", slug=project.slug)
    return render(
        request,
        "projects/project_form.html",
        {"form": form, "creating": True},
        status=400 if form.errors else 200,
    )


@project_view(capability=permissions.can_manage)
def project_settings_view(request, project, role):
    if request.method == "POST" and request.POST.get("archive") in ("1", "0"):
        archived = request.POST["archive"] == "1"
        setup.archive_set(by=request.user, target=project, archived=archived)
        messages.success(
            request,
            _(
                "Archived %(name)s: it is hidden from lists and its agents "
                "get no prompt. Bring it back here at any time."
            )
            % {"name": project.name}
            if archived
            else _("%(name)s is back.") % {"name": project.name},
        )
        return redirect("projects:project_detail", slug=project.slug)
    form = ProjectForm(
        request.POST or None,
        initial={"name": project.name, "description": project.description, "stale_days": project.stale_days},
    )
    if request.method == "POST" and form.is_valid():
        setup.project_update(by=request.user, project=project, **form.cleaned_data)
        drafts.saved(request, "project", project.pk)
        messages.success(request, _("Saved the project's settings."))
        return redirect("projects:project_detail", slug=project.slug)
    return render(
        request,
        "projects/project_form.html",
        {"form": form, "project": project, "role": role},
        status=400 if form.errors else 200,
    )


@project_view(capability=permissions.can_manage)
def agent_new_view(request, project, role):
    form = AgentForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            agent = setup.agent_create(by=request.user, project=project, **form.cleaned_data)
        except ValidationError as exc:
            form.add_error("slug", exc)
        else:
            drafts.saved(request, "agent-new", project.pk)
            messages.success(
                request,
                _("Created %(name)s. Write its SOUL.md, then give its runner a token under Settings.")
                % {"name": agent.name},
            )
            return redirect("projects:agent_detail", slug=project.slug, agent_slug=agent.slug)
    return render(
        request,
        "projects/agent_form.html",
        {"form": form, "project": project, "role": role},
        status=400 if form.errors else 200,
    )
