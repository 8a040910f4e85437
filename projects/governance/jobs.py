"""Long actions a person waits on, run by the events worker, with their status on a page: an
erasure of a person's profile (People -> Erase) and a retention run started from the
Retention page. (Legal holds keep their own state on the hold, memory/holding.py; subjects'
requests theirs on the request, governance/subject_jobs.py.)

The page queues a job (a BackgroundJob row, and a task on the worker's `jobs` queue after the
commit) and answers at once; the job's page shows queued, running with "n of m", done with
its counts, or failed with the reason, and refreshes that while it runs (static/js/refresh.js).

One job at a time per key (an erasure per person, a retention run per project): a second ask
while one is open is shown the open one. A worker takes a job under a lease it renews at every
step; a worker that died leaves the job "running" until the lease ends, and then the worker's
relay (`jobs_due`) queues it again. Taken up again, a job does nothing twice: an erasure notes
each project erased in the same transaction as its tombstone and goes on with the others; a
retention run's plan no longer lists what was done, and the counts go on from those kept.
`manage.py erase_person` and `manage.py retention` run the same services in place.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext as _

from projects.audit import Actor
from projects.errors import Refusal, explain
from projects.governance import erasure, retention
from projects.memory import holds
from projects.memory.errors import Held
from projects.models import BackgroundJob, Project

log = logging.getLogger(__name__)

QUEUE = "jobs"
LEASE = dt.timedelta(minutes=10)  # longer than one step (one project's erasure) takes
Kind, State = BackgroundJob.Kind, BackgroundJob.State


class LostLease(Exception):
    """Another worker took the job over (this one was thought dead): stop, undo this step."""


# --- Queueing (the pages) -------------------------------------------------------------------------


def erasure_queue(
    *, by, project: Project, user, reason: str, projects: list[Project]
) -> tuple[BackgroundJob, bool]:
    """Queue the erasure of `user`'s profile in `projects` (checked now as the service checks
    it: a reason, no standing legal hold; the worker checks again). Returns the job and
    whether it is new (False: one for this person is open already, and is returned)."""
    reason = reason.strip()
    if not reason:
        raise ValidationError(
            _("Say why the profile is erased; the tombstone keeps the reason."), code="erase_reason"
        )
    standing = erasure.holds_over(user, projects)
    if standing:
        raise Held(holds.refusal(standing))
    params = {
        "user_id": user.pk,
        "user": user.get_username(),
        "reason": reason,
        "projects": [str(p.pk) for p in projects],
        "slugs": [p.slug for p in projects],
    }
    return _queue(by=by, kind=Kind.ERASURE, project=project, key=f"erasure:{user.pk}", params=params)


def retention_queue(*, by, project: Project) -> tuple[BackgroundJob, bool]:
    """Queue a run of the project's retention rules now, as `manage.py retention` runs them."""
    return _queue(by=by, kind=Kind.RETENTION, project=project, key=f"retention:{project.pk}", params={})


def _queue(*, by, kind: str, project: Project, key: str, params: dict) -> tuple[BackgroundJob, bool]:
    try:
        with transaction.atomic():
            job = BackgroundJob.objects.create(
                kind=kind,
                project=project,
                key=key,
                params=params,
                requested_by=by,
                enqueued_at=timezone.now(),
            )
            transaction.on_commit(lambda: _enqueue_task(job.pk))
    except IntegrityError:  # one is open for the same key (the partial unique constraint)
        found = BackgroundJob.objects.filter(key=key, state__in=[State.QUEUED, State.RUNNING]).first()
        if found is None:  # it ended in between: this one may start now
            return _queue(by=by, kind=kind, project=project, key=key, params=params)
        return found, False
    return job, True


def job_retry(*, job: BackgroundJob) -> bool:
    """Queue a failed job again: it goes on from where it stopped (what it did stays done).
    False when it is not failed, or another job for the same key is open."""
    try:
        with transaction.atomic():
            again = BackgroundJob.objects.filter(pk=job.pk, state=State.FAILED).update(
                state=State.QUEUED, error="", finished_at=None, enqueued_at=timezone.now()
            )
            if again:
                transaction.on_commit(lambda: _enqueue_task(job.pk))
    except IntegrityError:
        return False
    return bool(again)


def _enqueue_task(job_id: int) -> None:
    from projects.governance.tasks import run_job  # the task module imports this one

    run_job.enqueue(job_id)


def jobs_due(now: dt.datetime | None = None) -> int:
    """Queue a task again for every open job that has lost its own: queued with no worker
    taking it for a lease's time, or running under a lease that ran out (its worker died).
    The events worker's relay calls it; returns how many it queued."""
    now = now or timezone.now()
    stale = now - LEASE
    due = BackgroundJob.objects.filter(
        Q(state=State.QUEUED, enqueued_at__lt=stale) | Q(state=State.RUNNING, lease_until__lt=now)
    ).filter(Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=stale))
    count = 0
    for pk in due.values_list("pk", flat=True):
        if (
            BackgroundJob.objects.filter(pk=pk)
            .filter(Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=stale))
            .update(enqueued_at=now)
        ):
            _enqueue_task(pk)
            count += 1
    return count


# --- Running (the worker) -------------------------------------------------------------------------


def job_run(job_id: int) -> str:
    """The worker's task: take the job (if no live worker has it), run it to the end from
    where it stands, and leave the outcome on its row: done with the counts, or failed with
    what a person can act on."""
    owner = uuid.uuid4().hex
    now = timezone.now()
    claimed = (
        BackgroundJob.objects.filter(pk=job_id)
        .filter(Q(state=State.QUEUED) | Q(state=State.RUNNING, lease_until__lt=now))
        .update(state=State.RUNNING, owner=owner, lease_until=now + LEASE, attempts=F("attempts") + 1)
    )
    if not claimed:
        job = BackgroundJob.objects.filter(pk=job_id).first()
        return job.state if job is not None else "gone"
    job = BackgroundJob.objects.select_related("project", "requested_by").get(pk=job_id)
    BackgroundJob.objects.filter(pk=job_id, started_at__isnull=True).update(started_at=now)
    try:
        result = _RUNNERS[job.kind](job, owner)
    except LostLease:
        return "taken over"
    except (Refusal, ValidationError) as exc:
        _finish(job, owner, State.FAILED, error=explain(exc))
        return "failed"
    except Exception:
        log.exception("background job %s (%s) failed", job_id, job.kind)
        _finish(
            job,
            owner,
            State.FAILED,
            error=_("Something went wrong; the worker's log says what. Start it again to finish it."),
        )
        raise
    _finish(job, owner, State.DONE, result=result)
    return "done"


def _finish(
    job: BackgroundJob, owner: str, state: str, *, result: dict | None = None, error: str = ""
) -> None:
    BackgroundJob.objects.filter(pk=job.pk, owner=owner).update(
        state=state,
        result=result or {},
        error=error[:500],
        finished_at=timezone.now(),
        owner="",
        lease_until=None,
    )


def _step(job: BackgroundJob, owner: str, **fields) -> None:
    """Keep the job's progress and renew its lease; LostLease if another worker has it now."""
    fields["lease_until"] = timezone.now() + LEASE
    if not BackgroundJob.objects.filter(pk=job.pk, owner=owner, state=State.RUNNING).update(**fields):
        raise LostLease(job.pk)


def _run_erasure(job: BackgroundJob, owner: str) -> dict:
    params = job.params
    user = get_user_model().objects.get(pk=params["user_id"])
    progress = dict(job.progress or {})
    erased = list(progress.get("erased", []))
    totals = dict(progress.get("totals") or {"files": 0, "revisions": 0, "objects": 0})
    wanted = Project.objects.in_bulk([pk for pk in params["projects"]])
    projects = [wanted[pk] for pk in map(_pk, params["projects"]) if pk in wanted]
    left = [p for p in projects if str(p.pk) not in erased]
    _step(job, owner, done=len(erased), total=len(erased) + len(left))

    def noted(project: Project, counts: erasure.Erasure) -> None:
        erased.append(str(project.pk))
        for name in totals:
            totals[name] += getattr(counts, name)
        _step(job, owner, done=len(erased), progress={"erased": erased, "totals": totals})

    by = job.requested_by  # None: the account that asked was deleted since; the console acts
    erasure.profile_erase(
        by=by,
        actor=Actor.person(by) if by is not None else Actor.system("erasure"),
        user=user,
        reason=params["reason"],
        projects=left,
        erased=noted,
    )
    slugs = {str(p.pk): p.slug for p in projects}
    return {**totals, "projects": [slugs.get(pk, pk) for pk in erased]}


def _pk(value: str):
    """A project's primary key as in_bulk returns it (a UUID or an int, as the model has it)."""
    return Project._meta.pk.to_python(value)


def _run_retention(job: BackgroundJob, owner: str) -> dict:
    saved = (job.progress or {}).get("run") or {}
    # What a stopped run did goes on counting; what it found held is found again by this one.
    run = retention.Run(**{**saved, "held": 0})
    started = job.done

    def step(current: retention.Run, done: int, total: int) -> None:
        _step(job, owner, done=started + done, total=started + total, progress={"run": current.as_dict()})

    run = retention.apply(job.project, by=job.requested_by, run=run, step=step)
    return {**run.as_dict(), "refused": run.refused[:10]}


_RUNNERS = {Kind.ERASURE: _run_erasure, Kind.RETENTION: _run_retention}


# --- Reading (the pages) --------------------------------------------------------------------------


def jobs_of(project: Project, *, kind: str | None = None, limit: int = 10):
    found = BackgroundJob.objects.filter(project=project).select_related("requested_by")
    if kind:
        found = found.filter(kind=kind)
    return found.order_by("-requested_at", "-pk")[:limit]


def unfinished_job(key: str, *, project: Project) -> BackgroundJob | None:
    """The newest job for `key` started from `project`'s pages, if it is not done: under way,
    or failed (started again, it goes on from where it stopped, not from the start)."""
    job = BackgroundJob.objects.filter(key=key, project=project).order_by("-requested_at", "-pk").first()
    return job if job is not None and job.state != State.DONE else None


def stalled(job: BackgroundJob, now: dt.datetime | None = None) -> bool:
    """Running with a lease that ran out: its worker died; the relay queues it again."""
    now = now or timezone.now()
    return job.state == State.RUNNING and job.lease_until is not None and job.lease_until < now
