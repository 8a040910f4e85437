"""Where each line of a revision came from, as numbers (pure: no Django, no I/O).

A line's *identity* is the revision that introduced it and its place there: one integer,
`revision pk << 32 | line index in that revision`. A revision's *map* lists the identity of
each of its lines. A line a save keeps from the revision before keeps its identity; a line it
adds gets one naming the new revision. A restore takes the identities of the revision it
brings back, a rename those of the file it came from, a three-way merge those of the side
each line came from: they keep their first authors.

Maps are stored as skip-deltas (as Subversion stores texts): revision n is stored against
revision `n & (n - 1)` (n with its lowest set bit cleared; 0 is the empty map), so any map is
rebuilt from at most log2(n) + 1 rows read in one query, and a long append-only history
costs O(n log n) entries in all, not O(n^2). Each stored delta is a list of segments: a run
of the base map (`BASE, start, length`) or a run of identities written out
(`pk, first index, length`).
"""

from __future__ import annotations

import difflib
import sys
import zlib
from array import array
from collections.abc import Callable
from dataclasses import dataclass

SHIFT = 32
MASK = (1 << SHIFT) - 1
BASE = -1  # a segment that copies a run of the base map
_PLAIN, _ZIPPED = b"\x01", b"\x02"
_ZIP_FROM = 96  # bytes: smaller deltas (an append: two segments) are stored as they are
# Above this many lines on either side of the changed middle, difflib's "popular line" heuristic
# (autojunk) is on: without it a file with thousands of blank lines is matched in quadratic time.
_EXACT_UP_TO = 2000


def identity(pk: int, index: int) -> int:
    return (pk << SHIFT) | index


def origin(ident: int) -> tuple[int, int]:
    """(revision pk, 0-based line index in that revision)."""
    return ident >> SHIFT, ident & MASK


def lines_of(text: str) -> list[str]:
    """A text's lines as blame counts them: split at LF, a final LF ends the last line."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def skip_base(number: int) -> int:
    """The revision number whose map revision `number`'s is stored against (0: none)."""
    return number & (number - 1)


def chain(number: int) -> list[int]:
    """The numbers whose rows rebuild `number`'s map, newest first."""
    found = []
    while number > 0:
        found.append(number)
        number = skip_base(number)
    return found


# --- Deriving a map ---------------------------------------------------------------------------------


def matching_blocks(old: list[str], new: list[str]) -> list[tuple[int, int, int]]:
    """(i, j, size) runs with old[i:i+size] == new[j:j+size], in order. The common head and
    tail are taken first (an append or a one-line edit costs a comparison, not a diff)."""
    head = 0
    limit = min(len(old), len(new))
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]:
        tail += 1
    blocks = [(0, 0, head)] if head else []
    a, b = old[head : len(old) - tail], new[head : len(new) - tail]
    if a and b:
        matcher = difflib.SequenceMatcher(None, a, b, autojunk=max(len(a), len(b)) > _EXACT_UP_TO)
        blocks += [(i + head, j + head, n) for i, j, n in matcher.get_matching_blocks() if n]
    if tail:
        blocks.append((len(old) - tail, len(new) - tail, tail))
    return blocks


Source = tuple[list[str], list[int]]  # a text's lines and its map


def derive(child: list[str], sources: list[Source], pk: int) -> list[int]:
    """The map of a text whose lines are `child`, written as revision `pk`: each line found in
    a source (tried in order; the first claims it) keeps that line's identity, the rest are
    new. An identity is used once, so a line two sources share counts once."""
    found: list[int | None] = [None] * len(child)
    used: set[int] = set()
    for lines, idents in sources:
        for i, j, size in matching_blocks(lines, child):
            for k in range(size):
                ident = idents[i + k]
                if found[j + k] is None and ident not in used:
                    found[j + k] = ident
                    used.add(ident)
    return [ident if ident is not None else identity(pk, j) for j, ident in enumerate(found)]


# --- Storing a map against its base -----------------------------------------------------------------


def encode(idents: list[int], base: list[int]) -> bytes:
    """`idents` as segments over `base`, packed (little-endian int64 triples, zlib when that
    pays)."""
    position = {ident: p for p, ident in enumerate(base)}
    flat: list[int] = []
    j, n = 0, len(idents)
    while j < n:
        p = position.get(idents[j])
        size = 1
        if p is not None:
            while j + size < n and p + size < len(base) and base[p + size] == idents[j + size]:
                size += 1
            flat += (BASE, p, size)
        else:
            first = idents[j]
            while (
                j + size < n
                and idents[j + size] == first + size
                and (first & MASK) + size <= MASK
                and idents[j + size] not in position
            ):
                size += 1
            pk, index = origin(first)
            flat += (pk, index, size)
        j += size
    packed = array("q", flat)
    if sys.byteorder == "big":
        packed.byteswap()
    data = packed.tobytes()
    if len(data) >= _ZIP_FROM:
        return _ZIPPED + zlib.compress(data, 6)
    return _PLAIN + data


def segments(data: bytes) -> list[tuple[int, int, int]]:
    if not data:
        return []
    body = zlib.decompress(data[1:]) if data[:1] == _ZIPPED else data[1:]
    packed = array("q")
    packed.frombytes(body)
    if sys.byteorder == "big":
        packed.byteswap()
    return [(packed[k], packed[k + 1], packed[k + 2]) for k in range(0, len(packed), 3)]


def apply(data: bytes, base: list[int]) -> list[int]:
    """The map `data` encodes over `base`."""
    out: list[int] = []
    for source, start, size in segments(data):
        if source == BASE:
            out += base[start : start + size]
        else:
            first = identity(source, start)
            out += range(first, first + size)
    return out


def rebuild(rows: dict[int, tuple[int, bytes]], number: int) -> dict[int, list[int]]:
    """Maps of `number` and of every row on its way, from {number: (base, data)} holding
    `number`'s chain (a row's base is read from the row, so rows stored against another base
    work too). KeyError names a missing row."""
    order, at = [], number
    while at > 0:
        order.append(at)
        at = rows[at][0]
    maps: dict[int, list[int]] = {0: []}
    for at in reversed(order):
        base, data = rows[at]
        maps[at] = apply(data, maps[base])
    return maps


def position_in(data: bytes, base_position: int | None, ident: int) -> int | None:
    """Where `ident` stands in the map `data` encodes, given where it stood in the base map
    (None: not there). Walks the segments only; no map is built."""
    out = 0
    for source, start, size in segments(data):
        if source == BASE:
            if base_position is not None and start <= base_position < start + size:
                return out + base_position - start
        else:
            first = identity(source, start)
            if first <= ident < first + size:
                return out + ident - first
        out += size
    return None


# --- Which sources a revision's lines are matched against ---------------------------------------


@dataclass(frozen=True)
class Facts:
    """What a revision row says about where its text came from."""

    pk: int
    number: int
    is_deletion: bool = False
    restored_from: int | None = None
    merged_base: int | None = None
    renamed: bool = False  # the first revision at a path a rename moved the file to


def derive_for(
    facts: Facts,
    text: str,
    same_file: Callable[[int], Source | None],
    renamed_source: Callable[[], Source | None],
) -> list[int]:
    """The map of a revision, whoever computes it (the save path, the backfill, a lazy fill),
    so that all of them agree: a restore matches the revision it brings back first, a rename
    the file it came from, a merge the revision saved meanwhile and then the one the person
    had opened; every save then its parent. `same_file(n)` gives revision n's lines and map
    (None when unknown); `renamed_source()` the renamed file's."""
    if facts.is_deletion:
        return []
    sources: list[Source | None] = []
    if facts.restored_from:
        sources.append(same_file(facts.restored_from))
    if facts.renamed:
        sources.append(renamed_source())
    if facts.number > 1:
        sources.append(same_file(facts.number - 1))
    if facts.merged_base:
        sources.append(same_file(facts.merged_base))
    return derive(lines_of(text), [s for s in sources if s is not None], facts.pk)


# --- Filling maps in revision order -------------------------------------------------------------------


@dataclass(frozen=True)
class NewRow:
    number: int
    base: int
    lines: int
    data: bytes
    approximate: bool


def fill(
    revisions: list[Facts],
    rows: dict[int, tuple[int, bytes]],
    text_of: Callable[[int], str | None],
    renamed_source: Callable[[Facts], Source | None],
    *,
    stop_at_gap: bool = False,
) -> list[NewRow]:
    """The maps of `revisions` (one file's, in number order), given the stored `rows` of that
    file ({number: (base, data)}, at least the chains the revisions need; new rows are added to
    it). `text_of(n)` is revision n's text, None when it is gone. A revision whose text is gone
    keeps its parent's map and is `approximate`, as is the next one (a line new against the
    last text kept may be older); with `stop_at_gap` the filling stops at the first revision
    that needs a text `text_of` lacks, for a later pass that can read it."""
    maps: dict[int, list[int]] = {0: []}
    known: dict[int, list[str] | None] = {}
    gaps: set[int] = set()  # revisions whose text was gone: taken as their parent's
    out: list[NewRow] = []

    def map_at(n: int) -> list[int]:
        if n not in maps:
            maps.update(rebuild(rows, n))
        return maps[n]

    def lines_at(n: int) -> list[str] | None:
        if n not in known:
            text = text_of(n)
            known[n] = lines_of(text) if text is not None else None
        return known[n]

    for facts in revisions:
        n = facts.number
        text = "" if facts.is_deletion else text_of(n)
        if text is None and stop_at_gap:
            break
        unknown: list[int] = []
        rough: list[int] = []

        def same_file(m: int, unknown: list[int] = unknown, rough: list[int] = rough) -> Source | None:
            lines = lines_at(m)
            if lines is None:
                unknown.append(m)
                return None
            if m in gaps:
                rough.append(m)
            return lines, map_at(m)

        if text is None:  # the text is gone: take it as unchanged
            idents = map_at(n - 1) if n > 1 else []
            known[n] = lines_at(n - 1) if n > 1 else []
            gaps.add(n)
            approximate = True
        else:
            idents = derive_for(facts, text, same_file, lambda f=facts: renamed_source(f))
            if unknown and stop_at_gap:
                break
            known[n] = lines_of(text)
            approximate = bool(unknown or rough)
        base = skip_base(n)
        data = encode(idents, map_at(base))
        rows[n] = (base, data)
        maps[n] = idents
        out.append(NewRow(n, base, len(idents), data, approximate))
    return out
