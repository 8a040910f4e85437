"""Erasure of an employee's profile memory: every object, version and record that quotes it,
leaving one audit tombstone per project."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from projects.audit import Actor, audit_record
from projects.memory import layout, store
from projects.models import Flag, MemoryFile, Project, Proposal, Revision


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
