"""How big agents' prompts are, read from the session receipts: the agents whose recent prompts
were cut (a section over its cap, or the whole over the budget), and each agent's prompt size
per day against its budget, drawn as a small server-side SVG (no script, no CDN)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.db.models import Avg, Count, Max, OuterRef, Q, Subquery
from django.db.models.functions import TruncDate
from django.utils import timezone

from projects.models import Agent, AgentSession

RECENT_DAYS = 7
CHART_DAYS = 30
CHART_WIDTH, CHART_HEIGHT, CHART_TOP = 600, 140, 14  # viewBox units


def truncated_agents(
    projects, *, agent: Agent | None = None, days: int = RECENT_DAYS, limit: int = 20
) -> list[dict]:
    """Agents of `projects` (or just `agent`) with a truncated prompt in the last `days` days,
    worst first, each with the sections its latest truncated session cut. Two queries."""
    since = timezone.now() - dt.timedelta(days=days)
    recent = Q(sessions__created_at__gte=since)
    latest_cut = (
        AgentSession.objects.filter(agent=OuterRef("pk"), truncated=True, created_at__gte=since)
        .order_by("-created_at")
        .values("pk")[:1]
    )
    chosen = Agent.objects.filter(pk=agent.pk) if agent else Agent.objects.filter(project__in=projects)
    agents = list(
        chosen.annotate(
            cut=Count("sessions", filter=recent & Q(sessions__truncated=True)),
            over=Count("sessions", filter=recent & Q(sessions__over_budget=True)),
            runs=Count("sessions", filter=recent),
            latest_cut=Subquery(latest_cut),
        )
        .filter(cut__gt=0)
        .select_related("project")
        .order_by("-cut", "name")[:limit]
    )
    sessions = AgentSession.objects.in_bulk([a.latest_cut for a in agents])
    rows = []
    for agent in agents:
        session = sessions.get(agent.latest_cut)
        sections = [s["tag"] for s in session.receipt if s.get("truncated")] if session else []
        rows.append(
            {
                "agent": agent,
                "cut": agent.cut,
                "over": agent.over,
                "runs": agent.runs,
                "session": session,
                "sections": sections,
            }
        )
    return rows


@dataclass
class Bar:
    day: dt.date
    x: float
    y: float
    height: float
    peak: int
    average: int
    sessions: int
    cut: int


@dataclass
class Chart:
    bars: list[Bar] = field(default_factory=list)
    budget: int | None = None
    budget_y: float | None = None
    top: int = 0  # tokens at the top of the scale
    width: int = CHART_WIDTH
    height: int = CHART_HEIGHT
    bar_width: float = 0
    days: int = CHART_DAYS

    @property
    def cut_days(self) -> int:
        return sum(1 for b in self.bars if b.cut)


def prompt_chart(agent: Agent, *, days: int = CHART_DAYS, today: dt.date | None = None) -> Chart:
    """The largest prompt of each day (bars) against the manifest's budget (a line)."""
    today = today or timezone.now().date()
    first = today - dt.timedelta(days=days - 1)
    start = timezone.make_aware(dt.datetime.combine(first, dt.time.min), dt.UTC)
    per_day = {
        row["day"]: row
        for row in (
            AgentSession.objects.filter(agent=agent, created_at__gte=start)
            .annotate(day=TruncDate("created_at", tzinfo=dt.UTC))
            .values("day")
            .annotate(
                peak=Max("total_tokens"),
                average=Avg("total_tokens"),
                sessions=Count("pk"),
                cut=Count("pk", filter=Q(truncated=True)),
            )
        )
    }
    budget = (agent.manifest or {}).get("total_tokens")
    budget = budget if isinstance(budget, int) and not isinstance(budget, bool) else None
    peak = max([row["peak"] for row in per_day.values()] + [budget or 0, 1])
    top = int(peak * 1.1) + 1
    chart = Chart(budget=budget, top=top, days=days, bar_width=CHART_WIDTH / days * 0.8)
    usable = CHART_HEIGHT - CHART_TOP

    def y_of(tokens: int) -> float:
        return round(CHART_HEIGHT - usable * tokens / top, 1)

    for index in range(days):
        day = first + dt.timedelta(days=index)
        row = per_day.get(day)
        if row is None:
            continue
        y = y_of(row["peak"])
        chart.bars.append(
            Bar(
                day=day,
                x=round(index * CHART_WIDTH / days, 1),
                y=y,
                height=round(CHART_HEIGHT - y, 1),
                peak=row["peak"],
                average=round(row["average"] or 0),
                sessions=row["sessions"],
                cut=row["cut"],
            )
        )
    if budget:
        chart.budget_y = y_of(budget)
    return chart
