"""How a piece of text reads, not how it is spelled: a folded view for spotting look-alikes.

Attackers spell `</user_profile>` with characters a person (or a model) reads the same way:
zero-width and other default-ignorable characters between the letters, Cyrillic `е` for
Latin `e`, full-width or ornamental angle brackets, ligatures. Listing such characters by hand
never ends, so this module folds every character to what it reads as:

- default-ignorable code points (Unicode's Default_Ignorable_Code_Point: zero-width and bidi
  controls, variation selectors, Hangul fillers, tag characters) and combining marks fold
  to nothing;
- angle-bracket-like punctuation (by Unicode category and name) folds to `<` or `>`;
- everything else goes through disarm's `canonicalize` (NFKC plus Unicode TR39 confusable
  prototypes), so `е` (U+0435) reads as `e` and `ﬁ` as `fi`.

`folded_view` returns the folded text with a map back to the original's offsets, so a match
found in the view can be defused in the original. Pure: no Django, no I/O.
"""

from __future__ import annotations

import unicodedata
from bisect import bisect_right
from functools import lru_cache
from itertools import accumulate

from disarm import canonicalize

# Default_Ignorable_Code_Point (Unicode DerivedCoreProperties.txt; stable since Unicode 6.0).
_DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
_VANISHING_CATEGORIES = {"Cf", "Mn", "Me"}  # format characters and combining marks
_OPENING = {"Ps", "Pi"}
_CLOSING = {"Pe", "Pf"}
_BRACKET_WORDS = ("ANGLE", "LESS-THAN", "GREATER-THAN", "ARROWHEAD")
_FULL_STOP_WORDS = ("FULL STOP", "DOT LEADER", "ONE DOT")


def is_default_ignorable(char: str) -> bool:
    """Unicode's Default_Ignorable_Code_Point: renders as nothing at all."""
    code = ord(char)
    return any(low <= code <= high for low, high in _DEFAULT_IGNORABLE)


def is_ignorable(char: str) -> bool:
    """Nothing of its own when read: default-ignorable, a format character or a combining mark."""
    return is_default_ignorable(char) or unicodedata.category(char) in _VANISHING_CATEGORIES


@lru_cache(maxsize=8192)
def fold_char(char: str) -> str:
    """What one character reads as: '' for invisible ones, '<' / '>' for bracket look-alikes,
    otherwise its TR39 prototype (ASCII characters stay as they are)."""
    if char.isascii():
        return char
    if is_ignorable(char):
        return ""
    category = unicodedata.category(char)
    name = unicodedata.name(char, "")
    if any(word in name for word in _BRACKET_WORDS):
        if category in _OPENING or "LEFT" in name or "LESS-THAN" in name:
            return "<"
        if category in _CLOSING or "RIGHT" in name or "GREATER-THAN" in name:
            return ">"
    folded = canonicalize(char)
    if folded and not folded.isascii():
        folded = "".join(c if c.isascii() else unicodedata.normalize("NFKC", c) for c in folded)
    return folded


def is_bracket_lookalike(char: str) -> bool:
    """A character other than < and > itself that reads as an angle bracket."""
    return char not in "<>" and fold_char(char) in ("<", ">")


def is_full_stop_lookalike(char: str) -> bool:
    """A character other than '.' that reads as a full stop (ideographic, small, leaders)."""
    if char == ".":
        return False
    name = unicodedata.name(char, "")
    return fold_char(char) == "." or any(word in name for word in _FULL_STOP_WORDS)


class FoldedView:
    """The folded text of `original`, with offsets back into it."""

    __slots__ = ("original", "text", "_starts")

    def __init__(self, original: str):
        self.original = original
        if original.isascii():
            self.text, self._starts = original, None
            return
        pieces = [fold_char(c) for c in original]
        self.text = "".join(pieces)
        # _starts[i]: where the i-th original character's piece begins in the view.
        self._starts = [0, *accumulate(len(p) for p in pieces)]

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The original characters that produced view[start:end] (ignorables inside included)."""
        if self._starts is None:
            return start, end
        # The character whose piece holds view[start] and the one whose piece holds view[end-1];
        # invisible characters around the match stay with the text around it.
        first = bisect_right(self._starts, start) - 1
        last = bisect_right(self._starts, max(end - 1, start)) - 1
        return first, last + 1


def folded_view(text: str) -> FoldedView:
    return FoldedView(text)


def reads_as(text: str) -> str:
    """The whole text folded (for comparing names: `AGENTS.md` spelled with look-alikes)."""
    return FoldedView(text).text


@lru_cache(maxsize=65536)
def name_key(name: str) -> str:
    """What a name reads as, in any case: two names with the same key cannot be told apart
    (`Notes/Runbook.md`, Cyrillic `nоtes/runbook.md`; `MARIA`, `ｍａｒｉａ`)."""
    return reads_as(name).casefold()
