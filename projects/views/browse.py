"""Browsing: projects -> agents, people, workspace tree. Thin: permissions decide, templates show."""

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import urlencode

from projects.forms.files import NewWorkspaceFileForm
from projects.governance import permissions, prompts, review, setup
from projects.memory import layout, records, refusals, tree
from projects.models import Agent, Membership, MemoryFile
from projects.views import paging
from projects.views.base import project_view


@login_required
def project_list_view(request):
    visible = permissions.visible_projects(request.user)
    archived = request.GET.get("archived") == "1"  # archived ones are listed on request only
    projects = visible.filter(archived_at__isnull=not archived).order_by("name", "pk")
    page = paging.page_of(projects, paging.LIST, request)
    setup.count_agents(page)
    can_audit = permissions.reviewable_projects(request.user).exists()
    return render(
        request,
        "projects/project_list.html",
        {
            "page": page,
            "can_audit": can_audit,
            "archived": archived,
            "archived_count": visible.filter(archived_at__isnull=False).count(),
        },
    )


@project_view()
def project_detail_view(request, project, role):
    archived = request.GET.get("archived") == "1"
    agents = Agent.objects.filter(project=project).order_by("name")
    context = {
        "project": project,
        "role": role,
        "agents": paging.page_of(agents.filter(archived_at__isnull=not archived), paging.LIST, request),
        "archived_agents": archived,
        "archived_agent_count": agents.filter(archived_at__isnull=False).count(),
        "can_see_workspace": permissions.can_see_workspace(role),
        "member_count": project.memberships.count(),
        "workspace_count": MemoryFile.objects.filter(
            project=project, head__isnull=False, scope=MemoryFile.Scope.WORKSPACE
        ).count(),
        "pending_count": project.proposals.filter(
            permissions.visible_proposals(request.user, role), status="pending"
        ).count(),
    }
    if permissions.can_review(role):
        context["review_count"] = review.review_queue(reviewer=request.user, project=project).count()
    if not permissions.sees_everyone(role):
        context["my_profile"] = records.file_lookup(
            project=project, scope=MemoryFile.Scope.USER, user=request.user, path=layout.USER_FILE
        )
    return render(request, "projects/project_detail.html", context)


@project_view()
def agent_detail_view(request, project, role, agent_slug):
    agent = get_object_or_404(Agent, project=project, slug=agent_slug)
    existing = {
        f.path: f for f in MemoryFile.objects.filter(project=project, agent=agent).select_related("head")
    }
    files = [(name, existing.get(name)) for name in layout.AGENT_FILES]
    cut = prompts.truncated_agents([project], agent=agent)
    return render(
        request,
        "projects/agent_detail.html",
        {
            "project": project,
            "role": role,
            "agent": agent,
            "files": files,
            "can_edit": permissions.can_manage(role),
            "chart": prompts.prompt_chart(agent),
            "truncation": cut[0] if cut else None,
            "recent_days": prompts.RECENT_DAYS,
        },
    )


@project_view()
def people_view(request, project, role):
    members = Membership.objects.filter(project=project).select_related("user").order_by("user__username")
    if not permissions.sees_everyone(role):
        members = members.filter(user=request.user)
    page = paging.page_of(members, paging.LIST, request)
    profiles = {
        f.user_id: f
        for f in MemoryFile.objects.filter(
            project=project, scope=MemoryFile.Scope.USER, user_id__in=[m.user_id for m in page]
        ).select_related("head")
    }
    rows = [(m, profiles.get(m.user_id)) for m in page]
    # People who left the project keep their profile until it is erased: admins see them
    # here, to erase it (members.html's Remove does not touch memory).
    former = []
    if permissions.can_manage(role):
        former = list(
            MemoryFile.objects.filter(project=project, scope=MemoryFile.Scope.USER)
            .exclude(user__memberships__project=project)
            .select_related("user", "head")
            .order_by("user__username")[:200]
        )
    return render(
        request,
        "projects/people.html",
        {
            "project": project,
            "role": role,
            "page": page,
            "rows": rows,
            "former": former,
        },
    )


@project_view(capability=permissions.can_see_workspace)
def workspace_view(request, project, role):
    folder = request.GET.get("dir", "").strip("/")
    form = NewWorkspaceFileForm(initial={"path": f"{folder}/" if folder else ""})
    return _workspace_page(request, project, role, folder, form)


@project_view(capability=permissions.can_manage, methods=("POST",))
def workspace_new_view(request, project, role):
    """Check the path, then open the editor; the file is created by its first save
    (editor.file_new_view)."""
    form = NewWorkspaceFileForm(request.POST)
    if form.is_valid():
        path = form.cleaned_data["path"]
        existing = records.file_lookup(project=project, scope=MemoryFile.Scope.WORKSPACE, path=path)
        if existing is not None:
            return redirect("projects:file_edit", slug=project.slug, file_id=existing.pk)
        try:
            records.workspace_name_free(project=project, path=path)
        except ValidationError as exc:
            form.add_error("path", exc)
        else:
            return redirect(
                f"{reverse('projects:file_new', args=[project.slug])}?{urlencode({'path': path})}"
            )
    # Refused: the folder the person was in, with the error and the path as they typed it.
    folder = request.POST.get("dir", "").strip("/")
    return _workspace_page(request, project, role, "" if "\x00" in folder else folder, form, status=400)


def _workspace_page(request, project, role, folder: str, form, status: int = 200):
    here = tree.workspace_folder(project, folder)
    page = paging.page_of(here.files, paging.LIST, request)
    return render(
        request,
        "projects/workspace.html",
        {
            "project": project,
            "role": role,
            "folder": here.path,
            "crumbs": here.crumbs,
            "subfolders": sorted(here.subfolders),
            "page": page,
            "form": form,
            "can_create": permissions.can_manage(role),
            "refused": refusals.present(project),
            "can_delete": permissions.can_manage(role),
        },
        status=status,
    )


@project_view(methods=("POST",))
def file_open_view(request, project, role):
    """Create the record of an agent's or employee's file that has no content yet, then edit."""
    scope = request.POST.get("scope")
    try:
        if scope == MemoryFile.Scope.AGENT:
            agent = get_object_or_404(Agent, project=project, pk=request.POST.get("agent"))
            permissions.require(permissions.can_manage(role))
            file = records.file_ensure(
                project=project, scope=MemoryFile.Scope.AGENT, agent=agent, path=request.POST.get("path", "")
            )
        elif scope == MemoryFile.Scope.USER:
            user = get_object_or_404(
                get_user_model(), pk=request.POST.get("user"), memberships__project=project
            )
            permissions.require(permissions.can_manage(role) or user.pk == request.user.pk)
            file = records.file_ensure(
                project=project, scope=MemoryFile.Scope.USER, user=user, path=layout.USER_FILE
            )
        else:
            raise Http404("No such page.")
    except (ValidationError, ValueError) as exc:
        messages.error(request, " ".join(getattr(exc, "messages", [str(exc)])))
        return redirect("projects:project_detail", slug=project.slug)
    return redirect("projects:file_edit", slug=project.slug, file_id=file.pk)
