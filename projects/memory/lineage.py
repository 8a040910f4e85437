"""Line maps in the database: recorded by every save (`record`, called by
recording.record_revision under the file's row lock), rebuilt for blame in one query
(`line_map`), and filled in for history older than them (`fill_file`: texts from the search
copies, else from S3; a text that is gone makes an approximate map, never a guess called exact).
The numbers themselves are memory.linemaps'."""

from __future__ import annotations

import logging

from django.core.cache import cache
from django.db.models import Q

from projects.memory import linemaps
from projects.memory.content import decode
from projects.memory.errors import StorageUnavailable
from projects.memory.reading import cache_key
from projects.memory.storage import storage_for
from projects.models import LineMap, MemoryFile, Revision, SearchText

logger = logging.getLogger(__name__)


class MapMissing(Exception):
    """A row a map needs is not stored (history older than line maps, not filled in yet)."""


def facts_of(revision: Revision) -> linemaps.Facts:
    return linemaps.Facts(
        pk=revision.pk,
        number=revision.number,
        is_deletion=revision.is_deletion,
        restored_from=revision.restored_from,
        merged_base=revision.merged_base,
        renamed=revision.renamed_from_id is not None,
    )


def _rows(file_id, numbers) -> dict[int, tuple[int, bytes]]:
    return {
        number: (base, bytes(data))
        for number, base, data in LineMap.objects.filter(file_id=file_id, number__in=numbers).values_list(
            "number", "base", "data"
        )
    }


def _stored_maps(file_id, number: int) -> dict[int, list[int]]:
    """The maps of `number` and its chain: one query (a second only for rows stored against
    another base). MapMissing when a row is not there."""
    if number <= 0:
        return {0: []}
    rows = _rows(file_id, linemaps.chain(number))
    for _attempt in range(64):
        try:
            return linemaps.rebuild(rows, number)
        except KeyError as missing:
            wanted = missing.args[0]
            more = _rows(file_id, [wanted])
            if not more:
                raise MapMissing(wanted) from None
            rows.update(more)
    raise MapMissing(number)


def line_map(file: MemoryFile, number: int) -> list[int]:
    """The identities of revision `number`'s lines (linemaps.identity), filled in first when
    older history has no map yet."""
    try:
        return _stored_maps(file.pk, number)[number]
    except MapMissing:
        fill_file(file, upto=number)
        return _stored_maps(file.pk, number)[number]


def line_maps(wanted: list[tuple[MemoryFile, int]]) -> dict[tuple, list[int]]:
    """line_map for many (file, revision) pairs, e.g. the files of a prompt: their rows in one
    query a few hundred pairs at a time. {(file id, number): map}."""
    found: dict[tuple, list[int]] = {}
    pairs = list({(f.pk, n): (f, n) for f, n in wanted}.values())
    for start in range(0, len(pairs), 200):
        batch = pairs[start : start + 200]
        query = Q()
        for f, n in batch:
            query |= Q(file_id=f.pk, number__in=linemaps.chain(n))
        rows: dict = {}
        for file_id, number, base, data in LineMap.objects.filter(query).values_list(
            "file_id", "number", "base", "data"
        ):
            rows.setdefault(file_id, {})[number] = (base, bytes(data))
        for f, n in batch:
            try:
                found[(f.pk, n)] = linemaps.rebuild(rows.get(f.pk, {}), n)[n]
            except KeyError:  # older history: filled in first
                found[(f.pk, n)] = line_map(f, n)
    return found


# --- Texts ------------------------------------------------------------------------------------------


class _Texts:
    """Texts of one file's revisions, for matching lines: the cache, then the search copies
    (the database keeps one per revision), then S3; None for a text that is gone."""

    def __init__(self, file: MemoryFile, known: dict[int, str] | None = None):
        self.file = file
        self.texts: dict[int, str | None] = dict(known or {})
        self.revisions: dict[int, Revision] = {}

    def prefetch(self, revisions: list[Revision]) -> None:
        self.revisions.update({r.number: r for r in revisions})
        wanted = [r for r in revisions if r.number not in self.texts]
        for r in wanted:
            if r.is_deletion:
                self.texts[r.number] = ""
        live = [r for r in wanted if not r.is_deletion]
        if not live:
            return
        cached = cache.get_many([cache_key(r) for r in live])
        for r in live:
            if cache_key(r) in cached:
                self.texts[r.number] = cached[cache_key(r)]
        missing = [r.number for r in live if r.number not in self.texts]
        for start in range(0, len(missing), 500):
            for number, text in SearchText.objects.filter(
                file_id=self.file.pk, number__in=missing[start : start + 500]
            ).values_list("number", "text"):
                self.texts[number] = text

    def __call__(self, number: int) -> str | None:
        if number not in self.texts:
            revision = (
                self.revisions.get(number)
                or Revision.objects.filter(file_id=self.file.pk, number=number).first()
            )
            if revision is None:
                return None
            self.prefetch([revision])
            if number not in self.texts:
                self.texts[number] = self._from_storage(revision)
        return self.texts[number]

    def _from_storage(self, revision: Revision) -> str | None:
        """The snapshot's text; None when it is gone for good (purged, or no object). Storage
        not answering raises: a map is never made approximate for an outage."""
        if revision.purged_at is not None or not revision.snapshot_key:
            return None
        data = storage_for(self.file.project).body(revision.snapshot_key)
        return decode(data) if data is not None else None


def _renamed_source(revision: Revision):
    """The lines and map of the revision a rename moved here: the source file's latest
    revision with these bytes, made before this one."""

    def source(_facts: linemaps.Facts):
        if revision.renamed_from_id is None:
            return None
        origin = (
            Revision.objects.filter(
                file_id=revision.renamed_from_id,
                sha256=revision.sha256,
                is_deletion=False,
                pk__lt=revision.pk,
            )
            .select_related("file__project")
            .order_by("-number")
            .first()
        )
        if origin is None:
            return None
        text = _Texts(origin.file)(origin.number)
        if text is None:
            return None
        return linemaps.lines_of(text), line_map(origin.file, origin.number)

    return source


# --- Writing ------------------------------------------------------------------------------------------


def record(locked: MemoryFile, revision: Revision, text: str, *, parent: Revision | None = None) -> None:
    """Store the new revision's map; under the file's row lock, in the save's transaction. The
    parent's map is stored already (every save stores its own), unless the history is older
    than line maps: then it is filled in first. `parent`: the head the save replaced, when the
    caller has its row (its text is then looked up without reading the row again)."""
    number = revision.number
    texts = _Texts(locked, {number: text})
    if parent is not None and parent.number == number - 1:
        texts.revisions[parent.number] = parent
    try:
        for _attempt in range(2):
            rows = _rows(locked.pk, linemaps.chain(number - 1)) if number > 1 else {}
            try:
                new_rows = linemaps.fill([facts_of(revision)], rows, texts, _renamed_source(revision))
            except KeyError:  # history older than line maps
                fill_file(locked, upto=number - 1)
                continue
            _store(locked, {number: revision}, new_rows)
            return
    except StorageUnavailable:
        # A text it needed could not be read (the parent's is nearly always in the cache or
        # the search copies): the save stands, and the first blame that needs this map makes it.
        logger.warning("line map of %s r%s left for later: storage did not answer", locked.pk, number)


def _store(file: MemoryFile, revisions: dict[int, Revision], rows: list[linemaps.NewRow]) -> None:
    LineMap.objects.bulk_create(
        [
            LineMap(
                revision=revisions[row.number],
                file=file,
                number=row.number,
                base=row.base,
                lines=row.lines,
                data=row.data,
                approximate=row.approximate,
            )
            for row in rows
        ],
        ignore_conflicts=True,  # a fill running at the same time computes the same rows
    )


def fill_file(file: MemoryFile, *, upto: int | None = None, batch: int = 500) -> int:
    """Fill in the maps a file's history lacks (up to revision `upto`), in number order, from
    the first one missing. Texts come from the search copies, else S3; a text that is gone
    gives an approximate map. Safe to run twice at once. Returns how many were stored."""
    if upto is None:
        upto = file.head.number if file.head_id else 0
    present = set(LineMap.objects.filter(file=file, number__lte=upto).values_list("number", flat=True))
    missing = [n for n in range(1, upto + 1) if n not in present]
    if not missing:
        return 0
    stored = 0
    start = missing[0]
    rows = {
        number: (base, bytes(data))
        for number, base, data in LineMap.objects.filter(file=file, number__lt=start).values_list(
            "number", "base", "data"
        )
    }
    texts = _Texts(file)
    for first in range(start, upto + 1, batch):
        revisions = list(
            Revision.objects.filter(
                file=file, number__gte=first, number__lt=min(first + batch, upto + 1)
            ).order_by("number")
        )
        texts.prefetch(revisions)
        by_number = {r.number: r for r in revisions}
        todo = [r for r in revisions if r.number not in present]
        for r in revisions:
            if r.number in present:  # stored meanwhile by a save: read it for what follows
                rows.update(_rows(file.pk, [r.number]))
        new_rows = linemaps.fill(
            [facts_of(r) for r in todo],
            rows,
            texts,
            lambda facts, by_number=by_number: _renamed_source(by_number[facts.number])(facts),
        )
        _store(file, by_number, new_rows)
        stored += len(new_rows)
    return stored
