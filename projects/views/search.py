"""Search a project's memory (reviewers): current files, and old revisions on request."""

from django.shortcuts import render
from django.utils.translation import gettext as _

from projects.governance import permissions
from projects.governance.trail import audit_read
from projects.memory import search
from projects.rendering import highlighted
from projects.views import paging
from projects.views.base import project_view


@project_view(capability=permissions.can_review)
def search_view(request, project, role):
    """Search a project's memory: current files, and old revisions on request."""
    query = request.GET.get("q", "").strip()[:200]
    history = request.GET.get("history") == "1"
    terms = search.search_terms(query)
    context = {"project": project, "role": role, "query": query, "history": history, "terms": terms}
    if query and not terms:
        context["error"] = _("Type at least one word to search for.")
    elif terms:
        hits = search.search_memory(project=project, query=query, history=history)
        page = paging.page_of(hits, paging.SEARCH, request)
        context["page"] = page
        context["hits"] = [(hit, highlighted(search.excerpt(hit.text, terms))) for hit in page]
        audit_read(
            user=request.user,
            role=role,
            action="read.search",
            project=project,
            details={"query": query, "history": history, "results": page.paginator.count},
        )
    return render(request, "projects/search.html", context, status=400 if "error" in context else 200)
