"""A project's memory health, read (never changed): duplicates, contradiction candidates and
stale lines in its files with each line's origin (blame), personal-data and poisoning findings
still present, and its agents' prompt sizes, cuts and stability from their sessions.

The same report feeds `manage.py memory_health`, the health page and `manage.py consolidate`.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Max, Q
from django.utils import timezone

from projects.memory import blame, carried, globs, lineage, linemaps, poisoning, scanning
from projects.memory.errors import StoreError
from projects.memory.health import lines as line_health
from projects.memory.health import prompts as prompt_health
from projects.memory.reading import revision_texts
from projects.models import Agent, MemoryFile, Project, Proposal, Revision, SessionFile

SIMILARITY = "token-set Jaccard"
FOLD_JOBS = ("fold", "summary")  # consolidation jobs whose approval folds notes (runners.consolidation)
LOGS = "workspace/logs/**.md"  # agents' own tool and error logs: records, not facts to compare
SHOWN = 200  # findings of each kind listed (all are counted)
_POISON_KIND = {
    MemoryFile.Scope.AGENT: poisoning.KIND_AGENT,
    MemoryFile.Scope.USER: poisoning.KIND_PROFILE,
    MemoryFile.Scope.WORKSPACE: poisoning.KIND_WORKSPACE,
}


def stale_days(project: Project) -> int:
    return project.stale_days or settings.MGC_HEALTH_STALE_DAYS


@dataclass
class Line:
    file: MemoryFile
    number: int  # 1-based in the file's head
    text: str
    ident: int  # linemaps identity: the revision that introduced it, and its place there

    @property
    def origin_pk(self) -> int:
        return linemaps.origin(self.ident)[0]


@dataclass
class Scan:
    """What the files hold: their lines by pool (the lines one reader sees together)."""

    files: list[MemoryFile] = field(default_factory=list)
    pools: dict[str, list[Line]] = field(default_factory=dict)
    texts: dict = field(default_factory=dict)  # file pk -> head text
    unread: list[str] = field(default_factory=list)  # files storage did not answer for
    folded: int = 0  # notes an approved fold summarised: they wait for retention, not for review


def _pool(file: MemoryFile) -> str:
    if file.scope == MemoryFile.Scope.AGENT:
        return f"agent:{file.agent.slug}"
    if file.scope == MemoryFile.Scope.USER:
        return f"user:{file.user.get_username()}"
    return "workspace"


def files_of(project: Project, agent: Agent | None = None):
    """The project's live files (with an agent: its own files, the workspace and profiles)."""
    found = (
        MemoryFile.objects.filter(project=project, head__isnull=False, head__is_deletion=False)
        .select_related("head", "agent", "user")
        .order_by("scope", "path")
    )
    if agent is not None:
        found = found.filter(~Q(scope=MemoryFile.Scope.AGENT) | Q(agent=agent))
    return list(found)


def scan_files(project: Project, agent: Agent | None = None) -> Scan:
    scan = Scan(files=files_of(project, agent))
    heads = [f.head for f in scan.files if f.head.purged_at is None and f.head.snapshot_key]
    try:
        texts = revision_texts(project, heads)
    except StoreError:
        texts = {}
    maps = lineage.line_maps([(f, f.head.number) for f in scan.files])
    logs = _log_paths(project)
    folded = folded_idents(project)
    for file in scan.files:
        text = texts.get(file.head_id)
        if text is None:
            scan.unread.append(file.display_path)
            continue
        scan.texts[file.pk] = text
        if file.source_path in logs or globs.source_matches(LOGS, file.source_path):
            continue  # risk still reads it; its lines are not compared
        idents = maps.get((file.pk, file.head.number), [])
        pool = scan.pools.setdefault(_pool(file), [])
        for number, (line, ident) in enumerate(zip(linemaps.lines_of(text), idents, strict=False), 1):
            if ident in folded:
                scan.folded += 1
                continue
            pool.append(Line(file, number, line.removesuffix("\r"), ident))
    return scan


def _log_paths(project: Project) -> set[str]:
    """The files the project's hook policies log tool calls and errors to."""
    found = set()
    for policy in project.agents.values_list("hook_policy", flat=True):
        for kind in ("tool", "error"):
            log = ((policy or {}).get(kind) or {}).get("log")
            if isinstance(log, str):
                found.add(log)
    return found


def folded_idents(project: Project, *, approved_only: bool = True) -> set[int]:
    """The notes folds summarised (approved folds; with approved_only False, pending ones
    too, so a fold is not proposed twice)."""
    proposals = Proposal.objects.filter(project=project, consolidation__in=FOLD_JOBS)
    if approved_only:
        proposals = proposals.filter(status=Proposal.Status.APPROVED)
    else:
        proposals = proposals.exclude(status=Proposal.Status.REJECTED)
    found: set[int] = set()
    for details in proposals.values_list("consolidation_details", flat=True):
        found.update((details or {}).get("idents", []))
    return found


def origin_json(origin: blame.Origin) -> dict:
    r = origin.revision
    return {
        "file": r.file.source_path if r.number else "?",
        "revision": r.number,
        "author": r.author_label,
        "author_kind": r.author_kind,
        "session": r.session_ref or None,
        "at": r.created_at.isoformat() if r.created_at else None,
    }


def line_json(line: Line, origins: dict) -> dict:
    origin = origins.get(line.origin_pk)
    return {
        "file": line.file.display_path,
        "file_id": str(line.file.pk),
        "line": line.number,
        "text": line.text,
        "origin": origin_json(origin) if origin else None,
    }


@dataclass(frozen=True)
class Found:
    """A pair of lines the measures matched, as the lines themselves."""

    pool: str
    pair: line_health.Pair
    first: Line
    second: Line


def pairs(scan: Scan) -> list[Found]:
    """Duplicates and contradiction candidates in each pool, in reading order."""
    found = []
    for pool, pool_lines in scan.pools.items():
        for pair in line_health.compare(
            [line.text for line in pool_lines], near=settings.MGC_HEALTH_NEAR_DUPLICATE
        ):
            found.append(Found(pool, pair, pool_lines[pair.first], pool_lines[pair.second]))
    return found


def stale_lines(scan: Scan, *, project: Project, now: dt.datetime) -> list[tuple[Line, dt.datetime]]:
    """Episodic notes (MGC_HEALTH_EPISODIC) whose origin is older than the stale age, with when
    they were written."""
    cutoff = now - dt.timedelta(days=stale_days(project))
    episodic = [
        line
        for pool_lines in scan.pools.values()
        for line in pool_lines
        if line_health.normal(line.text)
        and globs.source_matches(settings.MGC_HEALTH_EPISODIC, line.file.source_path)
    ]
    created = dict(
        Revision.objects.filter(pk__in={line.origin_pk for line in episodic}).values_list("pk", "created_at")
    )
    return [(line, created[line.origin_pk]) for line in episodic if created.get(line.origin_pk, now) < cutoff]


def findings(scan: Scan, *, project: Project, now: dt.datetime) -> dict:
    """Duplicates, contradictions and stale lines (each with its lines' origins)."""
    matched = pairs(scan)
    stale = stale_lines(scan, project=project, now=now)
    wanted = {line.origin_pk for line, _at in stale[:SHOWN]}
    for item in matched[: SHOWN * 3]:
        wanted |= {item.first.origin_pk, item.second.origin_pk}
    origins = blame.origins_of(project, wanted, tool_calls=0) if wanted else {}
    duplicates, contradictions = [], []
    for item in matched:
        pair = item.pair
        both = [line_json(item.first, origins), line_json(item.second, origins)]
        if pair.kind == "contradiction":
            contradictions.append(
                {"pool": item.pool, "subject": pair.subject, "values": list(pair.values), "lines": both}
            )
        else:
            duplicates.append(
                {"pool": item.pool, "kind": pair.kind, "similarity": pair.similarity, "lines": both}
            )
    return {
        "duplicates": duplicates,
        "contradictions": contradictions,
        "stale": [dict(line_json(line, origins), age_days=(now - at).days) for line, at in stale],
    }


def unreceived(scan: Scan, *, project: Project, now: dt.datetime) -> list[dict]:
    """Files (older than the stale age) no session's prompt carried within it: their lines
    reach no agent."""
    cutoff = now - dt.timedelta(days=stale_days(project))
    carried.index_sessions()
    last = dict(
        SessionFile.objects.filter(file_ref__in=[f.pk for f in scan.files])
        .values("file_ref")
        .annotate(last=Max("created_at"))
        .values_list("file_ref", "last")
    )
    rows = []
    for file in scan.files:
        if file.pk not in scan.texts or file.created_at >= cutoff:
            continue
        received = last.get(file.pk)
        if received is None or received < cutoff:
            lines = len([line for line in linemaps.lines_of(scan.texts[file.pk]) if line.strip()])
            rows.append(
                {
                    "file": file.display_path,
                    "file_id": str(file.pk),
                    "lines": lines,
                    "last_received": received.isoformat() if received else None,
                }
            )
    return rows


def risk(scan: Scan) -> list[dict]:
    """Personal data (memory.scanning) and poisoning (memory.poisoning) still in the heads."""
    rows = []
    for file in scan.files:
        text = scan.texts.get(file.pk)
        if not text:
            continue
        for d in scanning.scan(text):
            rows.append(
                {
                    "file": file.display_path,
                    "line": d.line,
                    "kind": "personal_data",
                    "what": d.kind,
                    "excerpt": d.excerpt,
                }
            )
        for p in poisoning.scan(text, kind=_POISON_KIND[file.scope]):
            rows.append(
                {
                    "file": file.display_path,
                    "line": p.line,
                    "kind": "poisoning",
                    "what": p.family,
                    "excerpt": p.excerpt,
                }
            )
    return rows


def project_health(
    project: Project, *, agent: Agent | None = None, now: dt.datetime | None = None, days: int = 30
) -> dict:
    """The whole report, JSON-ready."""
    now = now or timezone.now()
    scan = scan_files(project, agent)
    found = findings(scan, project=project, now=now)
    cold = unreceived(scan, project=project, now=now)
    risky = risk(scan)
    agents = [agent] if agent else list(project.agents.order_by("slug"))
    prompts = [prompt_health.agent_prompts(a, now=now, days=days) for a in agents]
    per_file: dict[str, Counter] = defaultdict(Counter)
    for item in found["duplicates"]:
        per_file[item["lines"][1]["file"]]["duplicates"] += 1
    for item in found["contradictions"]:
        per_file[item["lines"][1]["file"]]["contradictions"] += 1
    for item in found["stale"]:
        per_file[item["file"]]["stale"] += 1
    for item in cold:
        per_file[item["file"]]["unreceived"] += item["lines"]
    for item in risky:
        per_file[item["file"]][item["kind"]] += 1
    files = [
        {
            "file": f.display_path,
            "lines": sum(1 for line in linemaps.lines_of(scan.texts.get(f.pk, "")) if line.strip()),
            **{
                k: per_file[f.display_path][k]
                for k in ("duplicates", "contradictions", "stale", "unreceived", "personal_data", "poisoning")
            },
        }
        for f in scan.files
    ]
    exact = sum(1 for d in found["duplicates"] if d["kind"] == "exact")
    return {
        "project": project.slug,
        "agent": agent.slug if agent else None,
        "generated_at": now.isoformat(),
        "settings": {
            "similarity": SIMILARITY,
            "near_duplicate": settings.MGC_HEALTH_NEAR_DUPLICATE,
            "stale_days": stale_days(project),
            "episodic": settings.MGC_HEALTH_EPISODIC,
            "days": days,
        },
        "totals": {
            "files": len(scan.files),
            "lines": sum(f["lines"] for f in files),
            "duplicates": len(found["duplicates"]),
            "exact_duplicates": exact,
            "near_duplicates": len(found["duplicates"]) - exact,
            "contradictions": len(found["contradictions"]),
            "stale_notes": len(found["stale"]),
            "folded_notes": scan.folded,
            "unreceived_lines": sum(r["lines"] for r in cold),
            "personal_data": sum(1 for r in risky if r["kind"] == "personal_data"),
            "poisoning": sum(1 for r in risky if r["kind"] == "poisoning"),
        },
        "files": files,
        "duplicates": found["duplicates"][:SHOWN],
        "contradictions": found["contradictions"][:SHOWN],
        "stale": {"notes": found["stale"][:SHOWN], "unreceived": cold[:SHOWN]},
        "risk": risky[:SHOWN],
        "agents": [p["agent"] for p in prompts],
        "people": [person for p in prompts for person in p["people"]],
        "unread": scan.unread,
    }
