"""JSON typed or sent by someone else, parsed into values every part of the console can hold.

`json.loads` accepts two things that break later, far from the input: nesting deep enough to
exhaust the interpreter's stack (RecursionError, here or when the value is encoded again), and
`\\udXXX` escapes that decode to lone surrogates, which cannot be encoded as UTF-8 (so no page,
database row or S3 object can hold them). Both are refused here, at the door, as bad input.
"""

from __future__ import annotations

import json
import math

from django.utils.translation import gettext as _

MAX_DEPTH = 64  # far deeper than any manifest, policy or hook body


class BadJSON(ValueError):
    """Not JSON, or JSON the console cannot hold; the message says which."""


def loads(text: str | bytes) -> object:
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise BadJSON(too_deep()) from None
    except ValueError as exc:  # JSONDecodeError and undecodable bytes
        raise BadJSON(str(exc)) from None
    check(value)
    return value


def loads_storable(text: str | bytes) -> object:
    """As `loads`, but lone surrogates are left for the caller to make storable."""
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise BadJSON(too_deep()) from None
    check(value, surrogates=True)
    return value


def check(value: object, *, surrogates: bool = False) -> None:
    """BadJSON if `value` nests deeper than MAX_DEPTH or (unless `surrogates`: the caller makes
    them storable itself) holds a lone surrogate."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise BadJSON(too_deep())
        if isinstance(item, float) and not math.isfinite(item):  # 1e400 parses as infinity
            raise BadJSON(_("The JSON holds a number too large to store (or NaN or Infinity)."))
        if isinstance(item, str):
            if not surrogates:
                plain(item)
        elif isinstance(item, dict):
            for key, inner in item.items():
                if not surrogates:
                    plain(key)
                stack.append((inner, depth + 1))
        elif isinstance(item, list):
            stack.extend((inner, depth + 1) for inner in item)


def plain(text: str) -> str:
    """`text` if it can be encoded as UTF-8; BadJSON for a lone surrogate."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BadJSON(
            _("The text holds a \\u escape of half a character (a lone surrogate), which is not text.")
        ) from None
    return text


def too_deep() -> str:
    return _("The JSON is nested too deep (at most %(max)s levels).") % {"max": MAX_DEPTH}


def _no_constant(name: str):
    """NaN and Infinity are not JSON (Python's parser accepts them; PostgreSQL's jsonb does not)."""
    raise BadJSON(_("The JSON holds a number too large to store (or NaN or Infinity)."))
