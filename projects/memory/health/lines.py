"""Duplicates and contradiction candidates among lines of memory (pure: no Django, no I/O).

A line is compared in its *normal form*: list markers (`-`, `*`, `1.`) dropped, whitespace
collapsed, case folded. Two lines are

- **exact duplicates** when their normal forms are equal;
- **near duplicates** when the token-set Jaccard similarity of their words (|A ∩ B| / |A ∪ B|,
  words as `\\w+` runs, `db-2` and `0.5` one word each) reaches a threshold (0.8 by
  default, `MGC_HEALTH_NEAR_DUPLICATE`), and they are not a contradiction candidate;
- **contradiction candidates** when they start with the same words (the subject), differ in
  one run of at most two words (the value: both numbers, or both words that are not
  function words) and end alike: "pool size 20" / "pool size 40", "prefers Russian" /
  "prefers English".

Headings, code fences, table rules and lines of fewer than two words are left out.
"""

from __future__ import annotations

import difflib
import re
from collections import defaultdict
from dataclasses import dataclass

NEAR_DUPLICATE = 0.8
MAX_VALUE_WORDS = 2
MAX_LINES = 5000  # lines compared in one pool; beyond it the oldest are left out

_MARKER_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_WORD_RE = re.compile(r"\w+(?:[-.]\w+)*")
_NUMBER_RE = re.compile(r"^\d+(?:[.,]\d+)?$")
# Words that do not carry a value: "is 20" / "was 20" are not a contradiction, nor "on" / "at".
FUNCTION_WORDS = frozenset(
    "a an the and or but of to in on at by for with from as is are was were be been it its this "
    "that these those not no never do does did has have had will would can could should may "
    "и в во на с со к по за из от до о об что это не нет ни а но или".split()
)


def normal(text: str) -> str:
    """The line's normal form ("" for a line that is not compared)."""
    stripped = text.strip()
    if not stripped or stripped.startswith(("#", "```", "~~~", "|", "<!--")) or set(stripped) <= set("-=*_ "):
        return ""
    return " ".join(_MARKER_RE.sub("", stripped).split()).casefold()


def words(text: str) -> list[str]:
    return _WORD_RE.findall(text.casefold())


def jaccard(a: set[str], b: set[str]) -> float:
    """Token-set Jaccard similarity: shared words over all words (1.0 for equal sets)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


@dataclass(frozen=True)
class Pair:
    """Two compared lines, by their index in the list given; `first` is the earlier."""

    first: int
    second: int
    kind: str  # exact | near | contradiction
    similarity: float  # Jaccard of their word sets
    subject: str = ""  # for a contradiction: the words they share before the values
    values: tuple[str, str] = ("", "")  # for a contradiction: the two values


def _is_value(run: list[str]) -> bool:
    return bool(run) and len(run) <= MAX_VALUE_WORDS and not any(w in FUNCTION_WORDS for w in run)


def contradiction(a: list[str], b: list[str]) -> tuple[str, tuple[str, str]] | None:
    """(subject, (value a, value b)) when the word lists say different values of one subject."""
    if a == b:
        return None
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    va, vb = a[head : len(a) - tail], b[head : len(b) - tail]
    subject = a[:head]
    if not subject or not any(w not in FUNCTION_WORDS for w in subject):
        return None
    if not (_is_value(va) and _is_value(vb)):
        return None
    if _spelling(" ".join(va), " ".join(vb)):
        return None  # "deploy" / "deploys": the same value, spelt otherwise (a near duplicate)
    numeric = [all(_NUMBER_RE.match(w) for w in run) for run in (va, vb)]
    if numeric[0] != numeric[1]:
        return None  # "pool size 20" / "pool size large": not the same kind of value
    return " ".join(subject), (" ".join(va), " ".join(vb))


def _spelling(a: str, b: str) -> bool:
    if a.isdigit() or b.isdigit():
        return False
    return a.startswith(b) or b.startswith(a) or difflib.SequenceMatcher(None, a, b).ratio() >= 0.8


def compare(texts: list[str], *, near: float = NEAR_DUPLICATE) -> list[Pair]:
    """Every exact duplicate (each later copy paired with the first), near duplicate and
    contradiction candidate among `texts`, in order of their second line."""
    normals = [normal(t) for t in texts]
    tokens = [words(n) if n else [] for n in normals]
    keep = [i for i, w in enumerate(tokens) if len(w) >= 2][-MAX_LINES:]
    pairs: list[Pair] = []
    first_of: dict[str, int] = {}
    index: dict[str, list[int]] = defaultdict(list)
    for i in keep:
        sets_i = set(tokens[i])
        if normals[i] in first_of:
            pairs.append(Pair(first_of[normals[i]], i, "exact", 1.0))
            continue  # compared already through its first copy
        first_of[normals[i]] = i
        shared: dict[int, int] = defaultdict(int)
        for word in sets_i:
            for j in index[word]:
                shared[j] += 1
        for j, count in sorted(shared.items()):
            sets_j = set(tokens[j])
            similarity = count / (len(sets_i) + len(sets_j) - count)
            found = contradiction(tokens[j], tokens[i]) if tokens[j][0] == tokens[i][0] else None
            if found is not None:
                pairs.append(Pair(j, i, "contradiction", round(similarity, 3), found[0], found[1]))
            elif similarity >= near:
                pairs.append(Pair(j, i, "near", round(similarity, 3)))
        for word in sets_i:
            index[word].append(i)
    return pairs
