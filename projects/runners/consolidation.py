"""Consolidation that only proposes (issue 40): merge duplicate lines, fold stale episodic
notes into a dated summary file, and put each contradiction before a person with both lines.

Every result is a proposal made by the post hook's own `hooks._propose` (so what holds for an
agent's proposal, quarantine included, holds for these), marked with its job
(`Proposal.consolidation`) and what it found, each line with its origin (blame). Nothing here
writes memory, and nothing here approves: a person decides in the review queue. Approving a
merge saves the file without the later copies; the line kept is the first copy, so its blame
still names its first author (memory.linemaps keeps a kept line's identity).

Run by `manage.py consolidate` on a schedule (docs/DEPLOY.md), like retention. A file that
already has a consolidation proposal waiting is left until that one is decided, so runs can
repeat without piling up proposals that would conflict.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from projects.audit import Actor
from projects.memory import blame, records
from projects.memory.health import lines as line_health
from projects.memory.health import model, report
from projects.models import Agent, MemoryFile, Project, Proposal
from projects.runners.hooks import WriteRequest, _propose
from projects.runners.policy import HookError

MERGE, CONTRADICTION = "merge", "contradiction"
FOLD, SUMMARY = report.FOLD_JOBS
# "digests/" sorts before "notes/": in the workspace section the stable digest comes before the
# notes that grow every session, so it stays in the prompt's cacheable prefix.
SUMMARY_FOLDER = "digests"


@dataclass
class Run:
    project: str
    proposals: list[dict] = field(default_factory=list)  # {id, job, path}
    skipped: list[str] = field(default_factory=list)
    model: dict = field(default_factory=lambda: {"status": model.OFF})

    def as_dict(self) -> dict:
        return {
            "project": self.project,
            "proposals": self.proposals,
            "skipped": self.skipped,
            "model": self.model,
        }


def _text_without(text: str, numbers: set[int]) -> str:
    kept = [line for n, line in enumerate(text.split("\n"), 1) if n not in numbers]
    return "\n".join(kept)


def consolidate(*, project: Project, agent: Agent | None = None, now: dt.datetime | None = None) -> Run:
    """Propose what the health report's findings call for; returns what was proposed."""
    now = now or timezone.now()
    run = Run(project=project.slug)
    proposer = agent or project.agents.filter(archived_at__isnull=True).order_by("created_at", "slug").first()
    if proposer is None:
        run.skipped.append("the project has no agent to propose as")
        return run
    scan = report.scan_files(project, agent)
    waiting = set(
        Proposal.objects.filter(project=project, status=Proposal.Status.PENDING)
        .exclude(consolidation="")
        .values_list("file_id", flat=True)
    )
    matched = report.pairs(scan)
    stale = report.stale_lines(scan, project=project, now=now)
    wanted = {line.origin_pk for line, _at in stale}
    for item in matched:
        wanted |= {item.first.origin_pk, item.second.origin_pk}
    origins = blame.origins_of(project, wanted, tool_calls=0) if wanted else {}

    def propose(file: MemoryFile, job: str, write: WriteRequest, found: dict) -> None:
        result: dict = {}
        who = file.agent if file.scope == MemoryFile.Scope.AGENT and file.agent_id else proposer
        try:
            with transaction.atomic():
                _propose(
                    None,
                    file,
                    Actor.for_agent(who),  # no session: the proposal names none
                    write,
                    write.base_revision,
                    result,
                    consolidation=job,
                    found=found,
                )
        except HookError as exc:  # refused on the way (quarantine, consent): said, not hidden
            run.skipped.append(f"{file.display_path}: {exc.message}")
            return
        if result.get("status") == "proposed":
            run.proposals.append({"id": result["proposal"], "job": job, "path": file.display_path})
        else:
            run.skipped.append(f"{file.display_path}: {result.get('message') or result.get('status')}")

    _merge(scan, matched, origins, waiting, propose, run)
    _contradictions(scan, matched, origins, waiting, propose, run)
    # A line a merge or a contradiction proposes to remove is not folded as well: the digest
    # would keep what the person is asked to drop.
    leaving = {
        item.second.ident if item.pair.kind != "contradiction" else item.first.ident for item in matched
    }
    _fold(
        project, [(line, at) for line, at in stale if line.ident not in leaving], origins, now, propose, run
    )
    return run


def _merge(scan, matched, origins, waiting, propose, run) -> None:
    drop: dict = {}
    for item in matched:
        if item.pair.kind == "contradiction":
            continue
        removed = {
            "kind": item.pair.kind,
            "similarity": item.pair.similarity,
            "line": report.line_json(item.second, origins),
            "kept": report.line_json(item.first, origins),
        }
        drop.setdefault(item.second.file.pk, {}).setdefault(item.second.number, removed)
    _propose_without(
        scan,
        drop,
        waiting,
        propose,
        run,
        MERGE,
        "removed",
        "a consolidation proposal is waiting for a decision",
    )


def _contradictions(scan, matched, origins, waiting, propose, run) -> None:
    """One proposal per file: it keeps the newer line of each pair and drops the older, so the
    diff shows both; rejecting it keeps both, and the person edits the file as they settle it."""
    older: dict = {}
    for item in matched:
        if item.pair.kind != "contradiction":
            continue
        pair = {
            "subject": item.pair.subject,
            "values": list(item.pair.values),
            "older": report.line_json(item.first, origins),
            "newer": report.line_json(item.second, origins),
        }
        older.setdefault(item.first.file.pk, {}).setdefault(item.first.number, pair)
    _propose_without(
        scan,
        older,
        waiting,
        propose,
        run,
        CONTRADICTION,
        "contradictions",
        "contradictions wait for the proposal before them",
    )


def _propose_without(scan, by_file, waiting, propose, run, job, key, why_waiting) -> None:
    """For each file with lines to take out ({file pk: {line number: detail}}), one replace
    proposal of its text without them, the details under `key`; a file with a proposal of this
    run already waiting is skipped, saying why."""
    for file in scan.files:
        lines = by_file.get(file.pk)
        if not lines:
            continue
        if file.pk in waiting:
            run.skipped.append(f"{file.display_path}: {why_waiting}")
            continue
        waiting.add(file.pk)
        content = _text_without(scan.texts[file.pk], set(lines))
        write = WriteRequest(file.source_path, "replace", content, file.head.number)
        propose(file, job, write, {key: [lines[n] for n in sorted(lines)]})


def _fold(project, stale, origins, now, propose, run) -> None:
    folded = report.folded_idents(project, approved_only=False)
    todo = [(line, at) for line, at in stale if line.ident not in folded]
    if not todo:
        return
    by_file: dict = {}
    seen: set[str] = set()
    for line, _at in todo:
        normal = line_health.normal(line.text)
        if normal in seen:
            continue  # a copy of a note folded above: once is enough
        seen.add(normal)
        by_file.setdefault(line.file.display_path, []).append(line)
    day = now.date().isoformat()
    try:
        target = records.workspace_file_new(project=project, path=f"{SUMMARY_FOLDER}/{day}.md")
    except Exception as exc:  # noqa: BLE001 - a name refused (look-alike): said, not raised
        run.skipped.append(f"workspace/{SUMMARY_FOLDER}/{day}.md: {exc}")
        return
    notes = [line.text for lines in by_file.values() for line in lines]
    answer = model.summarise(notes)
    run.model = {"status": answer.status, "reason": answer.reason, "elapsed_ms": answer.elapsed_ms}
    found = {
        "idents": [line.ident for line, _at in todo],
        "lines": [report.line_json(line, origins) for line, _at in todo][:500],
    }
    first, last = (f(at for _line, at in todo).date().isoformat() for f in (min, max))
    heading = f"## Notes folded on {day} (written {first} to {last})\n\n"
    if answer.status == model.OK:
        content = heading + answer.text
        found["model"] = answer.model
        job = SUMMARY
    else:
        body = ""
        for path, lines in by_file.items():
            body += f"From {path}:\n" + "".join(f"{line.text}\n" for line in lines) + "\n"
        content = heading + body
        job = FOLD
    if target.head is not None and not target.is_deleted:
        content = "\n" + content
    propose(target, job, WriteRequest(target.source_path, "append", content, None), found)
