"""Does a restored console agree with itself? `manage.py restore_check` after a restore drill
(docs/DEPLOY.md, section 8): the database from its dump, the bucket from its copy.

Every disagreement between the two stores is reported, check by check:

- snapshots: every revision's snapshot object exists and holds bytes with its sha256;
- heads: every file's head object is its recorded head (the same bytes; a deleted file has
  none);
- prompts: every kept prompt is there and matches the sha256 its sessions' receipts name;
- audit: the audit trail's hash chain verifies;
- holds: every version a standing legal hold covers carries its S3 legal hold (when the
  hold was enforced by the storage);
- reconcile: what `reconcile` would adopt or report (heads that moved on, untracked files,
  snapshots and prompts no record names, keys outside the layout).

The dump is a moment; the bucket's copy ends later, while the console kept working. So an
object written after the dump (its LastModified after `since`, less the time a save may take
in flight) is not a disagreement: it is counted as written after the dump, and `reconcile`
adopts it as it adopts any write it finds (heads become revisions, untracked files become
files, orphan snapshots of saves that did not make it into the dump are deleted). Anything
else is a disagreement: a restore that lost data, or copies from the wrong moments.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from django.db.models import Max
from django.utils import timezone

from projects.audit import audit_verify
from projects.memory import holds, layout, reconcile
from projects.memory.errors import StorageUnavailable
from projects.memory.storage import storage_for
from projects.models import AgentSession, AuditEvent, LegalHold, MemoryFile, PendingPrompt, Project, Revision

CHECKS = ("snapshots", "heads", "prompts", "audit", "holds", "reconcile")
# A save writes its snapshot and head before it commits; one in flight while the dump began
# is in the bucket and not in the dump. Objects this much older than `since` still count as
# written after the dump (gunicorn replaces a request after MGC_WEB_TIMEOUT, 60 s).
IN_FLIGHT = dt.timedelta(seconds=120)


@dataclass
class Finding:
    check: str
    project: str
    key: str
    problem: str


@dataclass
class Report:
    since: dt.datetime
    checked: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CHECKS, 0))
    disagreements: list[Finding] = field(default_factory=list)
    after_dump: list[Finding] = field(default_factory=list)

    @property
    def consistent(self) -> bool:
        return not self.disagreements

    def as_dict(self) -> dict:
        return {
            "since": self.since.isoformat(),
            "consistent": self.consistent,
            "checked": self.checked,
            "disagreements": [f.__dict__ for f in self.disagreements],
            "written_after_the_dump": [f.__dict__ for f in self.after_dump],
        }


def dump_moment() -> dt.datetime:
    """The newest moment the database records (the dump was taken after it): the latest audit
    event, revision or session."""
    moments = [
        AuditEvent.objects.aggregate(m=Max("created_at"))["m"],
        Revision.objects.aggregate(m=Max("created_at"))["m"],
        AgentSession.objects.aggregate(m=Max("created_at"))["m"],
    ]
    known = [m for m in moments if m is not None]
    return max(known) if known else timezone.now()


def restore_check(*, since: dt.datetime | None = None, workers: int = 8) -> Report:
    report = Report(since=since or dump_moment())
    for problem in audit_verify():
        report.disagreements.append(Finding("audit", "", "", problem))
    report.checked["audit"] = AuditEvent.objects.count()
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="restore-check") as pool:
        for project in Project.objects.order_by("slug"):
            _project(report, project, pool)
    _holds(report)
    return report


class _Checker:
    def __init__(self, report: Report, project: Project, listing: dict[str, dict]):
        self.report, self.project, self.listing = report, project, listing
        self.cutoff = report.since - IN_FLIGHT

    def written_after(self, key: str) -> bool:
        modified = self.listing.get(key, {}).get("LastModified")
        return modified is not None and modified > self.cutoff

    def add(self, check: str, key: str, problem: str, *, maybe_after: bool = False) -> None:
        finding = Finding(check, self.project.slug, key, problem)
        if maybe_after and self.written_after(key):
            self.report.after_dump.append(finding)
        else:
            self.report.disagreements.append(finding)


def _sha256(storage, key: str) -> str | None:
    found = storage.read(key)
    return None if found is None else hashlib.sha256(found.body).hexdigest()


def _project(report: Report, project: Project, pool: ThreadPoolExecutor) -> None:
    storage = storage_for(project)
    try:
        objects = storage.listing(project.prefix)
    except StorageUnavailable:
        report.disagreements.append(
            Finding("reconcile", project.slug, project.prefix, "the bucket cannot be listed")
        )
        return
    checker = _Checker(report, project, {obj["Key"]: obj for obj in objects})

    # Snapshots: read every one (in parallel; threads touch S3 only) and hash it.
    revisions = list(
        Revision.objects.filter(file__project=project, purged_at__isnull=True)
        .exclude(snapshot_key="")
        .values_list("snapshot_key", "sha256")
    )
    for (key, sha), found in zip(
        revisions, pool.map(lambda r: _sha256(storage, r[0]), revisions), strict=True
    ):
        if found is None:
            checker.add("snapshots", key, "missing")
        elif found != sha:
            checker.add("snapshots", key, f"holds sha256 {found[:12]}…, its revision says {sha[:12]}…")
    report.checked["snapshots"] += len(revisions)

    # Heads: the object at each file's key is its recorded head, or nothing for a deleted file.
    files = list(MemoryFile.objects.filter(project=project).select_related("head"))
    live = [f for f in files if f.head is not None and not f.head.is_deletion and not f.head.expired_rule]
    heads = dict(zip([f.pk for f in live], pool.map(lambda f: _sha256(storage, f.key), live), strict=True))
    for file in files:
        head = file.head
        if head is None:
            continue
        if file.pk in heads:
            found = heads[file.pk]
            if found is None:
                checker.add("heads", file.key, f"missing (the record's head is revision {head.number})")
            elif found != head.sha256:
                checker.add(
                    "heads",
                    file.key,
                    f"differs from revision {head.number}: reconcile records it",
                    maybe_after=True,
                )
        elif file.key in checker.listing and not head.expired_rule:
            checker.add("heads", file.key, "deleted in the records, present in the bucket", maybe_after=True)
    report.checked["heads"] += len(files)

    # Kept prompts: there, and the bytes their receipts' sha256 names.
    shas = sorted(
        set(
            AgentSession.objects.filter(
                agent__project=project, prompt_stored=True, prompt_removed__isnull=True
            )
            .exclude(prompt_sha256="")
            .values_list("prompt_sha256", flat=True)
        )
    )
    # A prompt still on its way to S3 is in the database (memory.receipts): not missing.
    pending = set(PendingPrompt.objects.filter(project=project).values_list("sha256", flat=True))
    shas = [sha for sha in shas if sha not in pending]
    keys = [layout.prompt_key(project.prefix, sha) for sha in shas]
    for sha, key, found in zip(shas, keys, pool.map(lambda k: _sha256(storage, k), keys), strict=True):
        if found is None:
            checker.add("prompts", key, "missing")
        elif found != sha:
            checker.add("prompts", key, "does not match its receipt's sha256")
    report.checked["prompts"] += len(shas)

    # What reconcile would adopt or report.
    for item in reconcile.classify(project, objects):
        if item.severity == reconcile.OK:
            continue
        if item.kind == "refused":
            continue  # recorded as a refused write in the database: it agrees
        checker.add(
            "reconcile", item.key, f"{item.kind}: {item.detail}", maybe_after=item.severity == "warning"
        )
    report.checked["reconcile"] += len(objects)


def _holds(report: Report) -> None:
    # Placed holds the storage enforces; one still being placed or released was not done when
    # the dump was taken: reconcile, the periodic sweep or `legal_hold sweep` finishes it.
    placed = holds.standing().filter(state=LegalHold.State.PLACED, storage_enforced=True)
    for hold in placed.select_related("project", "user", "file__project"):
        for unit in holds.hold_units(hold):
            storage = storage_for(unit.project)
            checker = _Checker(report, unit.project, {})
            for version in storage.versions(unit.prefix):
                if "ETag" not in version or not unit.covers(version["Key"]):
                    continue  # a delete marker holds nothing
                if version.get("VersionId") in (None, "", "null"):
                    continue  # written before the bucket kept versions: kept by the console's refusal
                report.checked["holds"] += 1
                if not storage.legal_hold(version["Key"], version["VersionId"]):
                    checker.add(
                        "holds",
                        version["Key"],
                        f"version {version['VersionId']} carries no legal hold; hold #{hold.pk} "
                        f"({hold.target}) covers it: manage.py legal_hold sweep puts it back",
                    )
