"""Isolation per project: IAM-style policies that confine a project (or one agent's runner) to
its own key prefix, and a read-only check that every object in the buckets belongs somewhere.

The policies use the AWS IAM grammar, which MinIO, Ceph RGW and VK Cloud accept as well.
check_isolation only reports; `manage.py reconcile` is the command that changes things.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from django.utils.translation import gettext_lazy as _

from projects.memory import iam, layout, reconcile
from projects.memory.reconcile import ERROR
from projects.memory.storage import storage_for
from projects.models import IsolationCheck, MemoryFile, Project, Revision, SubjectDocument

KEEP_FINDINGS = 200


def bucket_of(project: Project) -> str:
    return storage_for(project).bucket_name


def project_policy(project: Project) -> dict:
    """What the console's credentials for this project need: everything under its prefix,
    nothing outside it (a second project's console user cannot read this one's keys)."""
    bucket, prefix = bucket_of(project), project.prefix
    return {
        "Version": "2012-10-17",
        "Statement": [
            iam.list_statement(bucket, [prefix]),
            {
                "Sid": "ReadWriteOwnPrefix",
                "Effect": "Allow",
                "Action": [
                    "s3:GetObject",
                    "s3:GetObjectVersion",
                    "s3:PutObject",
                    "s3:DeleteObject",
                    "s3:DeleteObjectVersion",
                ],
                "Resource": iam.arn(bucket, prefix + "*"),
            },
        ],
    }


# What each finding kind means, for the isolation page (details stay as recorded, in English).
KIND_LABELS = {
    "stray": _("object no record owns"),
    "foreign": _("object of another owner"),
    "outside_layout": _("key outside the layout"),
    "missing_object": _("record without its object"),
    "missing_snapshot": _("revision without its copy"),
    "overlap": _("prefixes overlap"),
    "orphan_snapshot": _("snapshot awaiting reconcile"),
    "untracked": _("new file awaiting adoption"),
    "orphan_prompt": _("kept prompt without its session"),
    "refused": _("write the console refused"),
}


@dataclass(frozen=True)
class IsolationFinding:
    kind: str  # see KIND_LABELS
    bucket: str
    key: str
    detail: str
    # "error": isolation is broken or a record lost its object; "warning": a leftover that
    # reconcile (or the next pre hook) settles, such as a crashed save's snapshot.
    severity: str = ERROR


def check_isolation(projects: list[Project] | None = None) -> list[IsolationFinding]:
    """Objects no record owns, records whose object is missing, keys outside the layout, and
    project prefixes that overlap. With no projects given, whole buckets are checked, so an
    object outside every project is found too. Whose each key is comes from
    reconcile.classify, the classifier reconcile itself acts on."""
    whole = projects is None
    projects = list(Project.objects.all()) if whole else projects
    findings: list[IsolationFinding] = []
    by_bucket: dict[str, list[Project]] = {}
    for project in projects:
        by_bucket.setdefault(bucket_of(project), []).append(project)
    if whole:
        default = storage_for(Project(bucket="")).bucket_name
        by_bucket.setdefault(default, [])
    for bucket, members in sorted(by_bucket.items()):
        findings += _overlaps(bucket, members)
        storage = storage_for(members[0]) if members else storage_for(Project())
        prefixes = [""] if whole else [p.prefix for p in members]
        objects = {obj["Key"]: obj for prefix in prefixes for obj in storage.listing(prefix)}
        owned: set[str] = set()
        for project in members:
            findings += _check_project(bucket, project, objects, owned)
        owned |= _records_kept(bucket, objects)
        findings += [
            IsolationFinding("stray", bucket, key, "under no project's prefix")
            for key in sorted(set(objects) - owned)
        ]
    return findings


def _records_kept(bucket: str, objects: dict) -> set[str]:
    """Keys under `_records/` that a subject's request's record names: the console's own."""
    keys = [key for key in objects if key.startswith(layout.RECORDS_ROOT)]
    if not keys:
        return set()
    return set(SubjectDocument.objects.filter(bucket=bucket, key__in=keys).values_list("key", flat=True))


def errors(findings: list[IsolationFinding]) -> list[IsolationFinding]:
    return [f for f in findings if f.severity == ERROR]


def _overlaps(bucket: str, projects: list[Project]) -> list[IsolationFinding]:
    """Pairs of projects whose prefixes are equal or nested (saving refuses new ones; this
    finds any made before that rule, or written to the database by hand)."""
    found = []
    for index, a in enumerate(projects):
        for b in projects[index + 1 :]:
            if layout.prefixes_overlap(a.prefix, b.prefix):
                inner, outer = (b, a) if b.prefix.startswith(a.prefix) else (a, b)
                found.append(
                    IsolationFinding(
                        "overlap",
                        bucket,
                        inner.prefix,
                        f"{inner.slug}'s prefix lies inside {outer.slug}'s"
                        if inner.prefix != outer.prefix
                        else f"{inner.slug} and {outer.slug} share one prefix",
                    )
                )
    return found


def _check_project(
    bucket: str, project: Project, objects: dict[str, dict], owned: set[str]
) -> list[IsolationFinding]:
    prefix = project.prefix
    mine = [obj for key, obj in objects.items() if key.startswith(prefix)]
    owned.update(obj["Key"] for obj in mine)
    findings = [
        IsolationFinding(item.kind, bucket, item.key, item.detail, item.severity)
        for item in sorted(reconcile.classify(project, mine), key=lambda i: i.key)
        if item.severity != reconcile.OK
    ]
    files = MemoryFile.objects.filter(project=project).select_related("head")
    for file in files:
        if file.head is not None and not file.head.is_deletion and file.key not in objects:
            findings.append(
                IsolationFinding(
                    "missing_object", bucket, file.key, f"{file.display_path} r{file.head.number}"
                )
            )
    snapshots = set(
        Revision.objects.filter(file__project=project)
        .exclude(snapshot_key="")
        .values_list("snapshot_key", flat=True)
    )
    for key in sorted(snapshots - set(objects)):
        findings.append(IsolationFinding("missing_snapshot", bucket, key, "a revision's copy"))
    return findings


def check_and_record(projects: list[Project] | None = None, *, ran_by: str) -> list[IsolationFinding]:
    """Run the check and keep each project's outcome (and, for a whole run, the strays under
    no project) for the dashboard and the isolation page."""
    findings = check_isolation(projects)
    checked = list(Project.objects.all()) if projects is None else projects
    for project in checked:
        bucket, prefix = bucket_of(project), project.prefix
        mine = [f for f in findings if f.bucket == bucket and f.key.startswith(prefix)]
        IsolationCheck.objects.create(
            project=project,
            ran_by=ran_by[:200],
            finding_count=len(errors(mine)),
            findings=[asdict(f) for f in mine[:KEEP_FINDINGS]],
        )
    if projects is None:
        owned = {
            id(f)
            for p in checked
            for f in findings
            if f.bucket == bucket_of(p) and f.key.startswith(p.prefix)
        }
        rest = [f for f in findings if id(f) not in owned]
        IsolationCheck.objects.create(
            project=None,
            ran_by=ran_by[:200],
            finding_count=len(errors(rest)),
            findings=[asdict(f) for f in rest[:KEEP_FINDINGS]],
        )
    return findings
