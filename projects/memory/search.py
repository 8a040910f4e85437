"""Search across a project's memory: the search copies kept by indexing.py, PostgreSQL
full-text search where available, a case-folding scan elsewhere."""

from __future__ import annotations

import re

from django.db import connection
from django.db.models import QuerySet

from projects.models import Project, SearchText

SEARCH_TERMS_MAX = 8
_YO = str.maketrans("Ёё", "Ее")


def fold(text: str) -> str:
    """Text as search compares it: case folded, ё read as е ("ёжик" is found as "ежик")."""
    return text.translate(_YO).casefold()


def search_terms(query: str) -> list[str]:
    """The words of a query, without search operators; at most 8."""
    words = re.findall(r"\w[\w.@+-]*", query, flags=re.UNICODE)
    return [w for w in words if w.lower() not in {"or", "and", "not"}][:SEARCH_TERMS_MAX]


def search_memory(*, project: Project, query: str, history: bool = False) -> QuerySet:
    """Texts of a project's files that hold every word of the query, best first: PostgreSQL
    full-text search ('simple' configuration, so Russian and English words match as typed),
    elsewhere a scan in Python; both read ё as е."""

    texts = SearchText.objects.filter(file__project=project)
    if not history:
        texts = texts.filter(is_head=True)
    terms = search_terms(query)
    if connection.vendor == "postgresql":
        texts = fulltext_match(texts, terms).order_by("-rank", "-is_head", "-number")
    else:
        # SQLite's LIKE folds only ASCII case, so "мария" would miss "Мария": compare in
        # Python. A full pass over the project's texts: fine for the embedded default.
        folded = [fold(t) for t in terms]
        matching = [
            pk
            for pk, text in texts.values_list("pk", "text").iterator(chunk_size=500)
            if all(t in fold(text) for t in folded)
        ]
        texts = texts.filter(pk__in=matching).order_by("-is_head", "-created_at")
    return texts.select_related("file", "file__agent", "file__user", "file__head")


def fulltext_match(texts: QuerySet, terms: list[str]) -> QuerySet:
    """PostgreSQL: texts holding every term, with a rank. The vector is the expression of the
    GIN index made by migration 0014 (ё folded to е, in the text and in the terms), so the
    index serves it."""
    from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector
    from django.db.models import F, Func

    folded = Func(F("text"), function="translate", template="translate(%(expressions)s, 'Ёё', 'Ее')")
    vector = SearchVector(folded, config="simple")
    wanted = SearchQuery(" ".join(t.translate(_YO) for t in terms), config="simple", search_type="plain")
    return texts.annotate(vector=vector).filter(vector=wanted).annotate(rank=SearchRank(vector, wanted))


def excerpt(text: str, terms: list[str], width: int = 220) -> list[tuple[str, bool]]:
    """The part of `text` around the first match, as (piece, is_match) segments; an ellipsis
    marks text cut at either end. Plain text: rendering.highlighted makes it HTML."""
    pattern = (
        re.compile("|".join(_either_e(t) for t in sorted(terms, key=len, reverse=True)), re.IGNORECASE)
        if terms
        else None
    )
    found = pattern.search(text) if pattern else None
    first = found.start() if found else 0
    start = max(0, first - width // 3)
    window = text[start : start + width]
    pieces, last = [("…", False)] if start else [], 0
    for match in pattern.finditer(window) if pattern else []:
        pieces += [(window[last : match.start()], False), (match.group(), True)]
        last = match.end()
    pieces.append((window[last:], False))
    if start + width < len(text):
        pieces.append(("…", False))
    return pieces


def _either_e(term: str) -> str:
    """A regex for `term` where е and ё each match either (as the search itself reads them)."""
    return "".join("[ЕЁеё]" if ch in "ЕЁеё" else re.escape(ch) for ch in term)
