"""Three-way merge of a save that met a newer revision: the base the person opened, the text
that is in storage now ("theirs") and the person's text ("yours").

The line-level merge is merge3's (the algorithm of Bazaar and Breezy). Changes that do not
overlap are taken from both sides; each overlapping change is a `Hunk` the person settles by
choosing theirs, yours or both (theirs first). An unsettled hunk is written into the text
between conflict markers, so nothing is dropped without the person seeing it, and a save
refuses a text that still holds them (`unresolved_markers`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import merge3

CHOICES = ("theirs", "yours", "both")
MARK_THEIRS, MARK_SPLIT, MARK_YOURS = "<<<<<<< ", "=======", ">>>>>>> "
# The lines that open and close an unsettled change. The "=======" between them is not
# counted: alone it is a Markdown heading's underline.
_MARKERS = re.compile(r"^(<<<<<<< |>>>>>>> ).*$", re.MULTILINE)


@dataclass(frozen=True)
class Hunk:
    index: int
    base: str
    theirs: str
    yours: str


@dataclass
class Merge:
    text: str
    hunks: list[Hunk] = field(default_factory=list)  # every overlapping change
    unresolved: int = 0  # hunks without a choice, written between markers

    @property
    def clean(self) -> bool:
        return not self.hunks


def merge(
    base: str,
    theirs: str,
    yours: str,
    *,
    choices: dict[int, str] | None = None,
    theirs_label: str = "theirs",
    yours_label: str = "yours",
) -> Merge:
    """Merge `yours` and `theirs` over `base`; `choices` settles hunks by index."""
    choices = choices or {}
    groups = merge3.Merge3(_lines(base), _lines(theirs), _lines(yours)).merge_groups()
    out: list[str] = []
    hunks: list[Hunk] = []
    unresolved = 0
    for group in groups:
        kind = group[0]
        if kind != "conflict":
            out.extend(group[1])
            continue
        base_lines, theirs_lines, yours_lines = group[1], group[2], group[3]
        hunk = Hunk(len(hunks), "".join(base_lines), "".join(theirs_lines), "".join(yours_lines))
        hunks.append(hunk)
        choice = choices.get(hunk.index)
        if choice == "theirs":
            out.extend(theirs_lines)
        elif choice == "yours":
            out.extend(yours_lines)
        elif choice == "both":
            out.extend(_ended(theirs_lines) + yours_lines)
        else:
            unresolved += 1
            out.append(f"{MARK_THEIRS}{theirs_label}\n")
            out.extend(_ended(theirs_lines))
            out.append(f"{MARK_SPLIT}\n")
            out.extend(_ended(yours_lines))
            out.append(f"{MARK_YOURS}{yours_label}\n")
    return Merge("".join(out), hunks, unresolved)


def unresolved_markers(text: str) -> int:
    """How many lines opening or closing an unsettled change a text still holds."""
    return len(_MARKERS.findall(text))


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _ended(lines: list[str]) -> list[str]:
    """The lines with the last one ended, so that what follows starts on a line of its own."""
    if lines and not lines[-1].endswith(("\n", "\r")):
        return [*lines[:-1], lines[-1] + "\n"]
    return list(lines)
