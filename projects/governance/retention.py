"""Retention: how long each kind of a project's memory is kept, previewed before it is applied.

A project's rules (RetentionRule, edited by its admins) name what they cover and for how long:

- files (a glob: `workspace/logs/**`, `USER.md`...): a file unchanged for `days` expires: a
  final `expired` revision names the rule and the date, then its texts go from storage (head,
  snapshots, every version; memory.lifecycle);
- history (a glob, keep the newest `keep_revisions` and/or `days`): older revisions' stored
  texts go, their records stay;
- sessions, prompts, idempotency (`days`): session receipts with their events, kept prompts,
  and stored runner answers;
- leavers (`days`): the profile (USER.md) of each person the directory deprovisioned (SCIM
  deactivated or deleted them: a Departure) is erased `days` after they left, as
  governance.erasure erases it, unless a legal hold stands. Without such a rule a leaver's
  profile is kept.

`plan` says what is due by a moment; the preview page and `manage.py retention --dry-run` show
it for today and the next 30 days, and `apply` does exactly what `plan` says for now (what a
legal hold covers is skipped and counted). Each run leaves one audit event with its counts,
and is safe to repeat or to stop: the next run finishes what a stopped one began.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.translation import gettext as _

from projects import metrics
from projects.audit import Actor, audit_record
from projects.governance import erasure
from projects.memory import globs, holds, layout, lifecycle
from projects.memory.errors import Held
from projects.models import (
    AgentSession,
    Departure,
    IdempotencyRecord,
    MemoryFile,
    Project,
    RetentionRule,
    Revision,
)

Kind = RetentionRule.Kind
PREVIEW_DAYS = 30
MAX_DAYS = 36_500  # a hundred years
MAX_RULES = 50


# --- Rules ----------------------------------------------------------------------------------------


def rule_clean(
    *, kind: str, glob: str = "", days: int | None = None, keep_revisions: int | None = None
) -> dict:
    """The rule's fields checked and normalised; ValidationError with each problem at its field."""
    problems: dict[str, list] = {}
    glob = (glob or "").strip()
    if kind not in Kind.values:
        problems["kind"] = [_("Pick what the rule expires.")]
    if kind in (Kind.FILES, Kind.HISTORY):
        if not glob:
            problems["glob"] = [_("Name the files: USER.md, AGENTS.md, workspace/logs/**...")]
        elif not valid_glob(glob):
            problems["glob"] = [
                _("%(glob)s: use SOUL.md, AGENTS.md, TOOLS.md, USER.md or workspace/<path or glob>.")
                % {"glob": glob}
            ]
    elif glob:
        problems["glob"] = [_("Only file and history rules name files.")]
    for name, value in (("days", days), ("keep_revisions", keep_revisions)):
        if value is not None and not (1 <= value <= MAX_DAYS):
            problems[name] = [_("Between 1 and %(max)s.") % {"max": MAX_DAYS}]
    if kind == Kind.HISTORY:
        if days is None and keep_revisions is None:
            problems["keep_revisions"] = [_("Keep the newest N revisions, or N days, or both.")]
    elif kind in Kind.values and days is None:
        problems["days"] = [_("Say how many days to keep it.")]
    elif keep_revisions is not None:
        problems["keep_revisions"] = [_("Only history rules keep a number of revisions.")]
    if problems:
        raise ValidationError(
            {k: [ValidationError(m, code="retention") for m in v] for k, v in problems.items()}
        )
    return {
        "kind": kind,
        "glob": glob,
        "days": days,
        "keep_revisions": keep_revisions if kind == Kind.HISTORY else None,
    }


def valid_glob(glob: str) -> bool:
    if glob in layout.AGENT_FILES or glob == layout.USER_FILE:
        return True
    if not glob.startswith(globs.WORKSPACE_PREFIX):
        return False
    sample = globs.glob_sample(glob[len(globs.WORKSPACE_PREFIX) :])
    try:
        layout.validate_workspace_path(sample if sample.endswith(".md") else sample + ".md")
    except ValidationError:
        return False
    return True


@transaction.atomic
def rule_add(*, by, project: Project, **fields) -> RetentionRule:
    cleaned = rule_clean(**fields)
    if RetentionRule.objects.filter(project=project).count() >= MAX_RULES:
        raise ValidationError(
            _("At most %(max)s rules a project.") % {"max": MAX_RULES}, code="retention_rules"
        )
    rule = RetentionRule.objects.create(project=project, created_by=by, **cleaned)
    audit_record(
        actor=Actor.person(by),
        action="retention.rule",
        project=project,
        obj=rule,
        details={"added": rule.describe()},
    )
    return rule


@transaction.atomic
def rule_remove(*, by, rule: RetentionRule) -> None:
    audit_record(
        actor=Actor.person(by),
        action="retention.rule",
        project=rule.project,
        obj=rule,
        details={"removed": rule.describe()},
    )
    rule.delete()


# --- What is due ----------------------------------------------------------------------------------


@dataclass
class Due:
    """Something a rule expires by some moment: a file, a file's old revisions, or a batch of
    sessions, prompts or stored answers."""

    rule: RetentionRule
    label: str
    due: dt.datetime
    count: int = 1
    file: MemoryFile | None = None
    numbers: list[int] = field(default_factory=list)
    ids: list = field(default_factory=list)


@dataclass
class RulePlan:
    rule: RetentionRule
    due: list[Due]
    held: int = 0  # items the rule would take that a legal hold covers

    @property
    def count(self) -> int:
        return sum(item.count for item in self.due)


def plan(project: Project, *, until: dt.datetime) -> list[RulePlan]:
    """What each of the project's rules expires by `until` (what a legal hold covers is left
    out and counted)."""
    rules = list(RetentionRule.objects.filter(project=project))
    files = list(
        MemoryFile.objects.filter(project=project).select_related("head", "agent", "user", "project")
    )
    held_files = {f.pk for f in files if holds.covering_file(f)} if holds.any_standing(project) else set()
    out = []
    for rule in rules:
        planner = {
            Kind.FILES: _files_due,
            Kind.HISTORY: _history_due,
            Kind.SESSIONS: _sessions_due,
            Kind.PROMPTS: _prompts_due,
            Kind.IDEMPOTENCY: _answers_due,
            Kind.LEAVERS: _leavers_due,
        }[rule.kind]
        out.append(planner(rule, project, files, held_files, until))
    return out


def _matching(rule: RetentionRule, files: list[MemoryFile]) -> list[MemoryFile]:
    return [f for f in files if globs.source_matches(rule.glob, f.source_path)]


def _files_due(rule, project, files, held_files, until) -> RulePlan:
    result = RulePlan(rule, [])
    days = dt.timedelta(days=rule.days)
    for file in _matching(rule, files):
        # A deleted file (a delete or a rename away is a change like any other) still has its
        # texts in history: it expires `days` after that change. An expired one is done.
        if file.head is None or file.head.expired_rule:
            continue
        due = file.head.created_at + days
        if due > until:
            continue
        if file.pk in held_files:
            result.held += 1
        else:
            result.due.append(Due(rule, file.display_path, due, file=file))
    result.due.sort(key=lambda item: item.due)
    return result


def _history_due(rule, project, files, held_files, until) -> RulePlan:
    result = RulePlan(rule, [])
    chosen = {f.pk: f for f in _matching(rule, files)}
    revisions: dict = {}
    for revision in (
        Revision.objects.filter(file_id__in=chosen, is_deletion=False, purged_at__isnull=True)
        .order_by("file_id", "-number")
        .only("pk", "file_id", "number", "created_at")
    ):
        revisions.setdefault(revision.file_id, []).append(revision)
    for file_id, found in revisions.items():
        file = chosen[file_id]
        kept = rule.keep_revisions or 0
        numbers, latest = [], None
        for index, revision in enumerate(found):  # newest first
            if revision.pk == file.head_id or index < kept:
                continue
            due = revision.created_at + dt.timedelta(days=rule.days) if rule.days else revision.created_at
            if due > until:
                continue
            numbers.append(revision.number)
            latest = max(latest or due, due)
        if not numbers:
            continue
        if file_id in held_files:
            result.held += len(numbers)
        else:
            result.due.append(
                Due(rule, file.display_path, latest, count=len(numbers), file=file, numbers=sorted(numbers))
            )
    result.due.sort(key=lambda item: item.label)
    return result


def _session_holds(project: Project):
    whole, people = holds.covering_sessions(project)
    return whole, people


def _sessions_due(rule, project, files, held_files, until) -> RulePlan:
    result = RulePlan(rule, [])
    whole, people = _session_holds(project)
    sessions = AgentSession.objects.filter(
        agent__project=project, created_at__lte=until - dt.timedelta(days=rule.days)
    )
    if whole:
        result.held = sessions.count()
        return result
    held = sessions.filter(user_id__in=people)
    result.held = held.count()
    ids = list(sessions.exclude(user_id__in=people).order_by("created_at").values_list("pk", "created_at"))
    if ids:
        result.due.append(
            Due(
                rule,
                _("sessions"),
                ids[-1][1] + dt.timedelta(days=rule.days),
                count=len(ids),
                ids=[pk for pk, _when in ids],
            )
        )
    return result


def _prompts_due(rule, project, files, held_files, until) -> RulePlan:
    """Kept prompts whose newest session is older than the rule (a prompt many sessions got is
    kept while any of them is young)."""
    result = RulePlan(rule, [])
    whole, people = _session_holds(project)
    newest = (
        AgentSession.objects.filter(agent__project=project, prompt_stored=True)
        .exclude(prompt_sha256="")
        .values("prompt_sha256")
        .annotate(last=Max("created_at"))
    )
    limit = until - dt.timedelta(days=rule.days)
    due = [(row["prompt_sha256"], row["last"]) for row in newest if row["last"] <= limit]
    if not due:
        return result
    held_shas = set()
    if whole:
        held_shas = {sha for sha, _when in due}
    elif people:
        held_shas = set(
            AgentSession.objects.filter(
                agent__project=project, user_id__in=people, prompt_sha256__in=[sha for sha, _when in due]
            ).values_list("prompt_sha256", flat=True)
        )
    result.held = len(held_shas)
    shas = sorted((sha, when) for sha, when in due if sha not in held_shas)
    if shas:
        result.due.append(
            Due(
                rule,
                _("kept prompts"),
                max(when for _sha, when in shas) + dt.timedelta(days=rule.days),
                count=len(shas),
                ids=[sha for sha, _when in shas],
            )
        )
    return result


def _answers_due(rule, project, files, held_files, until) -> RulePlan:
    result = RulePlan(rule, [])
    ids = list(
        IdempotencyRecord.objects.filter(
            agent__project=project, created_at__lte=until - dt.timedelta(days=rule.days)
        )
        .order_by("created_at")
        .values_list("pk", "created_at")
    )
    if ids:
        result.due.append(
            Due(
                rule,
                _("stored runner answers"),
                ids[-1][1] + dt.timedelta(days=rule.days),
                count=len(ids),
                ids=[pk for pk, _when in ids],
            )
        )
    return result


def _leavers_due(rule, project, files, held_files, until) -> RulePlan:
    """The profiles here of people who left `days` or more before `until`."""
    result = RulePlan(rule, [])
    left = dict(
        Departure.objects.filter(left_at__lte=until - dt.timedelta(days=rule.days)).values_list(
            "user_id", "left_at"
        )
    )
    for file in files:
        if file.scope != MemoryFile.Scope.USER or file.user_id not in left or file.head is None:
            continue
        if erasure.holds_over(file.user, [project]):
            result.held += 1
            continue
        result.due.append(
            Due(
                rule,
                _("profile of %(user)s") % {"user": file.user.get_username()},
                left[file.user_id] + dt.timedelta(days=rule.days),
                file=file,
            )
        )
    result.due.sort(key=lambda item: item.due)
    return result


def preview(project: Project, *, now: dt.datetime | None = None, days: int = PREVIEW_DAYS) -> list[dict]:
    """Per rule: what expires today (exactly what `apply` would do now), and what else will in
    the next `days` days."""
    now = now or timezone.now()
    later = {p.rule.pk: p for p in plan(project, until=now + dt.timedelta(days=days))}
    out = []
    for current in plan(project, until=now):
        ahead = later[current.rule.pk]
        counted = {d.label: d.count for d in current.due}
        soon = [
            Due(d.rule, d.label, d.due, count=d.count - counted.get(d.label, 0), file=d.file)
            for d in ahead.due
            if d.count > counted.get(d.label, 0)
        ]
        out.append(
            {
                "rule": current.rule,
                "today": current,
                "soon": soon,
                "soon_count": sum(d.count for d in soon),
                "held": ahead.held,
            }
        )
    return out


# --- Applying -------------------------------------------------------------------------------------


@dataclass
class Run:
    files: int = 0
    revisions: int = 0
    sessions: int = 0
    prompts: int = 0
    answers: int = 0
    profiles: int = 0
    held: int = 0
    finished: int = 0  # left by a stopped run and finished now
    refused: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            name: getattr(self, name)
            for name in (
                "files",
                "revisions",
                "sessions",
                "prompts",
                "answers",
                "profiles",
                "held",
                "finished",
            )
        }


def apply(
    project: Project,
    *,
    now: dt.datetime | None = None,
    by=None,
    ran_by: str = "retention",
    run: Run | None = None,
    step: Callable[[Run, int, int], None] | None = None,
) -> Run:
    """Do what `plan(project, until=now)` lists, after finishing what a stopped run left. One
    audit event with the counts (and the mgc_sweeps_total / mgc_swept_total metrics).

    A background job (governance/jobs.py) passes the counts a stopped run of it reached
    (`run`: they go on from there, so the audit event counts the whole run) and `step(run,
    done, total)`, called after each thing done: it keeps the counts and shows the progress.
    What is done is not in the next plan, so a run taken up again does nothing twice."""
    try:
        run = _apply(project, now=now, by=by, ran_by=ran_by, run=run or Run(), step=step)
    except Exception:
        metrics.sweeps.labels("retention", "failed").inc()
        raise
    metrics.sweeps.labels("retention", "held" if run.held or run.refused else "done").inc()
    for name, count in run.as_dict().items():
        if count and name != "held":
            metrics.swept.labels(name).inc(count)
    return run


def _apply(project: Project, *, now: dt.datetime | None, by, ran_by: str, run: Run, step) -> Run:
    now = now or timezone.now()
    step = step or (lambda _run, _done, _total: None)
    unfinished = list(lifecycle.expiry_unfinished(project))
    leftovers = lifecycle.purged_leftovers(project)
    done, total = 0, len(unfinished) + bool(leftovers)
    for file in unfinished:
        try:
            lifecycle.expiry_finish(file)
        except Held:  # a hold placed since the expiry began: what is left stays
            run.held += 1
        else:
            run.finished += 1
        done += 1
        step(run, done, total)
    if leftovers:
        lifecycle.snapshots_delete(project, leftovers)
        run.finished += len(leftovers)
        done += 1
        step(run, done, total)
    plans = plan(project, until=now)
    total = done + sum(len(rule_plan.due) for rule_plan in plans)
    for rule_plan in plans:
        run.held += rule_plan.held
        for item in rule_plan.due:
            try:
                _apply_one(project, item, now, run)
            except Held as exc:  # a hold placed since the plan was made
                run.held += item.count
                run.refused.append(exc.message)
            done += 1
            step(run, done, total)
    actor = Actor.person(by) if by is not None else Actor.system(ran_by)
    audit_record(
        actor=actor,
        action="retention.run",
        project=project,
        obj=project,
        details={**run.as_dict(), "at": now.isoformat()},
    )
    return run


def _apply_one(project: Project, item: Due, now: dt.datetime, run: Run) -> None:
    kind, rule = item.rule.kind, item.rule.describe()
    if kind == Kind.FILES:
        if lifecycle.file_expire(file=item.file, rule=rule, when=now) is not None:
            run.files += 1
    elif kind == Kind.HISTORY:
        run.revisions += lifecycle.revisions_purge(file=item.file, numbers=item.numbers)
    elif kind == Kind.SESSIONS:
        # Checked again here: a hold placed since the plan was made keeps what it covers.
        whole, people = holds.covering_sessions(project)
        doomed = AgentSession.objects.none() if whole else AgentSession.objects.filter(pk__in=item.ids)
        doomed = doomed.exclude(user_id__in=people)
        run.held += len(item.ids) - doomed.count()
        run.sessions += doomed.delete()[1].get(AgentSession._meta.label, 0)
    elif kind == Kind.PROMPTS:
        purged = lifecycle.prompts_purge(
            project=project, sha256s=item.ids, removed={"how": "expired", "at": now.isoformat(), "rule": rule}
        )
        run.prompts += len(purged)
        run.held += len(item.ids) - len(purged)
    elif kind == Kind.IDEMPOTENCY:
        run.answers += IdempotencyRecord.objects.filter(pk__in=item.ids).delete()[0]
    elif kind == Kind.LEAVERS:
        erasure.profile_erase(
            by=None,
            actor=Actor.system("retention"),
            user=item.file.user,
            reason=f"left the organisation (directory deprovisioning); leaver rule: {rule}",
            projects=[project],
        )
        run.profiles += 1
