"""The search copies of memory texts (derived from S3; the bucket stays the source): kept in
step by the save transaction, rebuilt by `manage.py index_search`."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Subquery

from projects.models import MemoryFile, Revision, SearchText


def index_revision(file: MemoryFile, revision: Revision, text: str) -> None:
    """Make `revision` the file's searchable head; call inside the save's transaction.

    The head's copy it replaces is found by (file, number): a file's copies are written in
    number order and only the newest can be its head. `is_head` is in no index on purpose:
    clearing it is then a HOT update, which leaves the full-text index alone. (With it
    indexed, PostgreSQL wrote the old text's GIN entries again on every save: about 10 ms
    for 64 KB.)"""
    newest = SearchText.objects.filter(file=file, number__lt=revision.number).order_by("-number")
    SearchText.objects.filter(pk=Subquery(newest.values("pk")[:1]), is_head=True).update(is_head=False)
    if not revision.is_deletion:
        SearchText.objects.create(
            file=file, number=revision.number, text=text, created_at=revision.created_at
        )


def index_head(file: MemoryFile, text: str) -> None:
    """(Re)build the search copy of a file's head from its text (read from S3 by the caller):
    for files saved before search existed."""
    with transaction.atomic():
        SearchText.objects.filter(file=file).update(is_head=False)
        SearchText.objects.update_or_create(
            file=file,
            number=file.head.number,
            defaults={"is_head": True, "text": text, "created_at": file.head.created_at},
        )


def forget_revisions(file: MemoryFile, numbers: list[int]) -> None:
    """Drop the search copies of revisions whose text is gone (retention)."""
    SearchText.objects.filter(file=file, number__in=numbers).delete()


def forget_file(file: MemoryFile) -> None:
    """Drop every search copy of a file whose texts are gone (an expiry)."""
    SearchText.objects.filter(file=file).delete()
