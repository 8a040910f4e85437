"""Erasure of an employee's profile memory: every object, version and record that quotes it,
leaving one audit tombstone per project."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from projects import outbox
from projects.audit import Actor, audit_record
from projects.memory import holds, layout, reading, receipts
from projects.memory.errors import Held
from projects.memory.objects import purge
from projects.models import (
    AgentSession,
    Flag,
    IdempotencyRecord,
    Membership,
    MemoryFile,
    Project,
    Proposal,
    Revision,
    SessionEvent,
)


@dataclass
class Erasure:
    files: int
    revisions: int
    objects: int
    projects: list[str]


def profile_erase(
    *,
    by,
    user,
    reason: str,
    projects: list[Project],
    actor: Actor | None = None,
    erased: Callable[[Project, Erasure], None] | None = None,
) -> Erasure:
    """Erase an employee's profile memory in the given projects: the USER.md object, every
    history snapshot (and every stored version of them), the revisions, proposals and flags
    that quote it. What stays is one audit tombstone per project: who, when, why, counts.
    `actor` names who acts when no person does (retention's leaver rule; `by` None).
    `erased(project, counts)` is called inside each project's transaction, after its
    tombstone: a background job notes the project done there, committed with it (or raises
    to undo it: another worker has the job now)."""
    actor = actor or Actor.person(by)
    reason = reason.strip()
    if not reason:
        raise ValidationError(
            _("Say why the profile is erased; the tombstone keeps the reason."), code="erase_reason"
        )
    standing = holds_over(user, projects)
    if standing:  # nothing is erased anywhere: GDPR Art. 17(3)(e), legal claims
        raise Held(holds.refusal(standing))
    total = Erasure(files=0, revisions=0, objects=0, projects=[])
    for project in projects:
        with transaction.atomic():
            files = list(
                MemoryFile.objects.select_for_update().filter(
                    project=project, scope=MemoryFile.Scope.USER, user=user
                )
            )
            standing = holds_over(user, [project])  # again: a hold placed since the start
            if standing:  # of a long erasure keeps what it covers in the projects left
                raise Held(holds.refusal(standing))
            prefixes = [layout.user_prefix(project.prefix, user.pk)]
            prefixes += [layout.history_prefix(project.prefix, f.pk) for f in files]
            # The exact prompts of the person's sessions quote the profile whole; a prompt
            # another person's session also returned is theirs too, and stays.
            sessions = AgentSession.objects.filter(agent__project=project, user=user)
            shas = set(sessions.exclude(prompt_sha256="").values_list("prompt_sha256", flat=True))
            shas -= set(
                AgentSession.objects.filter(agent__project=project, prompt_sha256__in=shas)
                .exclude(user=user)
                .values_list("prompt_sha256", flat=True)
            )
            prefixes += [layout.prompt_key(project.prefix, sha) for sha in sorted(shas)]
            # A prompt still on its way to S3 (memory.receipts) is taken first: a PUT under way
            # is waited for, and then purged with the rest.
            receipts.pending_drop(project=project, sha256s=shas)
            # S3 first: if it fails the records stay, and running the erasure again finishes it.
            objects = purge(project, prefixes)
            receipts.prompt_forget(project=project, sha256s=sorted(shas))
            sessions.filter(prompt_sha256__in=shas).update(
                prompt_stored=False,
                prompt_removed={
                    "how": "erased",
                    "at": timezone.now().isoformat(),
                    "by": actor.label,
                    "reason": reason[:500],
                },
            )
            revisions = list(Revision.objects.filter(file__in=files))
            quoted = _scrub_profile_texts(
                project, [s.pk for s in sessions.only("pk")], {r.sha256 for r in revisions}
            )
            reading.forget_cached(revisions)
            # Events about the profile not yet sent (and those kept for redelivery) lose its texts.
            events = outbox.scrub_files([f.pk for f in files])
            MemoryFile.objects.filter(pk__in=[f.pk for f in files]).update(head=None)
            Proposal.objects.filter(file__in=files).delete()
            Flag.objects.filter(file__in=files).delete()
            Revision.objects.filter(file__in=files).delete()
            MemoryFile.objects.filter(pk__in=[f.pk for f in files]).delete()
            audit_record(
                actor=actor,
                action="profile.erase",
                project=project,
                details={
                    "user_id": user.pk,
                    "user": user.get_username(),
                    "reason": reason[:500],
                    "files": len(files),
                    "revisions": len(revisions),
                    "objects": objects,
                    "prompts": len(shas),
                    "answers_scrubbed": quoted,
                    "events_scrubbed": events,
                },
            )
            if erased is not None:
                erased(project, Erasure(len(files), len(revisions), objects, [project.slug]))
        total.files += len(files)
        total.revisions += len(revisions)
        total.objects += objects
        total.projects.append(project.slug)
    return total


def holds_over(user, projects: list[Project]) -> list:
    """The legal holds that stand over the person's profile memory in these projects: theirs,
    the projects', and any on their USER.md files."""
    found = {h.pk: h for project in projects for h in holds.covering_person(user, project)}
    for file in MemoryFile.objects.filter(
        project__in=projects, scope=MemoryFile.Scope.USER, user=user
    ).select_related("project", "user"):
        found.update({h.pk: h for h in holds.covering_file(file)})
    return sorted(found.values(), key=lambda h: h.placed_at)


def person_projects(user, *, by) -> list[Project]:
    """The projects where `by` may erase the person's profile (admins there; superusers
    everywhere) and the person has, or had, a profile or a membership."""
    mine = Project.objects.filter(Q(memberships__user=user) | Q(files__user=user)).distinct()
    if not by.is_superuser:
        mine = mine.filter(
            pk__in=Membership.objects.filter(user=by, role=Membership.Role.ADMIN).values("project")
        )
    return list(mine.order_by("name"))


def _scrub_profile_texts(project: Project, session_ids: list, shas: set[str]) -> int:
    """A post hook's conflict on USER.md answers with the profile's text (`head_text`), kept in
    the session's event and in the request's idempotency record: drop it there. A record of a
    request that never finished names no session yet; its texts are recognised by their
    sha256 among the erased revisions'. Returns how many stored answers were changed."""
    changed = 0
    wanted = {str(pk) for pk in session_ids}
    for event in SessionEvent.objects.filter(session_id__in=session_ids, kind="post"):
        if _scrub(event.payload.get("results", [])):
            event.save(update_fields=["payload"])
            changed += 1
    records = IdempotencyRecord.objects.filter(agent__project=project, endpoint="hooks/post")
    for record in records.iterator():
        response, partial = record.response or {}, record.partial or {}
        if response.get("session") in wanted:
            found = _scrub(response.get("results", [])) | _scrub(list(partial.values()))
        elif not response:
            found = _scrub(list(partial.values()), shas)
        else:
            continue
        if found:
            record.save(update_fields=["response", "partial"])
            changed += 1
    return changed


def _scrub(results: list, shas: set[str] | None = None) -> bool:
    """Empty the USER.md `head_text`s of `results` (only those of `shas`, when given)."""
    found = False
    for result in results:
        if (
            isinstance(result, dict)
            and result.get("path") == layout.USER_FILE
            and result.get("head_text")
            and (shas is None or hashlib.sha256(result["head_text"].encode("utf-8")).hexdigest() in shas)
        ):
            result["head_text"] = ""
            found = True
    return found
