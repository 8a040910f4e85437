"""Who a line of text names, and the same line with other people's details withheld (pure).

A subject's answer must not hand them other people's data (GDPR art. 15(4); EDPB Guidelines
01/2022): in every line it includes, other people's names, e-mail addresses and phone numbers
are replaced by a marker, unless the handler keeps one with a reason. E-mail addresses and
phone numbers are found by the personal-data scanner's matchers (memory.scanning); names are
those of the console's accounts, so a stranger's name that no account bears is not found:
the handler reads the included lines before the answer goes.

Names are matched as whole words, case folded, each word with up to three more letters (Russian
declension: "Ивана Петрова" names Иван Петров), in either order. A username is matched as a
word when it looks like one (`ivan.petrov`, `a.smirnova2`); a plain lowercase word such as
`employee` or `admin` reads as prose, so it counts only written as `@employee`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.utils.translation import gettext as _

from projects.memory import scanning

NAME = "name"
EMAIL = scanning.EMAIL
PHONE = scanning.PHONE
_INFLECTION = r"\w{0,3}"


@dataclass(frozen=True)
class Person:
    """What identifies one person in text."""

    username: str
    names: tuple[str, ...] = ()  # "Alex Morgan", "Иван Петров"
    emails: frozenset = frozenset()  # lowercased
    phones: frozenset = frozenset()  # national significant numbers
    _pattern: re.Pattern | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, username: str, *, first: str = "", last: str = "", emails=(), phones=()) -> Person:
        names = []
        if first.strip() and last.strip():
            names += [f"{first.strip()} {last.strip()}", f"{last.strip()} {first.strip()}"]
        numbers = {scanning.phone_number(p) or re.sub(r"\D", "", p) for p in phones if p}
        person = cls(
            username=username,
            names=tuple(names),
            emails=frozenset(e.strip().lower() for e in emails if e and e.strip()),
            phones=frozenset(n for n in numbers if n),
        )
        return cls(person.username, person.names, person.emails, person.phones, _compile(person))

    def key(self) -> str:
        """What the handler keeps to show this person's name: `name:<username>`."""
        return f"{NAME}:{self.username}"


def _compile(person: Person) -> re.Pattern | None:
    alternatives = []
    for name in person.names:
        words = [re.escape(w) + _INFLECTION for w in name.split()]
        alternatives.append(r"\s+".join(words))
    username = person.username
    if username:
        if re.fullmatch(r"[a-z]+", username):
            alternatives.append("@" + re.escape(username))
        else:
            alternatives.append(re.escape(username))
    if not alternatives:
        return None
    return re.compile(r"(?<![\w.@-])(?:" + "|".join(alternatives) + r")(?![\w@-])", re.IGNORECASE)


@dataclass(frozen=True)
class Hit:
    kind: str  # name | email | phone
    start: int
    end: int
    key: str  # name:<username> | email:<address> | phone:<number>


def hits(text: str, person: Person) -> list[Hit]:
    """Where `text` names the person: their names or username, their e-mail or phone."""
    found = []
    if person._pattern is not None:
        found += [Hit(NAME, m.start(), m.end(), person.key()) for m in person._pattern.finditer(text)]
    for span in scanning.contact_spans(text):
        if (span.kind == EMAIL and span.value in person.emails) or (
            span.kind == PHONE and span.value in person.phones
        ):
            found.append(Hit(span.kind, span.start, span.end, f"{span.kind}:{span.value}"))
    return sorted(found, key=lambda h: h.start)


def markers() -> dict[str, str]:
    """What stands in for a withheld detail, in the active language."""
    return {
        NAME: _("[another person's name withheld]"),
        EMAIL: _("[another person's e-mail withheld]"),
        PHONE: _("[another person's phone withheld]"),
    }


def redact(text: str, *, subject: Person, others: list[Person], keep=frozenset()) -> tuple[str, list[Hit]]:
    """`text` with other people's names, e-mails and phones withheld (those whose key is in
    `keep` stay), and what was withheld. The subject's own details always stay."""
    own = hits(text, subject)
    taken = [(h.start, h.end) for h in own]
    candidates: list[Hit] = []
    for span in scanning.contact_spans(text):
        key = f"{span.kind}:{span.value}"
        mine = (span.kind == EMAIL and span.value in subject.emails) or (
            span.kind == PHONE and span.value in subject.phones
        )
        if not mine:
            candidates.append(Hit(span.kind, span.start, span.end, key))
    for other in others:
        if other._pattern is None or other.username == subject.username:
            continue
        candidates += [Hit(NAME, m.start(), m.end(), other.key()) for m in other._pattern.finditer(text)]
    withheld: list[Hit] = []
    for hit in sorted(candidates, key=lambda h: (h.start, -h.end)):
        if hit.key in keep:
            continue
        if any(a < hit.end and hit.start < b for a, b in taken):
            continue
        taken.append((hit.start, hit.end))
        withheld.append(hit)
    words = markers()
    for hit in sorted(withheld, key=lambda h: h.start, reverse=True):
        text = text[: hit.start] + words[hit.kind] + text[hit.end :]
    return text, sorted(withheld, key=lambda h: h.start)
