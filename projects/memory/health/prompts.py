"""Agents' prompts over time, from their sessions: size against the budget and the sections'
caps, how often sections were cut, and stability (the share of each prompt byte-identical to
the same agent's previous prompt for the same person, from its first byte; read from the
kept prompts, `memory.receipts`)."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter, defaultdict

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache

from projects.memory import receipts
from projects.memory.errors import StoreError
from projects.memory.health import stability
from projects.models import Agent, AgentSession

_SHARE_TTL = 30 * 24 * 3600  # a pair of kept prompts never changes: its share is kept long


def _share_key(a: str, b: str) -> str:
    return f"mgc:stable:{a}:{b}"


def stability_pairs(agent: Agent, *, since: dt.datetime, limit: int | None = None) -> list[tuple]:
    """(session, person id, share) for each session whose previous session (same agent and
    person) is kept too: the last `limit` per person, oldest first."""
    limit = limit or settings.MGC_HEALTH_STABILITY_SESSIONS
    sessions = list(
        AgentSession.objects.filter(
            agent=agent, created_at__gte=since, prompt_stored=True, prompt_removed__isnull=True
        )
        .order_by("user_id", "created_at")
        .only("id", "user_id", "created_at", "prompt_sha256", "receipt")
    )
    by_person: dict = defaultdict(list)
    for s in sessions:
        by_person[s.user_id].append(s)
    wanted = []
    for history in by_person.values():
        history = history[-(limit + 1) :]
        wanted += [(history[i - 1], history[i]) for i in range(1, len(history))]
    keys = {(a.prompt_sha256, b.prompt_sha256) for a, b in wanted if a.prompt_sha256 != b.prompt_sha256}
    known = cache.get_many([_share_key(*k) for k in keys]) if keys else {}
    texts: dict[str, bytes | None] = {}

    def text(sha: str) -> bytes | None:
        if sha not in texts:
            try:
                found = receipts.prompt_read(project=agent.project, sha256=sha)
            except StoreError:
                found = None
            texts[sha] = found.encode() if found is not None else None
        return texts[sha]

    found, fresh = [], {}
    for a, b in wanted:
        if a.prompt_sha256 == b.prompt_sha256:
            share = 1.0
        elif (key := _share_key(a.prompt_sha256, b.prompt_sha256)) in known:
            share = known[key]
        else:
            before, now = text(a.prompt_sha256), text(b.prompt_sha256)
            if before is None or now is None:
                continue
            share = fresh[key] = stability.share(before, now)
        found.append((b, b.user_id, share))
    if fresh:
        cache.set_many(fresh, _SHARE_TTL)
    return sorted(found, key=lambda item: item[0].created_at)


def _summary(shares: list[float]) -> dict:
    return {
        "pairs": len(shares),
        "average": round(sum(shares) / len(shares), 4) if shares else None,
        "latest": round(shares[-1], 4) if shares else None,
    }


def agent_prompts(agent: Agent, *, now: dt.datetime, days: int = 30) -> dict:
    """The agent's prompts in the last `days` days, and per person their stability."""
    since = now - dt.timedelta(days=days)
    manifest = agent.manifest or {}
    sessions = list(
        AgentSession.objects.filter(agent=agent, created_at__gte=since).values_list(
            "total_tokens", "truncated", "over_budget", "receipt"
        )
    )
    cut_sections: Counter = Counter()
    for _tokens, truncated, _over, receipt in sessions:
        if truncated:
            cut_sections.update(
                s.get("tag", "?") for s in receipt or [] if isinstance(s, dict) and s.get("truncated")
            )
    pairs = stability_pairs(agent, since=since)
    people: dict = defaultdict(list)
    for _session, person, share in pairs:
        people[person].append(share)
    names = dict(
        get_user_model().objects.filter(pk__in=[p for p in people if p]).values_list("pk", "username")
    )
    tokens = [row[0] for row in sessions]
    return {
        "agent": {
            "agent": agent.slug,
            "sessions": len(sessions),
            "peak_tokens": max(tokens, default=0),
            "average_tokens": round(sum(tokens) / len(tokens)) if tokens else 0,
            "budget": manifest.get("total_tokens"),
            "caps": {
                s.get("tag"): s.get("max_tokens")
                for s in manifest.get("sections", [])
                if isinstance(s, dict) and s.get("max_tokens")
            },
            "cut_sessions": sum(1 for row in sessions if row[1]),
            "over_budget": sum(1 for row in sessions if row[2]),
            "cut_sections": dict(cut_sections.most_common()),
            "stability": _summary([share for _s, _p, share in pairs]),
        },
        "people": [
            {"agent": agent.slug, "person": names.get(person, "?") if person else None, **_summary(shares)}
            for person, shares in people.items()
        ],
    }


def daily(agents: list[Agent], *, now: dt.datetime, days: int) -> list[dict]:
    """Per day of the last `days` (oldest first): sessions, largest and average prompt, cut
    sessions, and average stability, over `agents`."""
    first = (now - dt.timedelta(days=days - 1)).date()
    since = dt.datetime.combine(first, dt.time.min, tzinfo=dt.UTC)
    rows = {first + dt.timedelta(days=i): {"tokens": [], "cut": 0, "shares": []} for i in range(days)}
    for created, tokens, truncated in AgentSession.objects.filter(
        agent__in=agents, created_at__gte=since
    ).values_list("created_at", "total_tokens", "truncated"):
        row = rows.get(created.astimezone(dt.UTC).date())
        if row is not None:
            row["tokens"].append(tokens)
            row["cut"] += bool(truncated)
    for agent in agents:
        for session, _person, share in stability_pairs(agent, since=since):
            row = rows.get(session.created_at.astimezone(dt.UTC).date())
            if row is not None:
                row["shares"].append(share)
    return [
        {
            "day": day.isoformat(),
            "sessions": len(row["tokens"]),
            "peak_tokens": max(row["tokens"], default=0),
            "average_tokens": round(sum(row["tokens"]) / len(row["tokens"])) if row["tokens"] else 0,
            "cut": row["cut"],
            "stability": round(sum(row["shares"]) / len(row["shares"]), 4) if row["shares"] else None,
        }
        for day, row in rows.items()
    ]


def section_histories(
    agent: Agent, *, since: dt.datetime, limit: int | None = None, leads: list | None = None
) -> list[list]:
    """Per person, their recent sessions' sections as (tag, the files and revisions it held,
    its tokens), from the receipts: no prompt is read. `leads` gets each session's tokens
    outside its sections (the preface that opens every prompt)."""
    limit = limit or settings.MGC_HEALTH_STABILITY_SESSIONS
    by_person: dict = defaultdict(list)
    for person, receipt, total in (
        AgentSession.objects.filter(agent=agent, created_at__gte=since)
        .order_by("user_id", "created_at")
        .values_list("user_id", "receipt", "total_tokens")
    ):
        sections = []
        for section in receipt or []:
            if not isinstance(section, dict):
                continue
            held = json.dumps(
                [
                    [f.get("path"), f.get("revision")]
                    for f in section.get("files") or []
                    if isinstance(f, dict)
                ]
                + [bool(section.get("truncated"))]
            )
            sections.append((str(section.get("tag", "?")), held, int(section.get("tokens") or 0)))
        by_person[person].append(sections)
        if leads is not None:
            leads.append(max(0, (total or 0) - sum(size for _tag, _held, size in sections)))
    return [history[-(limit + 1) :] for history in by_person.values()]


def cache_figures(agent: Agent, *, now: dt.datetime, days: int = 30, order: list[str] | None = None) -> dict:
    """For the settings page: each section's recent change rate, the measured stable prefix,
    and the share expected to stay identical in the manifest's order (or `order`) and in the
    suggested one (rarely-changing sections first)."""
    since = now - dt.timedelta(days=days)
    leads: list[int] = []
    rates = stability.change_rates(section_histories(agent, since=since, leads=leads))
    lead = sum(leads) // len(leads) if leads else 0
    tags = [r.tag for r in rates]
    if order is None:
        order = [s.get("tag") for s in (agent.manifest or {}).get("sections", []) if isinstance(s, dict)]
    order = [t for t in order if t in tags] + [t for t in tags if t not in order]
    suggested = stability.suggested_order([next(r for r in rates if r.tag == t) for t in order])
    measured = [share for _s, _p, share in stability_pairs(agent, since=since)]
    return {
        "rates": [
            {"tag": r.tag, "rate": r.rate, "changes": r.changes, "pairs": r.pairs, "tokens": r.size}
            for r in rates
        ],
        "order": order,
        "expected": stability.expected_share(rates, order, lead=lead),
        "suggested_order": suggested,
        "suggested": stability.expected_share(rates, suggested, lead=lead),
        "lead_tokens": lead,
        "measured": sum(measured) / len(measured) if measured else None,
        "sessions": sum(r.pairs for r in rates[:1]),
    }
