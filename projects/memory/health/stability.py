"""How much of a prompt a model provider can cache: the bytes it shares with the previous
prompt from its first byte (pure: no Django, no I/O), and a section order that keeps that
prefix long.

Providers cache a prompt's longest prefix that is byte-identical to one they saw before
(Anthropic bills cache reads at a tenth of the input price), so a section that changes every
session costs everything after it. Putting rarely-changing sections first keeps the prefix.
"""

from __future__ import annotations

from dataclasses import dataclass


def stable_prefix(previous: bytes, current: bytes) -> int:
    """Bytes of `current` identical to `previous` from the first byte."""
    limit = min(len(previous), len(current))
    if previous[:limit] == current[:limit]:
        return limit
    low, high = 0, limit  # binary search on prefix equality: C-speed comparisons
    while low < high:
        middle = (low + high + 1) // 2
        if previous[:middle] == current[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def share(previous: bytes | str, current: bytes | str) -> float:
    """The stable prefix as a share of the current prompt (0.0 .. 1.0; 1.0 for an empty one)."""
    a = previous.encode() if isinstance(previous, str) else previous
    b = current.encode() if isinstance(current, str) else current
    return stable_prefix(a, b) / len(b) if b else 1.0


@dataclass(frozen=True)
class SectionRate:
    tag: str
    changes: int  # sessions whose section differed from the previous session's
    pairs: int  # consecutive session pairs compared
    size: int  # its average size (bytes of text, or tokens)

    @property
    def rate(self) -> float:
        return self.changes / self.pairs if self.pairs else 0.0


def change_rates(histories: list[list[list[tuple[str, str, int]]]]) -> list[SectionRate]:
    """Per section, in the order first seen: how often it changed from one session to the
    next. `histories`: per agent and person, their sessions in time order, each session a
    list of (tag, what the section held: its text or its files' revisions, its size)."""
    changes: dict[str, int] = {}
    pairs: dict[str, int] = {}
    sizes: dict[str, list[int]] = {}
    order: list[str] = []
    for history in histories:
        previous: dict[str, str] | None = None
        for sections in history:
            current = {tag: held for tag, held, _size in sections}
            for tag, held, size in sections:
                if tag not in order:
                    order.append(tag)
                sizes.setdefault(tag, []).append(size)
                if previous is not None:
                    pairs[tag] = pairs.get(tag, 0) + 1
                    changes[tag] = changes.get(tag, 0) + (previous.get(tag) != held)
            previous = current
    return [
        SectionRate(tag, changes.get(tag, 0), pairs.get(tag, 0), sum(sizes[tag]) // len(sizes[tag]))
        for tag in order
    ]


def suggested_order(rates: list[SectionRate]) -> list[str]:
    """Rarely-changing sections first (ties keep the admin's order): the longest prefix stays
    identical from one session to the next."""
    return [r.tag for _, r in sorted(enumerate(rates), key=lambda item: (round(item[1].rate, 2), item[0]))]


def expected_share(rates: list[SectionRate], order: list[str], *, lead: int = 0) -> float:
    """The share of a prompt expected to repeat the previous one when its sections stand in
    `order`: each section's size counts while no section before it (nor itself) changed,
    taking changes as independent (the figure the settings page compares orders by). `lead`:
    the size of what opens every prompt the same way (the preface)."""
    by_tag = {r.tag: r for r in rates}
    total = lead + sum(by_tag[t].size for t in order if t in by_tag)
    if not total:
        return 1.0
    still, stable = 1.0, float(lead)
    for tag in order:
        rate = by_tag.get(tag)
        if rate is None:
            continue
        still *= 1.0 - rate.rate
        stable += still * rate.size
    return stable / total
