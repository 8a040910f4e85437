"""The records a subject's request leaves for a regulator (answer packages, destruction acts):
kept in S3 under Object Lock retention (memory.archive), a row each, and every download
audited. Rows are never deleted; a record is read back by its version and checked against
its sha256."""

from __future__ import annotations

from django.db import transaction
from django.utils.translation import gettext as _

from projects.audit import Actor, audit_record
from projects.memory import archive, layout
from projects.memory.errors import StorageUnavailable
from projects.models import SubjectDocument, SubjectRequest

ZIP = "application/zip"
_ATTEMPTS = 5


def document_keep(
    *, by, request: SubjectRequest, kind: str, stem: str, data: bytes, manifest: dict
) -> SubjectDocument:
    """Keep `data` as `<stem>-<n>.zip` of the request (the next free n) and record it."""
    taken = SubjectDocument.objects.filter(request=request).count()
    for n in range(taken + 1, taken + 1 + _ATTEMPTS):
        key = layout.subject_record_key(request.pk, f"{stem}-{n}.zip")
        try:
            kept = archive.archive_write(key, data, content_type=ZIP)
        except archive.KeyTaken:  # an earlier attempt that was never recorded: the next name
            continue
        with transaction.atomic():
            document, _created = SubjectDocument.objects.get_or_create(
                bucket=kept.bucket,
                key=kept.key,
                defaults={
                    "request": request,
                    "kind": kind,
                    "version_id": kept.version_id,
                    "sha256": kept.sha256,
                    "size": kept.size,
                    "retain_until": kept.retain_until,
                    "lock_mode": kept.mode,
                    "manifest": manifest,
                    "created_by": by,
                },
            )
            audit_record(
                actor=Actor.person(by),
                action=f"subject_request.{'package' if kind == SubjectDocument.Kind.PACKAGE else 'act'}",
                project=request.project,
                obj=request,
                details={
                    "request": request.pk,
                    "kind": request.kind,
                    "state": request.state,
                    "due_on": request.due_on.isoformat(),
                    "document": document.pk,
                    "key": kept.key,
                    "sha256": kept.sha256,
                    "size": kept.size,
                    "lock": kept.mode or "none",
                    "retain_until": kept.retain_until.isoformat() if kept.retain_until else None,
                },
            )
        return document
    raise StorageUnavailable(
        _("Every name for the record was taken in storage; nothing was recorded. Try again.")
    )


def document_read(*, by, document: SubjectDocument) -> bytes:
    """The record's bytes for a download, audited (one event per download)."""
    data = archive.archive_read(
        bucket=document.bucket, key=document.key, version_id=document.version_id, sha256=document.sha256
    )
    if data is None:
        raise StorageUnavailable(
            _("The record %(name)s is missing from storage or does not match what was kept.")
            % {"name": document.filename}
        )
    audit_record(
        actor=Actor.person(by),
        action="subject_request.download",
        project=document.request.project,
        obj=document,
        details={"request": document.request_id, "document": document.pk, "sha256": document.sha256},
    )
    return data
