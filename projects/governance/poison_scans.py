"""Scans for poisoning that got through, and the one action on what they find (issue 37, item 4).

A scan (memory.blast over a project, now or through every stored revision) runs as a
background task on the events worker's `scans` queue, as a subject's request's jobs do
(governance.subject_jobs): its row says queued, running, done or failed, and the project's
page shows it. One scan at a time per project; a scan whose worker died is taken over after
SCAN_STALE_SECONDS. `manage.py scan_memory` runs the same scan in place.

Each finding the project's previous scan did not have emits `memory.poisoning.detected`
(webhooks, SIEM streams). Run a scan after every scanner update: a new rule finds what is
already in memory, not only what arrives next.

"Remove and flag" (`poisoning_remove_and_flag`): a new revision of the file without the line,
saved by the person who acts through the one save path (memory.store), and a flag on the
revision that introduced it (governance.review: audited, and the flag's own event).
"""

from __future__ import annotations

import datetime as dt
import logging

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.tasks import task
from django.utils import timezone
from django.utils.translation import gettext as _

from projects import outbox
from projects.audit import Actor
from projects.governance.review import flag_create
from projects.memory import blast, lineage, linemaps, poisoning, store
from projects.memory.reading import file_read
from projects.models import Flag, MemoryFile, PoisonScan, Project, Revision

log = logging.getLogger(__name__)

QUEUE = "scans"
SCAN_STALE_SECONDS = 15 * 60
State = PoisonScan.State


def scan_queue(*, by, project: Project, history: bool) -> PoisonScan | None:
    """Queue a scan of the project (the worker runs it after the commit); None when one is
    queued or running already (and not stale)."""
    stale = timezone.now() - dt.timedelta(seconds=SCAN_STALE_SECONDS)
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()  # one claim at a time
        busy = PoisonScan.objects.filter(project=project, state__in=[State.QUEUED, State.RUNNING]).filter(
            state_at__gte=stale
        )
        if busy.exists():
            return None
        scan = PoisonScan.objects.create(project=project, history=history, requested_by=by)
        transaction.on_commit(lambda: run_scan.enqueue(scan.pk))
    return scan


@task(queue_name=QUEUE)
def run_scan(scan_id: int) -> str:
    """One scan, on the worker."""
    return scan_run(scan_id).state


def scan_now(*, project: Project, history: bool, by=None) -> PoisonScan:
    """A scan run in place (the command), recorded like the page's."""
    scan = PoisonScan.objects.create(project=project, history=history, requested_by=by)
    return scan_run(scan.pk)


def scan_run(scan_id: int) -> PoisonScan:
    """Run the scan, keep what it found on its row, emit an event for each new finding."""
    PoisonScan.objects.filter(pk=scan_id).update(state=State.RUNNING, state_at=timezone.now())
    scan = PoisonScan.objects.select_related("project").get(pk=scan_id)
    try:
        findings = [f.as_dict() for f in blast.scan_project(scan.project, history=scan.history)]
    except Exception:
        log.exception("poisoning scan %s failed", scan_id)
        _finish(scan, State.FAILED, error=_("Something went wrong; the worker's log says what. Try again."))
        raise
    previous = (
        PoisonScan.objects.filter(project=scan.project, state=State.DONE)
        .filter(Q(created_at__lt=scan.created_at) | Q(created_at=scan.created_at, pk__lt=scan.pk))
        .order_by("-created_at", "-pk")
        .values_list("findings", flat=True)
        .first()
    )
    known = {f.get("key") for f in previous or []}
    fresh = [f for f in findings if f["key"] not in known]
    with transaction.atomic():
        for finding in fresh:
            outbox.emit(
                outbox.POISONING_DETECTED,
                project=scan.project,
                data=_event(scan, finding),
            )
        _finish(scan, State.DONE, findings=findings, new=len(fresh))
    return scan


def _event(scan: PoisonScan, finding: dict) -> dict:
    """What a webhook or SIEM hears: where, which family, who wrote it, who it reached. No
    excerpt: the line may carry an address or a payload."""
    introduced = finding.get("introduced") or {}
    return {
        "project": scan.project.slug,
        "scan": scan.pk,
        "source": "scan",
        "path": finding["path"],
        "revision": finding["revision"],
        "line": finding["line"],
        "family": finding["family"],
        "present": finding["present"],
        "introduced_revision": introduced.get("revision"),
        "author": introduced.get("author"),
        "session": introduced.get("session"),
        "sessions": len(finding["sessions"]),
        "people": finding["people"],
    }


def _finish(scan: PoisonScan, state: str, *, error: str = "", findings=None, new: int = 0) -> None:
    scan.state, scan.error, scan.state_at = state, error[:500], timezone.now()
    fields = ["state", "error", "state_at"]
    if findings is not None:
        scan.findings, scan.new = findings, new
        fields += ["findings", "new"]
    scan.save(update_fields=fields)


def latest_scan(project: Project) -> PoisonScan | None:
    return PoisonScan.objects.filter(project=project).select_related("requested_by").first()


def _finding(scan: PoisonScan, key: str) -> dict:
    found = next((f for f in scan.findings if f.get("key") == key), None)
    if found is None:
        raise ValidationError(_("This finding is not in the scan."), code="no_finding")
    return found


def poisoning_remove_and_flag(*, by, scan: PoisonScan, key: str) -> tuple[Revision | None, Flag | None]:
    """Take the finding's line out of its file (a new revision by `by`, when it is still
    there) and flag the revision that introduced it. The scan's row remembers what was done."""
    finding = _finding(scan, key)
    file = MemoryFile.objects.select_related("head", "project", "agent", "user").get(
        pk=finding["file_id"], project=scan.project
    )
    family = str(poisoning.LABELS.get(finding["family"], finding["family"]))
    with transaction.atomic():
        revision = _without_line(file, finding, by, family)
        flag = None
        introduced = finding.get("introduced")
        origin = _origin_revision(file, finding) if introduced else None
        if origin is not None:
            comment = _("Poisoning (%(family)s) found by a scan, line %(line)s: %(excerpt)s") % {
                "family": family,
                "line": finding["line"],
                "excerpt": finding["excerpt"],
            }
            if revision is not None:
                comment += " " + _("Removed in revision %(number)s.") % {"number": revision.number}
            flag = flag_create(by=by, file=origin.file, number=origin.number, comment=comment)
        finding.update(
            present=False,
            removed_in=revision.number if revision is not None else finding.get("removed_in"),
            flag=flag.pk if flag is not None else None,
            acted_by=by.get_username(),
        )
        scan.save(update_fields=["findings"])
    return revision, flag


def _origin_revision(file: MemoryFile, finding: dict) -> Revision | None:
    ident = finding.get("ident")
    if ident is None:
        return None
    return Revision.objects.select_related("file").filter(pk=linemaps.origin(int(ident))[0]).first()


def _without_line(file: MemoryFile, finding: dict, by, family: str) -> Revision | None:
    """A new revision without the line, when the head still has it (found by its identity,
    wherever it stands now); None when it is gone already."""
    if file.head is None or file.is_deleted or finding.get("ident") is None:
        return None
    idents = lineage.line_map(file, file.head.number)
    ident = int(finding["ident"])
    if ident not in idents:
        return None
    text = file_read(file).text
    lines = linemaps.lines_of(text)  # as the map counts them: split at LF
    del lines[idents.index(ident)]
    content = "\n".join(lines) + ("\n" if lines and text.endswith("\n") else "")
    return store.file_save(
        file=file,
        content=content,
        actor=Actor.person(by),
        message=f"Removed a poisoned line ({family}) found by a scan",
        base_revision=file.head.number,
    )
