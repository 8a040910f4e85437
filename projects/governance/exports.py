"""A project's memory as it stands in S3, zipped with a history manifest."""

from __future__ import annotations

import hashlib
import json
import zipfile

from django.utils import timezone

from projects.audit import Actor, audit_record
from projects.memory import objects
from projects.memory.storage import storage_for
from projects.models import MemoryFile, Project, Revision


def project_export(*, by, project: Project, out) -> dict:
    """Write a zip of the project's memory to the binary file `out`: every live file as its
    object stands in S3 now under memory/, and history.json listing every revision of every
    file (who, when, sha256, snapshot key). Returns the manifest's summary."""
    files = list(
        MemoryFile.objects.filter(project=project)
        .select_related("head", "agent", "user")
        .order_by("scope", "path")
    )
    revisions: dict = {}
    for revision in Revision.objects.filter(file__project=project).order_by("file_id", "number"):
        revisions.setdefault(revision.file_id, []).append(revision)
    paths = {file.pk: file.display_path for file in files}  # the two ends of a rename
    entries = []
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for file in files:
            data = None
            if file.head is not None and not file.head.is_deletion:
                data = objects.object_read(project, file.key)
            if data is not None:
                archive.writestr(f"memory/{file.display_path}", data)
            entries.append(
                {
                    "path": file.display_path,
                    "key": file.key,
                    "scope": file.scope,
                    "exported": data is not None,
                    "sha256": hashlib.sha256(data).hexdigest() if data is not None else None,
                    "matches_head": (
                        data is not None
                        and file.head is not None
                        and hashlib.sha256(data).hexdigest() == file.head.sha256
                    ),
                    "revisions": [
                        {
                            "number": r.number,
                            "sha256": r.sha256,
                            "size": r.size,
                            "author": r.author_label,
                            "author_kind": r.author_kind,
                            "message": r.message,
                            "created_at": r.created_at.isoformat(),
                            "snapshot_key": r.snapshot_key,
                            "deletion": r.is_deletion,
                            "restored_from": r.restored_from,
                            "renamed_from": paths.get(r.renamed_from_id),
                            "renamed_to": paths.get(r.renamed_to_id),
                        }
                        for r in revisions.get(file.pk, [])
                    ],
                }
            )
        summary = {
            "project": {
                "id": str(project.pk),
                "slug": project.slug,
                "name": project.name,
                "prefix": project.prefix,
                "bucket": storage_for(project).bucket_name,
            },
            "exported_at": timezone.now().isoformat(),
            "exported_by": by.get_username(),
            "files": len(entries),
            "objects": sum(e["exported"] for e in entries),
            "revisions": sum(len(e["revisions"]) for e in entries),
        }
        archive.writestr(
            "history.json", json.dumps({**summary, "entries": entries}, ensure_ascii=False, indent=2)
        )
    audit_record(
        actor=Actor.person(by),
        action="project.export",
        project=project,
        obj=project,
        details={k: summary[k] for k in ("files", "objects", "revisions")},
    )
    return summary
