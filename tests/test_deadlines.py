"""Deadlines of subjects' requests: 152-FZ in working days of the official Russian production
calendar, GDPR in calendar months.

The official calendars these dates come from:
- 2026: the government's decree on moving days off in 2026 (Saturday 3 January to Friday
  9 January, Sunday 4 January to Thursday 31 December); New Year holidays 1-8 January; days
  off after holidays on a Sunday or Saturday: Monday 9 March (8 March is a Sunday) and Monday
  11 May (9 May is a Saturday); no working Saturday; 247 working days in the year.
- 2025: the decree of 4 October 2024 No. 1335 (among others Saturday 1 November is a working
  day, Monday 3 November a day off); 247 working days.
"""

import datetime as dt

import pytest

from projects.governance import deadlines as d

pytestmark = pytest.mark.db_independent

D = dt.date


def test_the_2026_calendar_matches_the_official_one():
    days_off = [D(2026, 1, m) for m in range(1, 12)] + [D(2026, 3, 9), D(2026, 5, 11), D(2026, 12, 31)]
    assert not any(d.is_working_day(day) for day in days_off)
    # The first working day of 2026, the day after the transferred 9 January and its weekend.
    assert d.is_working_day(D(2026, 1, 12))
    # Pre-holiday days stay working days (only shortened).
    assert d.is_working_day(D(2026, 5, 8)) and d.is_working_day(D(2026, 12, 30))
    assert d.working_days_between(D(2025, 12, 31), D(2026, 12, 31)) == 247


def test_a_working_saturday_counts():
    """2025's decree made Saturday 1 November a working day and Monday 3 November a day off."""
    assert d.is_working_day(D(2025, 11, 1))
    assert not d.is_working_day(D(2025, 11, 3))
    assert d.working_days_between(D(2024, 12, 31), D(2025, 12, 31)) == 247
    # Received Thursday 30 October: Fri 31 (1), Sat 1 Nov (2), Wed 5 Nov (3) ...
    assert d.add_working_days(D(2025, 10, 30), 3) == D(2025, 11, 5)


def test_152_fz_across_the_new_year_holidays():
    # Received Monday 29 December 2025: Tue 30 Dec is the 1st working day; 31 Dec 2025 is off
    # (moved from 5 January 2025); 1-11 January 2026 are off; then 12 Jan is the 2nd ... 22 Jan the 10th.
    due = d.deadlines(kind=d.ACCESS, law=d.LAW_152, received=D(2025, 12, 29))
    assert due.due == D(2026, 1, 22)
    assert due.articles[d.LAW_152] == "152-FZ art. 20(1)"


def test_152_fz_across_the_transferred_31_december_2026():
    # Received Thursday 24 December 2026: 25, 28, 29, 30 December (4); 31 December is off (moved
    # from Sunday 4 January 2026); 1-10 January 2027 are off; 11-15 and 18 January (10).
    due = d.deadlines(kind=d.COPY, law=d.LAW_152, received=D(2026, 12, 24))
    assert due.due == D(2027, 1, 18)


def test_152_fz_over_the_observed_days_off():
    # 9 March 2026 (8 March a Sunday) and 11 May 2026 (9 May a Saturday) are days off.
    assert d.add_working_days(D(2026, 3, 5), 10) == D(2026, 3, 20)
    assert d.add_working_days(D(2026, 4, 28), 10) == D(2026, 5, 14)


def test_other_kinds_by_their_articles():
    received = D(2026, 1, 12)  # a Monday
    assert d.deadlines(kind=d.RESTRICTION, law=d.LAW_152, received=received).due == D(2026, 1, 15)
    assert d.deadlines(kind=d.CORRECTION, law=d.LAW_152, received=received).due == D(2026, 1, 21)
    assert d.deadlines(kind=d.ERASURE, law=d.LAW_152, received=received).due == D(2026, 1, 26)
    purpose = d.deadlines(kind=d.ERASURE, law=d.LAW_152, received=received, ground=d.GROUND_PURPOSE)
    assert purpose.due == D(2026, 2, 11) and purpose.articles[d.LAW_152] == "152-FZ art. 21(4)"
    withdrawal = d.deadlines(kind=d.WITHDRAWAL, law=d.LAW_152, received=received)
    assert withdrawal.due == D(2026, 2, 11) and withdrawal.articles[d.LAW_152] == "152-FZ art. 21(5)"


def test_extension_is_once_by_five_working_days():
    received = D(2025, 12, 29)
    extended = d.deadlines(kind=d.ACCESS, law=d.LAW_152, received=received, extended=True)
    # 22 January 2026 (a Thursday) + 5 working days: 23, 26, 27, 28, 29 January.
    assert extended.due == D(2026, 1, 29)
    today = D(2026, 1, 15)
    assert (
        d.extension_refusal(kind=d.ACCESS, law=d.LAW_152, received=received, today=today, already=False) == ""
    )
    assert (
        d.extension_refusal(kind=d.ACCESS, law=d.LAW_152, received=received, today=today, already=True)
        == "already_extended"
    )
    # After the deadline, and for kinds 152-FZ does not let be extended: refused.
    late = D(2026, 1, 23)
    assert (
        d.extension_refusal(kind=d.ACCESS, law=d.LAW_152, received=received, today=late, already=False)
        == "deadline_passed"
    )
    assert (
        d.extension_refusal(kind=d.CORRECTION, law=d.LAW_152, received=received, today=today, already=False)
        == "not_extendable"
    )
    # A correction is not extended under 152-FZ even when GDPR's side is.
    both = d.deadlines(kind=d.CORRECTION, law=d.LAW_BOTH, received=received, extended=True)
    assert both.by_law[d.LAW_152] == d.deadlines(kind=d.CORRECTION, law=d.LAW_152, received=received).due


def test_gdpr_from_31_january():
    assert d.deadlines(kind=d.ACCESS, law=d.LAW_GDPR, received=D(2026, 1, 31)).due == D(2026, 2, 28)
    assert d.deadlines(kind=d.ACCESS, law=d.LAW_GDPR, received=D(2028, 1, 31)).due == D(2028, 2, 29)
    # Extended: three months from receipt, not two from the first deadline (28 April).
    extended = d.deadlines(kind=d.ACCESS, law=d.LAW_GDPR, received=D(2026, 1, 31), extended=True)
    assert extended.due == D(2026, 4, 30)


def test_gdpr_from_30_november():
    assert d.deadlines(kind=d.ERASURE, law=d.LAW_GDPR, received=D(2026, 11, 30)).due == D(2026, 12, 30)
    extended = d.deadlines(kind=d.ERASURE, law=d.LAW_GDPR, received=D(2026, 11, 30), extended=True)
    assert extended.due == D(2027, 2, 28)
    # Notice of the extension is due within the first month.
    assert (
        d.extension_refusal(
            kind=d.ERASURE, law=d.LAW_GDPR, received=D(2026, 11, 30), today=D(2026, 12, 31), already=False
        )
        == "gdpr_first_month_over"
    )


def test_both_laws_take_the_earlier_date():
    both = d.deadlines(kind=d.ACCESS, law=d.LAW_BOTH, received=D(2026, 1, 31))
    assert both.by_law == {d.LAW_152: D(2026, 2, 13), d.LAW_GDPR: D(2026, 2, 28)}
    assert both.due == D(2026, 2, 13)
