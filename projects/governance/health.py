"""The memory health page's trends: a project's prompts per day over 30 and 90 days (largest
prompt, red on a day a prompt was cut, the budget as a line; average stable prefix), drawn as
small server-side SVGs like the prompt-size chart (no script, no CDN), with the figures in a
table beside them."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.utils import timezone

from projects.memory.health import prompts as prompt_health
from projects.models import Project

WINDOWS = (30, 90)
WIDTH, HEIGHT, TOP = 600, 140, 14  # viewBox units, as governance.prompts


@dataclass
class Bar:
    day: dt.date
    x: float
    y: float
    height: float
    value: float
    flag: bool = False


@dataclass
class Chart:
    bars: list[Bar] = field(default_factory=list)
    bar_width: float = 0
    top: float = 0
    line_y: float | None = None
    width: int = WIDTH
    height: int = HEIGHT


def bar_chart(
    points: list[tuple[dt.date, float | None, bool]], *, top: float, line: float | None = None
) -> Chart:
    """Bars for the days that have a value (`points` one per day, oldest first)."""
    days = len(points) or 1
    chart = Chart(bar_width=WIDTH / days * 0.8, top=top)
    usable = HEIGHT - TOP

    def y_of(value: float) -> float:
        return round(HEIGHT - usable * value / top, 1) if top else HEIGHT

    for index, (day, value, flag) in enumerate(points):
        if value is None:
            continue
        y = y_of(value)
        chart.bars.append(
            Bar(
                day=day,
                x=round(index * WIDTH / days, 1),
                y=y,
                height=round(HEIGHT - y, 1),
                value=value,
                flag=flag,
            )
        )
    if line:
        chart.line_y = y_of(line)
    return chart


@dataclass
class Trend:
    days: int
    rows: list[dict]
    size: Chart
    stability: Chart


def trends(project: Project, *, now: dt.datetime | None = None) -> list[Trend]:
    now = now or timezone.now()
    agents = list(project.agents.all())
    budgets = [b for a in agents if isinstance(b := (a.manifest or {}).get("total_tokens"), int)]
    found = []
    for days in WINDOWS:
        rows = prompt_health.daily(agents, now=now, days=days)
        for row in rows:
            row["date"] = dt.date.fromisoformat(row["day"])
            row["stability_pct"] = None if row["stability"] is None else round(row["stability"] * 100)
        budget = max(budgets, default=None)
        peak = max([r["peak_tokens"] for r in rows] + [budget or 0, 1])
        size = bar_chart(
            [(r["date"], r["peak_tokens"] if r["sessions"] else None, bool(r["cut"])) for r in rows],
            top=int(peak * 1.1) + 1,
            line=budget,
        )
        stable = bar_chart([(r["date"], r["stability_pct"], False) for r in rows], top=100)
        found.append(Trend(days=days, rows=[r for r in rows if r["sessions"]], size=size, stability=stable))
    return found
