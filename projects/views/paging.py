"""How many rows each kind of page shows, in one table (a file's history pages by number in
memory.history, HISTORY_PAGE_SIZE)."""

from django.core.paginator import Page, Paginator

LIST = 25  # projects, agents, people, workspace files, sessions
AUDIT = 50  # audit events, members
REVIEW = 10  # review items (each with a diff), proposals (each with a diff)
SEARCH = 20  # search hits (each with an excerpt)


def page_of(items, size: int, request) -> Page:
    """The page the request asks for (?page=), the last one when it asks past the end."""
    return Paginator(items, size).get_page(request.GET.get("page"))
