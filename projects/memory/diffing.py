"""Diffs between two texts, computed on the server: lines first, then words inside changed
lines. Every piece is escaped before it is wrapped in <ins>/<del>, so the result is safe HTML.
Pure: no Django models, no I/O.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from projects.memory.content import within_limit

_WORDS = re.compile(r"\s+|\w+|[^\w\s]", re.UNICODE)


@dataclass(frozen=True)
class Row:
    """One row of a side-by-side diff. kind: equal | replace | delete | insert | skip."""

    kind: str
    old_number: int | None
    old_html: SafeString
    new_number: int | None
    new_html: SafeString


@dataclass(frozen=True)
class UnifiedLine:
    """One line of a unified diff. kind: equal | delete | insert | skip."""

    kind: str
    old_number: int | None
    new_number: int | None
    html: SafeString


@dataclass(frozen=True)
class Diff:
    rows: list[Row]
    unified: list[UnifiedLine]
    added: int
    removed: int

    @property
    def identical(self) -> bool:
        return self.added == 0 and self.removed == 0


def _words(line: str) -> list[str]:
    return _WORDS.findall(line)


def _word_diff(old: str, new: str) -> tuple[SafeString, SafeString]:
    """Both lines as HTML, the changed words wrapped in <del> (old) and <ins> (new)."""
    a, b = _words(old), _words(new)
    left, right = [], []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        old_part, new_part = escape("".join(a[i1:i2])), escape("".join(b[j1:j2]))
        if tag == "equal":
            left.append(old_part)
            right.append(new_part)
            continue
        if old_part:
            left.append(f'<del class="deletion">{old_part}</del>')
        if new_part:
            right.append(f'<ins class="addition">{new_part}</ins>')
    return mark_safe("".join(left)), mark_safe("".join(right))  # noqa: S308 - parts escaped


def diff_texts(old: str, new: str, *, context: int = 3) -> Diff:
    """Line diff of two texts with word highlights; unchanged runs beyond `context` lines
    around a change are folded into one 'skip' row. Each text is taken up to a memory file's
    size (content.within_limit)."""
    old_lines, new_lines = within_limit(old)[0].splitlines(), within_limit(new)[0].splitlines()
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    rows: list[Row] = []
    unified: list[UnifiedLine] = []
    added = removed = 0
    tail_hidden = False
    empty = mark_safe("")
    for group in matcher.get_grouped_opcodes(context) if old_lines != new_lines else []:
        if rows or group[0][1] > 0:  # unchanged lines folded before this group
            rows.append(Row("skip", None, empty, None, empty))
            unified.append(UnifiedLine("skip", None, None, empty))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for k in range(i2 - i1):
                    html = escape(old_lines[i1 + k])
                    rows.append(Row("equal", i1 + k + 1, html, j1 + k + 1, escape(new_lines[j1 + k])))
                    unified.append(UnifiedLine("equal", i1 + k + 1, j1 + k + 1, html))
                continue
            removed += i2 - i1
            added += j2 - j1
            pairs = max(i2 - i1, j2 - j1)
            deleted_lines, inserted_lines = [], []
            for k in range(pairs):
                o = old_lines[i1 + k] if i1 + k < i2 else None
                n = new_lines[j1 + k] if j1 + k < j2 else None
                if o is not None and n is not None:
                    left, right = _word_diff(o, n)
                    rows.append(Row("replace", i1 + k + 1, left, j1 + k + 1, right))
                elif o is not None:
                    left, right = mark_safe(f'<del class="deletion">{escape(o)}</del>'), empty  # noqa: S308
                    rows.append(Row("delete", i1 + k + 1, left, None, empty))
                else:
                    left, right = empty, mark_safe(f'<ins class="addition">{escape(n)}</ins>')  # noqa: S308
                    rows.append(Row("insert", None, empty, j1 + k + 1, right))
                if o is not None:
                    deleted_lines.append(UnifiedLine("delete", i1 + k + 1, None, left))
                if n is not None:
                    inserted_lines.append(UnifiedLine("insert", None, j1 + k + 1, right))
            unified.extend(deleted_lines)
            unified.extend(inserted_lines)
        tail_hidden = group[-1][2] < len(old_lines)
    if rows and tail_hidden:
        rows.append(Row("skip", None, empty, None, empty))
        unified.append(UnifiedLine("skip", None, None, empty))
    return Diff(rows=rows, unified=unified, added=added, removed=removed)
