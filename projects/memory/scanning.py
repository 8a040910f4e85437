"""Likely personal data and secrets in memory text: warnings for editors, flags for reviewers.

Pure: text in, findings out. A finding never carries the matched value itself, only where it
is and a masked excerpt, so the scan result does not copy a secret into the database.
Precision matters more than recall here: a reviewer drowned in false flags stops reading them.
Each pattern therefore asks for context (a keyword, a Luhn check, a known key format) rather
than flagging every long number.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

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
    CARD: ngettext_lazy("%(count)d payment card number", "%(count)d payment card numbers",
                        "count"),
    PASSPORT: ngettext_lazy("%(count)d passport-like number", "%(count)d passport-like numbers",
                            "count"),
    API_KEY: ngettext_lazy("%(count)d API key or token", "%(count)d API keys or tokens", "count"),
    PASSWORD: ngettext_lazy("%(count)d password", "%(count)d passwords", "count"),
}

_EMAIL_RE = re.compile(r"(?<![\w.+-])[\w.+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*"
                       r"\.[A-Za-z]{2,24}(?![\w-])")
# A run of digits in groups; the phone check below decides by digit count and shape.
_PHONE_RE = re.compile(r"(?<![\w+])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,5}\)[\s.-]?)?\d{1,4}"
                       r"(?:[\s.-]\d{2,4}){1,4}(?![\w.-]\d)|(?<![\w+])\+\d{10,14}(?!\w)")
_CARD_RE = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
_PASSPORT_KEYWORD_RE = re.compile(
    r"(?i)(?:passport|паспорт)[^\n\d]{0,30}?(?P<value>\d{2}\s?\d{2}\s?(?:№\s?)?\d{6}"
    r"|[A-Z]{1,2}\s?\d{6,8}|\d{9})(?!\d)")
# Russian internal passport written as series and number: "45 08 123456".
_PASSPORT_RU_RE = re.compile(r"(?<![\d-])\d{2} \d{2} \d{6}(?![\d-])")
_API_KEY_RES = [
    re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])"),  # AWS access key id
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"),  # GitHub
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{40,}\b"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"),  # Slack
    re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}\b"),  # OpenAI, Anthropic
    re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"),  # Google
    re.compile(r"\bmgc_[A-Za-z0-9_-]{20,}\b"),  # this console's runner tokens
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),  # JWT
    re.compile(r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----"),
    re.compile(r"(?i)\b(?:api[_ -]?key|access[_ -]?key|secret(?:[_ -]?key)?|auth[_ -]?token|"
               r"bearer|token)\b[\"']?\s*[:=]?\s*[\"']?(?P<value>[A-Za-z0-9_\-./+=]{16,})"),
]
_PASSWORD_RE = re.compile(
    r"(?i)\b(?:password|passwd|pwd|пароль)\b\s*(?:[:=]|\bis\b|—|-)\s*[\"']?(?P<value>[^\s\"']{4,})")
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


def mask(value: str) -> str:
    """Enough to recognise the finding, not enough to reuse it."""
    if len(value) <= 6:
        return "•" * len(value)
    return value[:2] + "•" * (len(value) - 4) + value[-2:]


def scan(text: str) -> list[Detection]:
    """Findings in reading order, at most one per place in the text."""
    spans: list[tuple[int, int, str]] = []

    def add(start: int, end: int, kind: str) -> None:
        if any(start < s_end and s_start < end for s_start, s_end, _ in spans):
            return  # the first, more specific pattern already claimed this place
        spans.append((start, end, kind))

    for pattern in _API_KEY_RES:
        for match in pattern.finditer(text):
            group = "value" if "value" in pattern.groupindex else 0
            value = match.group(group)
            if group == "value" and not _SECRET_VALUE_HAS_DIGIT.search(value):
                continue  # "token: the-session-one" is prose, not a key
            add(match.start(group), match.end(group), API_KEY)
    for match in _PASSWORD_RE.finditer(text):
        add(match.start("value"), match.end("value"), PASSWORD)
    for match in _EMAIL_RE.finditer(text):
        add(match.start(), match.end(), EMAIL)
    for match in _PASSPORT_KEYWORD_RE.finditer(text):
        add(match.start("value"), match.end("value"), PASSPORT)
    for match in _PASSPORT_RU_RE.finditer(text):
        add(match.start(), match.end(), PASSPORT)
    for match in _CARD_RE.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if 13 <= len(digits) <= 19 and luhn_ok(digits) and len(set(digits)) > 1:
            add(match.start(), match.end(), CARD)
    for match in _PHONE_RE.finditer(text):
        if _looks_like_phone(match.group()):
            add(match.start(), match.end(), PHONE)

    findings = []
    for start, end, kind in sorted(spans):
        line = text.count("\n", 0, start) + 1
        column = start - (text.rfind("\n", 0, start) + 1) + 1
        findings.append(Detection(kind=kind, line=line, column=column, excerpt=mask(text[start:end])))
    return findings


def _looks_like_phone(candidate: str) -> bool:
    digits = re.sub(r"\D", "", candidate)
    if not 10 <= len(digits) <= 15:
        return False
    if re.fullmatch(r"\d{4}[-.]\d{2}[-.]\d{2}.*", candidate):
        return False  # a date with something after it
    if candidate.startswith("+") or "(" in candidate:
        return True
    # Without a country code: the Russian trunk prefix 8 / 7 with 11 digits, or the
    # North American 3-3-4 shape.
    if len(digits) == 11 and digits[0] in "78":
        return True
    return bool(re.fullmatch(r"\d{3}[-. ]\d{3}[-. ]\d{4}", candidate))


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
    return ", ".join(str(COUNTED[kind] % {"count": count}) if kind in COUNTED
                     else f"{count} {kind}" for kind, count in counts.items())
