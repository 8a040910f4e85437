"""Pages of the console. Thin: permissions decide, the store reads, templates show."""

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import Http404
from django.shortcuts import render

from projects import permissions, store
from projects.models import Agent, Membership, MemoryFile
from projects.rendering import render_markdown

PAGE_SIZE = 25


@login_required
def project_list(request):
    projects = (permissions.visible_projects(request.user)
                .annotate(agent_count=Count("agents", distinct=True)).order_by("name"))
    page = Paginator(projects, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "projects/project_list.html", {"page": page})


@login_required
def project_detail(request, slug):
    project, role = permissions.project_or_404(request.user, slug)
    files = MemoryFile.objects.filter(project=project).select_related("head", "agent", "user")
    if role == permissions.EMPLOYEE:
        files = files.filter(Q(scope=MemoryFile.Scope.AGENT)
                             | Q(scope=MemoryFile.Scope.USER, user=request.user))
    page = Paginator(files.order_by("scope", "path"), PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "projects/project_detail.html", {
        "project": project,
        "role": role,
        "agents": Agent.objects.filter(project=project).order_by("name"),
        "members": Membership.objects.filter(project=project).select_related("user")
        if role != permissions.EMPLOYEE else [],
        "page": page,
    })


@login_required
def file_detail(request, slug, file_id):
    project, role = permissions.project_or_404(request.user, slug)
    file = (MemoryFile.objects.select_related("head", "project", "agent", "user")
            .filter(project=project, pk=file_id).first())
    if file is None or not permissions.can_read_file(request.user, role, file):
        raise Http404("No such file.")
    error = ""
    try:
        content = store.file_read(file)
    except store.StoreError as exc:
        content, error = None, exc.message
    history = store.file_history(file, request.GET.get("page"))
    return render(request, "projects/file_detail.html", {
        "project": project,
        "file": file,
        "content": content,
        "html": render_markdown(content.text) if content else "",
        "error": error,
        "history": history,
    }, status=503 if error else 200)
