"""The long work of a subject's request as background tasks (Django's Tasks on the database
backend, run by `manage.py events_worker` on its `subjects` queue): finding everything about
the person, making the answer package, erasing with the act. The request row says where its
job stands (queued, running, done, failed and why), which its page shows and refreshes.

One job at a time per request: starting one claims the row with a conditional UPDATE. A job
whose worker died stays "running"; after JOB_STALE_SECONDS the page offers to start it again
(each job is safe to repeat: the search only reads, a package or an act is a new record, an
erasure finishes what a stopped one began).
"""

from __future__ import annotations

import datetime as dt
import logging

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.tasks import task
from django.utils import timezone
from django.utils.translation import gettext as _

from projects.audit import Actor, audit_record
from projects.errors import Refusal, explain
from projects.governance import subject_acts, subject_package, subject_traces
from projects.governance.redaction import redact
from projects.models import SubjectRequest

log = logging.getLogger(__name__)

QUEUE = "subjects"
SEARCH, PACKAGE, ERASURE = "search", "package", "erasure"
JOBS = (SEARCH, PACKAGE, ERASURE)
JOB_STALE_SECONDS = 15 * 60
Job = SubjectRequest.Job


def job_queue(*, by, request: SubjectRequest, job: str) -> bool:
    """Queue one job for the request (the worker runs it after the commit). False when one
    is queued or running already (and not stale)."""
    if job not in JOBS:
        raise ValueError(job)
    return _start(by=by, request=request, job=job)


def _start(*, by, request: SubjectRequest, job: str) -> bool:
    stale = timezone.now() - dt.timedelta(seconds=JOB_STALE_SECONDS)
    with transaction.atomic():
        claimed = (
            SubjectRequest.objects.filter(pk=request.pk)
            .filter(~Q(job_state__in=[Job.QUEUED, Job.RUNNING]) | Q(job_at__lt=stale))
            .update(job=job, job_state=Job.QUEUED, job_error="", job_at=timezone.now())
        )
        if claimed:
            transaction.on_commit(lambda: run_job.enqueue(request.pk, job, by.pk))
    return bool(claimed)


@task(queue_name=QUEUE)
def run_job(request_id: int, job: str, by_id: int) -> str:
    """One job of one request, on the worker."""
    return job_run(request_id, job, by_id)


def job_run(request_id: int, job: str, by_id: int) -> str:
    """Run a job now (the worker's task; the command runs it in place). Its outcome goes on
    the request row: done, or failed with what a person can act on."""
    by = get_user_model().objects.get(pk=by_id)
    SubjectRequest.objects.filter(pk=request_id).update(job=job, job_state=Job.RUNNING, job_at=timezone.now())
    request = SubjectRequest.objects.select_related("project", "user", "handler").get(pk=request_id)
    try:
        if job == SEARCH:
            inventory_refresh(by=by, request=request)
        elif job == PACKAGE:
            subject_package.package_build(by=by, request=request)
        else:
            subject_acts.erasure_answer(by=by, request=request)
    except (Refusal, ValidationError) as exc:
        _finish(request_id, Job.FAILED, explain(exc))
        return "failed"
    except Exception:
        log.exception("subject request %s: %s failed", request_id, job)
        _finish(request_id, Job.FAILED, _("Something went wrong; the worker's log says what. Try again."))
        raise
    _finish(request_id, Job.DONE, "")
    return "done"


def _finish(request_id: int, state: str, error: str) -> None:
    SubjectRequest.objects.filter(pk=request_id).update(
        job_state=state, job_error=error[:500], job_at=timezone.now()
    )


def inventory_refresh(*, by, request: SubjectRequest) -> dict:
    """Find what is held about the person (records and search copies; no S3 texts) and keep
    the findings on the request for the handler to choose from: counts, the mentions with
    their origins, and the other people's details the mentions' lines hold."""
    found = subject_traces.traces(request, by=by, texts=False)
    details: dict = {}
    mentions = []
    for mention in found.mentions:
        _clean, withheld = redact(mention.text, subject=found.subject, others=found.others)
        for hit in withheld:
            details.setdefault(hit.key, {"key": hit.key, "kind": hit.kind, "lines": 0})["lines"] += 1
        mentions.append(
            dict(mention.as_dict(), file_id=str(mention.file.pk), others=[h.key for h in withheld])
        )
    inventory = {
        "counts": found.counts(),
        "projects": [p.slug for p in found.projects],
        "profiles": [
            {
                "project": p.project.slug,
                "path": p.file.display_path,
                "file_id": str(p.file.pk),
                "revisions": len(p.revisions),
            }
            for p in found.profiles
        ],
        "mentions": mentions,
        "mentions_cut": found.mentions_cut,
        "third_parties": sorted(details.values(), key=lambda d: d["key"]),
    }
    with transaction.atomic():
        SubjectRequest.objects.filter(pk=request.pk).update(inventory=inventory, inventory_at=timezone.now())
        audit_record(
            actor=Actor.person(by),
            action="subject_request.search",
            project=request.project,
            obj=request,
            details={"request": request.pk, "kind": request.kind, **found.counts()},
        )
    request.inventory = inventory
    return inventory


def selection_save(*, by, request: SubjectRequest, excluded: list[str], keep: dict[str, str]) -> None:
    """The handler's choices for the answer: mentions left out, other people's details kept
    (each with its reason)."""
    known = {m["id"] for m in (request.inventory or {}).get("mentions", [])}
    third = {d["key"] for d in (request.inventory or {}).get("third_parties", [])}
    excluded = sorted(set(excluded) & known)
    if any(not (reason or "").strip() for reason in keep.values()):
        raise ValidationError(_("Give a reason for every detail kept unredacted."), code="keep_reason")
    keep = {k: v.strip()[:300] for k, v in keep.items() if k in third}
    with transaction.atomic():
        SubjectRequest.objects.filter(pk=request.pk).update(selection={"excluded": excluded, "keep": keep})
        audit_record(
            actor=Actor.person(by),
            action="subject_request.select",
            project=request.project,
            obj=request,
            details={"request": request.pk, "left_out": len(excluded), "kept": sorted(keep)},
        )
    request.selection = {"excluded": excluded, "keep": keep}
