"""A file's history: its revisions newest first, one page at a time."""

from __future__ import annotations

from django.core.paginator import Page, Paginator

from projects.models import MemoryFile, Revision

HISTORY_PAGE_SIZE = 50  # revisions per history page (the other page sizes: views/paging.py)


class _RevisionPaginator(Paginator):
    """Revisions are numbered 1..n with no gaps and n is the head's number, so the count is
    known without COUNT(*) and page k is a range of numbers on the (file, number) index
    instead of an OFFSET: the last page of 10,000 revisions costs what the first does."""

    def __init__(self, revisions, per_page: int, total: int):
        super().__init__(revisions, per_page)
        self._total = total

    @property
    def count(self) -> int:
        return self._total

    def page(self, number) -> Page:
        number = self.validate_number(number)
        top = self._total - (number - 1) * self.per_page
        rows = list(self.object_list.filter(number__lte=top, number__gt=top - self.per_page))
        return self._get_page(rows, number, self)


def file_history(file: MemoryFile, page: int | str = 1, per_page: int = HISTORY_PAGE_SIZE) -> Page:
    """Revisions newest first, one page of them."""
    revisions = (
        Revision.objects.filter(file=file)
        .select_related("author_user", "author_agent", "renamed_from", "renamed_to")
        .order_by("-number")
    )
    total = file.head.number if file.head_id else 0
    return _RevisionPaginator(revisions, per_page, total).get_page(page)
