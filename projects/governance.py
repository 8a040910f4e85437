"""Writes of governance: review marks and flags, memberships, export, erasure. Each is audited
in the same transaction as the change (services: keyword-only, one transaction each)."""

from __future__ import annotations

import hashlib
import json
import zipfile
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from projects import layout, store
from projects.audit import Actor, audit_record
from projects.models import (
    Agent,
    Flag,
    Membership,
    MemoryFile,
    Project,
    Proposal,
    ReviewMark,
    Revision,
)


@transaction.atomic
def review_mark(*, reviewer, file: MemoryFile, number: int) -> ReviewMark:
    """Mark every revision up to `number` (the head the reviewer saw) as reviewed. A mark
    never moves back: an older page submitted late does not undo a newer review."""
    if not Revision.objects.filter(file=file, number=number).exists():
        raise ValidationError(_("Revision %(number)s does not exist."), code="no_revision",
                              params={"number": number})
    mark, created = ReviewMark.objects.select_for_update().get_or_create(
        reviewer=reviewer, file=file, defaults={"number": number})
    before = None if created else mark.number
    if not created and number > mark.number:
        mark.number, mark.reviewed_at = number, timezone.now()
        mark.save(update_fields=["number", "reviewed_at"])
    if created or before != mark.number:
        audit_record(actor=Actor.person(reviewer), action="review.mark", project=file.project,
                     obj=file, details={"from": before or 0, "to": mark.number})
    return mark


@transaction.atomic
def flag_create(*, by, file: MemoryFile, number: int, comment: str) -> Flag:
    comment = comment.strip()
    if not comment:
        raise ValidationError(_("Say what is wrong: the comment is what the fixer reads."),
                              code="flag_comment")
    revision = Revision.objects.filter(file=file, number=number).first()
    if revision is None:
        raise ValidationError(_("Revision %(number)s does not exist."), code="no_revision",
                              params={"number": number})
    flag = Flag.objects.create(project=file.project, file=file, revision=revision,
                               comment=comment[:2000], created_by=by)
    audit_record(actor=Actor.person(by), action="review.flag", project=file.project, obj=file,
                 details={"revision": number, "flag": flag.pk, "comment": comment[:500]})
    return flag


@transaction.atomic
def flag_resolve(*, by, flag: Flag) -> Flag:
    if flag.resolved_at is None:
        flag.resolved_at, flag.resolved_by = timezone.now(), by
        flag.save(update_fields=["resolved_at", "resolved_by"])
        audit_record(actor=Actor.person(by), action="review.resolve", project=flag.project,
                     obj=flag.file, details={"flag": flag.pk, "revision": flag.revision.number})
    return flag


@transaction.atomic
def member_set(*, by, project: Project, user, role: str) -> Membership:
    """Grant a role or change it; audited as a permission change."""
    if role not in Membership.Role.values:
        raise ValidationError(_("Unknown role %(role)s."), code="role", params={"role": role})
    membership = Membership.objects.select_for_update().filter(project=project, user=user).first()
    before = membership.role if membership else None
    if before == role:
        return membership
    if before == Membership.Role.ADMIN:
        _keep_an_admin(project, leaving=user)
    if membership is None:
        membership = Membership.objects.create(project=project, user=user, role=role)
    else:
        membership.role = role
        membership.save(update_fields=["role"])
    audit_record(actor=Actor.person(by), action="member.grant" if before is None else "member.role",
                 project=project, obj=membership,
                 details={"user": user.get_username(), "from": before, "to": role})
    return membership


@transaction.atomic
def member_remove(*, by, membership: Membership) -> None:
    if membership.role == Membership.Role.ADMIN:
        _keep_an_admin(membership.project, leaving=membership.user)
    audit_record(actor=Actor.person(by), action="member.remove", project=membership.project,
                 obj=membership, details={"user": membership.user.get_username(),
                                          "role": membership.role})
    membership.delete()


def _keep_an_admin(project: Project, *, leaving) -> None:
    """A project without an admin can only be rescued by a superuser: refuse that."""
    others = (Membership.objects.select_for_update()
              .filter(project=project, role=Membership.Role.ADMIN).exclude(user=leaving))
    if not others.exists():
        raise ValidationError(_("This is the project's last admin. Make someone else admin first."),
                              code="last_admin")


# --- Export and erasure ---------------------------------------------------------------------------


def project_export(*, by, project: Project, out) -> dict:
    """Write a zip of the project's memory to the binary file `out`: every live file as its
    object stands in S3 now under memory/, and history.json listing every revision of every
    file (who, when, sha256, snapshot key). Returns the manifest's summary."""
    files = list(MemoryFile.objects.filter(project=project)
                 .select_related("head", "agent", "user").order_by("scope", "path"))
    revisions: dict = {}
    for revision in Revision.objects.filter(file__project=project).order_by("file_id", "number"):
        revisions.setdefault(revision.file_id, []).append(revision)
    entries = []
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for file in files:
            data = None
            if file.head is not None and not file.head.is_deletion:
                data = store.object_read(project, file.key)
            if data is not None:
                archive.writestr(f"memory/{file.display_path}", data)
            entries.append({
                "path": file.display_path, "key": file.key, "scope": file.scope,
                "exported": data is not None,
                "sha256": hashlib.sha256(data).hexdigest() if data is not None else None,
                "matches_head": (data is not None and file.head is not None
                                 and hashlib.sha256(data).hexdigest() == file.head.sha256),
                "revisions": [{
                    "number": r.number, "sha256": r.sha256, "size": r.size,
                    "author": r.author_label, "author_kind": r.author_kind,
                    "message": r.message, "created_at": r.created_at.isoformat(),
                    "snapshot_key": r.snapshot_key, "deletion": r.is_deletion,
                    "restored_from": r.restored_from,
                } for r in revisions.get(file.pk, [])],
            })
        summary = {
            "project": {"id": str(project.pk), "slug": project.slug, "name": project.name,
                        "prefix": project.prefix, "bucket": store.storage_for(project).bucket_name},
            "exported_at": timezone.now().isoformat(), "exported_by": by.get_username(),
            "files": len(entries), "objects": sum(e["exported"] for e in entries),
            "revisions": sum(len(e["revisions"]) for e in entries),
        }
        archive.writestr("history.json", json.dumps({**summary, "entries": entries},
                                                    ensure_ascii=False, indent=2))
    audit_record(actor=Actor.person(by), action="project.export", project=project, obj=project,
                 details={k: summary[k] for k in ("files", "objects", "revisions")})
    return summary


@dataclass
class Erasure:
    files: int
    revisions: int
    objects: int
    projects: list[str]


def profile_erase(*, by, user, reason: str, projects: list[Project]) -> Erasure:
    """Erase an employee's profile memory in the given projects: the USER.md object, every
    history snapshot (and every stored version of them), the revisions, proposals and flags
    that quote it. What stays is one audit tombstone per project: who, when, why, counts."""
    reason = reason.strip()
    if not reason:
        raise ValidationError(_("Say why the profile is erased; the tombstone keeps the reason."),
                              code="erase_reason")
    total = Erasure(files=0, revisions=0, objects=0, projects=[])
    for project in projects:
        with transaction.atomic():
            files = list(MemoryFile.objects.select_for_update()
                         .filter(project=project, scope=MemoryFile.Scope.USER, user=user))
            prefixes = [layout.user_prefix(project.prefix, user.pk)]
            prefixes += [layout.history_prefix(project.prefix, f.pk) for f in files]
            # S3 first: if it fails the records stay, and running the erasure again finishes it.
            objects = store.purge(project, prefixes)
            revisions = list(Revision.objects.filter(file__in=files))
            store.forget_cached(revisions)
            MemoryFile.objects.filter(pk__in=[f.pk for f in files]).update(head=None)
            Proposal.objects.filter(file__in=files).delete()
            Flag.objects.filter(file__in=files).delete()
            Revision.objects.filter(file__in=files).delete()
            MemoryFile.objects.filter(pk__in=[f.pk for f in files]).delete()
            audit_record(actor=Actor.person(by), action="profile.erase", project=project,
                         details={"user_id": user.pk, "user": user.get_username(),
                                  "reason": reason[:500], "files": len(files),
                                  "revisions": len(revisions), "objects": objects})
        total.files += len(files)
        total.revisions += len(revisions)
        total.objects += objects
        total.projects.append(project.slug)
    return total


# --- Projects and agents --------------------------------------------------------------------------


@transaction.atomic
def agent_create(*, by, project: Project, slug: str, name: str, description: str = "") -> Agent:
    if Agent.objects.filter(project=project, slug=slug).exists():
        raise ValidationError(_("This project already has an agent called %(slug)s."),
                              code="agent_slug", params={"slug": slug})
    agent = Agent.objects.create(project=project, slug=slug, name=name, description=description)
    audit_record(actor=Actor.person(by), action="agent.create", project=project, obj=agent,
                 details={"slug": slug, "name": name})
    return agent


@transaction.atomic
def project_update(*, by, project: Project, name: str, description: str) -> Project:
    changed = {field: value for field, value in (("name", name), ("description", description))
               if getattr(project, field) != value}
    if changed:
        for field, value in changed.items():
            setattr(project, field, value)
        project.save(update_fields=list(changed))
        audit_record(actor=Actor.person(by), action="project.update", project=project,
                     obj=project, details={"changed": sorted(changed)})
    return project


@transaction.atomic
def project_create(*, by, slug: str, name: str, description: str = "", bucket: str = "",
                   key_prefix: str = "") -> Project:
    """A new project; its creator becomes its first admin. Bucket and prefix are fixed from
    here on: the keys of every file are built from them."""
    if Project.objects.filter(slug=slug).exists():
        raise ValidationError(_("A project called %(slug)s exists."), code="project_slug",
                              params={"slug": slug})
    project = Project(slug=slug, name=name, description=description, bucket=bucket,
                      key_prefix=key_prefix)
    layout.project_prefix(project.id, key_prefix)  # refuses a malformed prefix
    project.save()
    audit_record(actor=Actor.person(by), action="project.create", project=project, obj=project,
                 details={"slug": slug, "bucket": bucket, "prefix": project.prefix})
    member_set(by=by, project=project, user=by, role=Membership.Role.ADMIN)
    return project
