"""When a subject's request must be answered, by the law it is answered under (pure).

**152-FZ** counts in working days of the Russian production calendar, from the day after the
request came in (Civil Code art. 191):

- art. 20(1): an access or copy request is answered within 10 working days; the operator may
  extend that once, by at most 5 working days, with a reasoned notice to the person;
- art. 20(3): inaccurate data is corrected within 7 working days;
- art. 21(3): unlawful processing is stopped within 3 working days (restriction, objection),
  and data that cannot be made lawful is destroyed within 10 working days;
- art. 21(4) and 21(5): once the purpose is achieved, or consent is withdrawn, the data is
  destroyed within 30 (calendar) days.

Working days come from python-holidays' Russian calendar (`holidays.RU`), which carries each
year's government decree on moving days off: the New Year holidays and the days moved from
them (2026: Saturday 3 January to Friday 9 January, Sunday 4 January to Thursday 31 December,
by the 2026 decree), the days off that follow a holiday on a weekend (2026-03-09, 2026-05-11),
and the weekend days that become working days (`weekend_workdays`: Saturday 2025-11-01 by the
2025 decree; none in 2026). tests/test_deadlines.py pins those dates against the official
calendars, so a release of the library that loses one is caught.

**GDPR** art. 12(3): one month from receipt, extendable by two further months (notice
within the first month). Months are calendar months; a day the next month lacks is its last
day (31 January + one month = 28 or 29 February). A deadline is not moved past a weekend:
answering earlier is never late.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass

import holidays
from dateutil.relativedelta import relativedelta

LAW_152 = "152-fz"
LAW_GDPR = "gdpr"
LAW_BOTH = "both"

ACCESS = "access"
COPY = "copy"
CORRECTION = "correction"
ERASURE = "erasure"
RESTRICTION = "restriction"
WITHDRAWAL = "withdrawal"

# Erasure's grounds under 152-FZ art. 21 (what sets its clock).
GROUND_UNLAWFUL = "unlawful"
GROUND_PURPOSE = "purpose_achieved"
GROUND_CONSENT = "consent_withdrawn"


@dataclass(frozen=True)
class Term:
    """How long a law gives: `days` working days, or calendar days, or calendar months."""

    amount: int
    unit: str  # "working_days" | "days" | "months"
    article: str

    def due(self, received: dt.date) -> dt.date:
        if self.unit == "working_days":
            return add_working_days(received, self.amount)
        if self.unit == "days":
            return received + dt.timedelta(days=self.amount)
        return add_months(received, self.amount)


def term_152(kind: str, ground: str = "") -> Term:
    """The 152-FZ term for a kind of request (an erasure's by its ground)."""
    if kind in (ACCESS, COPY):
        return Term(10, "working_days", "152-FZ art. 20(1)")
    if kind == CORRECTION:
        return Term(7, "working_days", "152-FZ art. 20(3)")
    if kind == RESTRICTION:
        return Term(3, "working_days", "152-FZ art. 21(3)")
    if kind == WITHDRAWAL or (kind == ERASURE and ground == GROUND_CONSENT):
        return Term(30, "days", "152-FZ art. 21(5)")
    if kind == ERASURE and ground == GROUND_PURPOSE:
        return Term(30, "days", "152-FZ art. 21(4)")
    if kind == ERASURE:
        return Term(10, "working_days", "152-FZ art. 21(3)")
    raise ValueError(f"unknown kind of request: {kind}")


GDPR_TERM = Term(1, "months", "GDPR art. 12(3)")
GDPR_EXTENDED = Term(3, "months", "GDPR art. 12(3)")  # one month and two more, from receipt
EXTENSION_152 = 5  # working days, once (art. 20(1))


def extendable_152(kind: str) -> bool:
    """152-FZ lets only the answer to an access or copy request be extended (art. 20(1))."""
    return kind in (ACCESS, COPY)


def laws_of(law: str) -> tuple[str, ...]:
    return (LAW_152, LAW_GDPR) if law == LAW_BOTH else (law,)


@dataclass(frozen=True)
class Deadlines:
    """Each applicable law's date, and the one that counts: the earliest."""

    by_law: dict  # law -> date
    articles: dict  # law -> the article its term comes from

    @property
    def due(self) -> dt.date:
        return min(self.by_law.values())


def deadlines(
    *, kind: str, law: str, received: dt.date, ground: str = "", extended: bool = False
) -> Deadlines:
    """The deadlines of a request received on `received` (a date in the operator's time
    zone), before or after its one extension."""
    by_law, articles = {}, {}
    for one in laws_of(law):
        if one == LAW_152:
            term = term_152(kind, ground)
            due = term.due(received)
            if extended and extendable_152(kind):
                due = add_working_days(due, EXTENSION_152)
        elif one == LAW_GDPR:
            term = GDPR_EXTENDED if extended else GDPR_TERM
            due = term.due(received)
        else:
            raise ValueError(f"unknown law: {one}")
        by_law[one], articles[one] = due, term.article
    return Deadlines(by_law=by_law, articles=articles)


def extension_refusal(*, kind: str, law: str, received: dt.date, today: dt.date, already: bool) -> str:
    """Why the request's deadline cannot be extended now ('' when it can): once only; 152-FZ
    only for access and copy, before the deadline; GDPR with notice within the first month."""
    if already:
        return "already_extended"
    laws = laws_of(law)
    if LAW_GDPR not in laws and not extendable_152(kind):
        return "not_extendable"
    if LAW_GDPR in laws and today > GDPR_TERM.due(received):
        return "gdpr_first_month_over"
    if LAW_152 in laws and extendable_152(kind) and today > term_152(kind).due(received):
        return "deadline_passed"
    return ""


def add_months(day: dt.date, months: int) -> dt.date:
    """`day` plus calendar months; a day the month lacks becomes its last day."""
    return day + relativedelta(months=months)


def add_working_days(day: dt.date, count: int) -> dt.date:
    """The `count`-th working day after `day` (the day itself never counts)."""
    current = day
    while count > 0:
        current += dt.timedelta(days=1)
        if is_working_day(current):
            count -= 1
    return current


def working_days_between(start: dt.date, end: dt.date) -> int:
    """Working days after `start` up to and including `end` (negative when end is earlier)."""
    if end < start:
        return -working_days_between(end, start)
    return sum(1 for n in range(1, (end - start).days + 1) if is_working_day(start + dt.timedelta(days=n)))


def is_working_day(day: dt.date) -> bool:
    return _calendar(day.year).is_working_day(day)


@functools.lru_cache(maxsize=16)
def _calendar(year: int) -> holidays.HolidayBase:
    # Two years: a holiday observed in January belongs to the year before's decree.
    return holidays.RU(years=[year - 1, year, year + 1])
