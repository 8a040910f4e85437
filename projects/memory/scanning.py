"""Likely personal data and secrets in memory text: warnings for editors, flags for reviewers.

Pure: text in, findings out. A finding never carries the matched value itself, only where it
is and a masked excerpt, so the scan result does not copy a secret into the database.
Precision matters more than recall here: a reviewer drowned in false flags stops reading them.
Each pattern therefore asks for context (a keyword, a Luhn check, a known key format, a
numbering plan) rather than flagging every long number.

Phone numbers: a fast regular expression finds number-shaped runs (digits and parenthesised
groups joined by single spaces, dots or dashes, with an optional "+" or "00" in front); the
numbering plans of libphonenumber (`phonenumbers`, Google's data) then decide whether the run
is a number anyone could dial. Its own PhoneNumberMatcher finds the same numbers but took
about 5 s for 130 KB over four regions, too slow for a check that runs as the person types.
"""

from __future__ import annotations

import functools
import re
from dataclasses import asdict, dataclass

import phonenumbers
from django.utils import translation
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext_lazy

EMAIL = "email"
PHONE = "phone"
CARD = "card"
PASSPORT = "passport"
API_KEY = "api_key"
PASSWORD = "password"

LABELS = {
    EMAIL: _("e-mail address"),
    PHONE: _("phone number"),
    CARD: _("payment card number"),
    PASSPORT: _("passport-like number"),
    API_KEY: _("API key or token"),
    PASSWORD: _("password"),
}

# "2 e-mail addresses" in the active language (Russian has three plural forms).
COUNTED = {
    EMAIL: ngettext_lazy("%(count)d e-mail address", "%(count)d e-mail addresses", "count"),
    PHONE: ngettext_lazy("%(count)d phone number", "%(count)d phone numbers", "count"),
    CARD: ngettext_lazy("%(count)d payment card number", "%(count)d payment card numbers", "count"),
    PASSPORT: ngettext_lazy("%(count)d passport-like number", "%(count)d passport-like numbers", "count"),
    API_KEY: ngettext_lazy("%(count)d API key or token", "%(count)d API keys or tokens", "count"),
    PASSWORD: ngettext_lazy("%(count)d password", "%(count)d passwords", "count"),
}

_EMAIL_RE = re.compile(
    r"(?<![\w.+-])[\w.+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*"
    r"\.[A-Za-z]{2,24}(?![\w-])"
)
# Number-shaped runs: digits or "(area)" groups, joined by at most one space, dot or dash,
# optionally after "+" or "00"; not glued to a word, a decimal, a path or a range.
_PHONE_RE = re.compile(
    r"(?<![\w+#/.,:-])(?:\+ ?)?(?:\(\d{1,5}\)|\d)"
    r"(?:[ .-]?(?:\(\d{1,5}\)|\d)){6,20}(?!\w|[.,:/-]\d)"
)
# National forms are ambiguous, so each is tried only in the plans it is written for: the
# Russian trunk prefix 8, the North American 3-3-4 shape, and Europe's trunk prefix 0.
_TRUNK_8_REGIONS = ("RU", "KZ", "BY")
_NANP_REGIONS = ("US", "CA")
_TRUNK_0_REGIONS = ("GB", "DE", "FR", "IT", "NL", "AT", "CH", "UA", "PL", "BE")
_NANP_SHAPE_RE = re.compile(r"(?:1[ .-]?)?(?:\(\d{3}\) ?|\d{3}[ .-])\d{3}[ .-]\d{4}")
# Look-alikes that numbering plans would accept: dates and IPv4 addresses.
_NOT_PHONE_RE = re.compile(
    r"\d{4}[-./]\d{1,2}[-./]\d{1,2}\b.*|\d{1,2}[-./]\d{1,2}[-./]\d{4}\b.*"
    r"|\d{1,3}(?:\.\d{1,3}){3}"
)
# No card number starts with 0 (ISO/IEC 7812), which keeps "0049 ..." phones out.
_CARD_RE = re.compile(r"(?<![\d+-])[1-9](?:[ -]?\d){12,18}(?![\d-])")
_PASSPORT_KEYWORD_RE = re.compile(
    r"(?i)(?:passport|паспорт)[^\n\d]{0,30}?(?P<value>\d{2}\s?\d{2}\s?(?:№\s?)?\d{6}"
    r"|[A-Z]{1,2}\s?\d{6,8}|\d{9})(?!\d)"
)
# Russian internal passport written as series and number: "45 08 123456".
_PASSPORT_RU_RE = re.compile(r"(?<![\d+-])\d{2} \d{2} \d{6}(?![\d-])")
# Each pattern with the strings one of which any match holds: a text without them is not
# searched (a search of 70 KB costs one to seven milliseconds a pattern; `in` microseconds).
_API_KEY_RES = [
    (("AKIA", "ASIA"), re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])")),  # AWS key id
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b")),  # GitHub
    (("github_pat_",), re.compile(r"\bgithub_pat_[A-Za-z0-9_]{40,}\b")),
    (("xox",), re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b")),  # Slack
    (("sk-",), re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}\b")),  # OpenAI, Anthropic
    (("AIza",), re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),  # Google
    (("mgc_",), re.compile(r"\bmgc_[A-Za-z0-9_-]{20,}\b")),  # this console's runner tokens
    (("eyJ",), re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),  # JWT
    (("-----BEGIN ",), re.compile(r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----")),
]
# Case-insensitive patterns: their words are looked for in the lowercased text, and only in
# an ASCII one (beyond ASCII, IGNORECASE matches more than lower() shows, such as the
# Kelvin sign for "k" and the long s for "s": such a text is always searched).
_API_KEY_NAMED_RE = (
    ("key", "secret", "token", "bearer"),
    re.compile(
        r"(?i)\b(?:api[_ -]?key|access[_ -]?key|secret(?:[_ -]?key)?|auth[_ -]?token|"
        r"bearer|token)\b[\"']?\s*[:=]?\s*[\"']?(?P<value>[A-Za-z0-9_\-./+=]{16,})"
    ),
)
_PASSWORD_RE = re.compile(
    r"(?i)\b(?:password|passwd|pwd|пароль)\b\s*(?:[:=]|\bis\b|—|-)\s*[\"']?(?P<value>[^\s\"']{4,})"
)
_PASSWORD_WORDS = ("passw", "pwd")
_SECRET_VALUE_HAS_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class Detection:
    kind: str
    line: int
    column: int
    excerpt: str

    @property
    def label(self) -> str:
        return str(LABELS[self.kind])

    def as_dict(self) -> dict:
        return asdict(self)


def luhn_ok(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


MASK_HIDDEN = "•" * 8
# Significant characters: the digits of numbers (a phone is masked without its country code
# or trunk prefix, so "+7 (912) 345-67-89" and "8 912 345 67 89" mask alike), everything but
# separators otherwise.
_DIGIT_KINDS = {PHONE, CARD, PASSPORT}
_SEPARATORS_RE = re.compile(r"[\s()\[\]{}<>.,;:\"'-]")


def mask(value: str, kind: str = "") -> str:
    """Enough to recognise the finding, not enough to reuse it, in one shape for every kind
    and format: a fixed run of eight dots that never counts the hidden characters, the last
    two significant characters when there are at least 8, and the first two as well from 12
    on (never more than a third shown). No bracket or separator of the original survives to
    be left unpaired. A password, short and guessable from any letter, shows nothing."""
    if kind in _DIGIT_KINDS:
        significant = re.sub(r"\D", "", value)
    else:
        significant = _SEPARATORS_RE.sub("", value)
    if kind == PASSWORD or len(significant) < 8:
        return MASK_HIDDEN
    head = significant[:2] if len(significant) >= 12 else ""
    return head + MASK_HIDDEN + significant[-2:]


def scan(text: str) -> list[Detection]:
    """Findings in reading order, at most one per place in the text."""
    spans: list[tuple[int, int, str, str]] = []
    claimed = bytearray(len(text))  # one flag per character: linear however many findings

    def add(start: int, end: int, kind: str, value: str = "") -> None:
        if any(claimed[start:end]):
            return  # the first, more specific pattern already claimed this place
        claimed[start:end] = b"\x01" * (end - start)
        spans.append((start, end, kind, value or text[start:end]))

    lowered = text.lower() if text.isascii() else None

    def named(words: tuple[str, ...]) -> bool:  # may a case-insensitive pattern match?
        return lowered is None or any(word in lowered for word in words)

    for needles, pattern in _API_KEY_RES:
        if any(needle in text for needle in needles):
            for match in pattern.finditer(text):
                add(match.start(), match.end(), API_KEY)
    words, pattern = _API_KEY_NAMED_RE
    for match in pattern.finditer(text) if named(words) else ():
        if not _SECRET_VALUE_HAS_DIGIT.search(match.group("value")):
            continue  # "token: the-session-one" is prose, not a key
        add(match.start("value"), match.end("value"), API_KEY)
    for match in _PASSWORD_RE.finditer(text) if named(_PASSWORD_WORDS) else ():
        add(match.start("value"), match.end("value"), PASSWORD)
    for match in _EMAIL_RE.finditer(text) if "@" in text else ():
        add(match.start(), match.end(), EMAIL)
    for match in _PASSPORT_KEYWORD_RE.finditer(text) if named(("passport",)) else ():
        add(match.start("value"), match.end("value"), PASSPORT)
    for match in _PASSPORT_RU_RE.finditer(text):
        add(match.start(), match.end(), PASSPORT)
    for match in _CARD_RE.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if 13 <= len(digits) <= 19 and luhn_ok(digits) and len(set(digits)) > 1:
            add(match.start(), match.end(), CARD)
    for match in _PHONE_RE.finditer(text):
        if number := phone_number(match.group()):
            add(match.start(), match.end(), PHONE, number)

    findings = []
    line, counted = 1, 0  # lines counted up to `counted`: one pass however many findings
    for start, _end, kind, value in sorted(spans):
        line += text.count("\n", counted, start)
        counted = start
        column = start - (text.rfind("\n", 0, start) + 1) + 1
        findings.append(Detection(kind=kind, line=line, column=column, excerpt=mask(value, kind)))
    return findings


@dataclass(frozen=True)
class Span:
    """Where an e-mail address or a phone number stands in a text, with its value: for
    finding a person (their own address or number) and redacting others'. Never stored."""

    kind: str
    start: int
    end: int
    value: str  # an e-mail address lowercased; a phone's national significant number


def contact_spans(text: str) -> list[Span]:
    """The e-mail addresses and phone numbers in a text, by the same matchers `scan` uses."""
    found = [Span(EMAIL, m.start(), m.end(), m.group().lower()) for m in _EMAIL_RE.finditer(text)]
    taken = [(f.start, f.end) for f in found]
    for match in _PHONE_RE.finditer(text):
        if any(a < match.end() and match.start() < b for a, b in taken):
            continue
        if number := phone_number(match.group()):
            found.append(Span(PHONE, match.start(), match.end(), number))
    return sorted(found, key=lambda f: f.start)


@functools.lru_cache(maxsize=8192)  # the editor rescans the whole text as the person types
def phone_number(candidate: str) -> str | None:
    """The national significant number ("15123456789") of a number-shaped run that is a
    phone number in some numbering plan, else None: international forms ("+49 151 23456789",
    "0049 151 2345 6789") in any plan, national ones only in the plans they are written for."""
    if candidate.count("(") != candidate.count(")") or _NOT_PHONE_RE.fullmatch(candidate):
        return None
    digits = re.sub(r"\D", "", candidate)
    if not 7 <= len(digits) <= 17:
        return None
    if candidate.startswith("+"):
        return _national("+" + digits, (None,))
    if digits.startswith("00"):
        return _national("+" + digits[2:], (None,))
    if digits.startswith("8") and len(digits) == 11:
        return _national(digits, _TRUNK_8_REGIONS)
    if _NANP_SHAPE_RE.fullmatch(candidate):
        return _national(digits, _NANP_REGIONS)
    if digits.startswith("0") and digits != candidate:  # a bare run is more often an id
        return _national(digits, _TRUNK_0_REGIONS)
    return None


def _national(number: str, regions: tuple[str | None, ...]) -> str | None:
    for region in regions:
        try:
            parsed = phonenumbers.parse(number, region)
        except phonenumbers.NumberParseException:
            continue
        if phonenumbers.is_valid_number(parsed):
            return phonenumbers.national_significant_number(parsed)
    return None


def summary(findings: list[dict] | list[Detection], language: str | None = None) -> str:
    """'2 e-mail addresses, 1 password' for messages (the person's language) and for the
    audit trail (language="en": records read the same whoever caused them)."""
    if language:
        with translation.override(language):
            return summary(findings)
    counts: dict[str, int] = {}
    for finding in findings:
        kind = finding["kind"] if isinstance(finding, dict) else finding.kind
        counts[kind] = counts.get(kind, 0) + 1
    return ", ".join(
        str(COUNTED[kind] % {"count": count}) if kind in COUNTED else f"{count} {kind}"
        for kind, count in counts.items()
    )
