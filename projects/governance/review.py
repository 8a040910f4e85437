"""Review: how far each reviewer has read each file, flags on revisions, and the queue of
files changed since a reviewer last marked them. Writes are audited in their transaction."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.translation import gettext as _

from projects.audit import Actor, audit_record
from projects.memory import reading
from projects.memory.diffing import diff_texts
from projects.models import Flag, FlagReply, MemoryFile, Project, ReviewMark, Revision

NOTE_MAX = 2000  # characters of a flag's comment, a reply or a resolution note


@transaction.atomic
def review_mark(*, reviewer, file: MemoryFile, number: int) -> ReviewMark:
    """Mark every revision up to `number` (the head the reviewer saw) as reviewed. A mark
    never moves back: an older page submitted late does not undo a newer review."""
    if not Revision.objects.filter(file=file, number=number).exists():
        raise ValidationError(
            _("Revision %(number)s does not exist."), code="no_revision", params={"number": number}
        )
    mark, created = ReviewMark.objects.select_for_update().get_or_create(
        reviewer=reviewer, file=file, defaults={"number": number}
    )
    before = None if created else mark.number
    if not created and number > mark.number:
        mark.number, mark.reviewed_at = number, timezone.now()
        mark.save(update_fields=["number", "reviewed_at"])
    if created or before != mark.number:
        audit_record(
            actor=Actor.person(reviewer),
            action="review.mark",
            project=file.project,
            obj=file,
            details={"from": before or 0, "to": mark.number},
        )
    return mark


def _note(text: str, missing: str, code: str) -> str:
    """A person's note (a flag's comment, a reply, a resolution): required, storable."""
    text = (text or "").strip()
    if not text:
        raise ValidationError(missing, code=code)
    if "\x00" in text:  # PostgreSQL cannot store it (text, and the audit event's JSON)
        raise ValidationError(_("Null characters are not allowed."), code="null_characters")
    return text[:NOTE_MAX]


@transaction.atomic
def flag_create(*, by, file: MemoryFile, number: int, comment: str) -> Flag:
    comment = _note(comment, _("Say what is wrong: the comment is what the fixer reads."), "flag_comment")
    revision = Revision.objects.filter(file=file, number=number).first()
    if revision is None:
        raise ValidationError(
            _("Revision %(number)s does not exist."), code="no_revision", params={"number": number}
        )
    flag = Flag.objects.create(
        project=file.project, file=file, revision=revision, comment=comment[:2000], created_by=by
    )
    audit_record(
        actor=Actor.person(by),
        action="review.flag",
        project=file.project,
        obj=file,
        details={"revision": number, "flag": flag.pk, "comment": comment[:500]},
    )
    return flag


@transaction.atomic
def flag_resolve(*, by, flag: Flag, note: str) -> Flag:
    """Close a flag, saying how (required: whoever reads the flag later learns what was done).
    The row is locked, so two reviewers at once resolve it once."""
    note = _note(note, _("Say how it was resolved: the note stays with the flag."), "resolve_note")
    locked = Flag.objects.select_for_update().get(pk=flag.pk)
    if locked.resolved_at is None:
        locked.resolved_at, locked.resolved_by = timezone.now(), by
        locked.resolution_note = note
        locked.save(update_fields=["resolved_at", "resolved_by", "resolution_note"])
        audit_record(
            actor=Actor.person(by),
            action="review.resolve",
            project=flag.project,
            obj=flag.file,
            details={"flag": flag.pk, "revision": flag.revision.number, "note": note[:500]},
        )
    flag.resolved_at, flag.resolved_by = locked.resolved_at, locked.resolved_by
    flag.resolution_note = locked.resolution_note
    return flag


@transaction.atomic
def flag_reply(*, by, flag: Flag, text: str) -> FlagReply:
    """An answer in the flag's thread: the flagged revision's author (or a reviewer)."""
    text = _note(text, _("Write your answer first."), "reply_text")
    reply = FlagReply.objects.create(flag=flag, author=by, text=text)
    audit_record(
        actor=Actor.person(by),
        action="review.reply",
        project=flag.project,
        obj=flag.file,
        details={"flag": flag.pk, "revision": flag.revision.number, "reply": text[:500]},
    )
    return reply


def flags_on_work_of(user, projects: list[Project], limit: int = 10) -> list[Flag]:
    """Open flags on revisions this person wrote: theirs to answer (dashboard)."""
    return list(
        Flag.objects.filter(project__in=projects, resolved_at__isnull=True, revision__author_user=user)
        .select_related("project", "file", "file__agent", "file__user", "revision", "created_by")
        .order_by("-created_at")[:limit]
    )


def blamed_revision(revisions: list[Revision], findings: list[dict]) -> int | None:
    """The revision a flag blames by default: where the scanner first saw a finding the head
    still has (else any finding), else the latest revision."""
    for wanted in (lambda f: f.get("present"), lambda f: True):
        numbers = [f["revision"] for f in findings if wanted(f) and f.get("revision")]
        if numbers:
            return min(numbers)
    return revisions[-1].number if revisions else None


def review_next(*, reviewer, project: Project, after: MemoryFile | None) -> MemoryFile | None:
    """The file to review after `after`: the one that followed it in this reviewer's queue,
    else (wrapping round) the first one still queued, else None when everything is reviewed.
    `after` is the file as review_queue annotated it before it was marked (by_agent, head),
    or None when it was not queued (a late second click)."""
    queue = review_queue(reviewer=reviewer, project=project)
    if after is not None:
        created = after.head.created_at
        same_group = Q(head__created_at__lt=created) | Q(head__created_at=created, pk__gt=after.pk)
        later = (
            (Q(by_agent=True) & same_group) | Q(by_agent=False)
            if after.by_agent
            else Q(by_agent=False) & same_group
        )
        following = queue.filter(later).exclude(pk=after.pk).first()
        if following is not None:
            return following
    return queue.first()


@dataclass
class ReviewItem:
    """One file with changes the reviewer has not seen: from `since` (0: never) to the head."""

    file: MemoryFile
    since: int
    revisions: list[Revision]
    by_agent: bool
    findings: list[dict]
    flags: list[Flag]
    diff: object = None
    blame: int | None = None  # the revision the flag form picks (blamed_revision)


def _unreviewed(reviewer) -> QuerySet[MemoryFile]:
    """Files whose head is past the revision this reviewer last marked reviewed (0: never)."""
    seen = ReviewMark.objects.filter(reviewer=reviewer, file=OuterRef("pk")).values("number")[:1]
    return (
        MemoryFile.objects.filter(head__isnull=False)
        .annotate(seen=Coalesce(Subquery(seen), 0))
        .filter(head__number__gt=F("seen"))
    )


def review_counts(*, reviewer, projects: list[Project]) -> dict:
    """How many files wait in this reviewer's queue, per project, in one query."""
    return dict(
        _unreviewed(reviewer)
        .filter(project__in=projects)
        .order_by()
        .values("project")
        .annotate(n=Count("pk"))
        .values_list("project", "n")
    )


def review_queue(*, reviewer, project: Project) -> QuerySet[MemoryFile]:
    """Files changed since this reviewer last marked them reviewed; files with agents' writes
    among the unreviewed ones first, then the most recently changed."""
    files = _unreviewed(reviewer).filter(project=project)
    agent_writes = Revision.objects.filter(
        file=OuterRef("pk"), number__gt=OuterRef("seen"), author_kind=Revision.AuthorKind.AGENT
    )
    return (
        files.annotate(by_agent=Exists(agent_writes))
        .select_related("head", "agent", "user", "project")
        .order_by("-by_agent", "-head__created_at", "pk")
    )


def review_items(files: list[MemoryFile]) -> list[ReviewItem]:
    """Each queued file with its unreviewed revisions, their scanner findings, open flags and
    the diff from the last reviewed revision to the head (texts fetched in one batch)."""

    if not files:
        return []
    pending = Q()
    for file in files:
        pending |= Q(file=file, number__gte=max(file.seen, 1))
    revisions = list(
        Revision.objects.filter(pending)
        .select_related("renamed_from", "renamed_to")
        .order_by("file_id", "number")
    )  # the badges name a rename's other path
    by_file: dict = {}
    for revision in revisions:
        by_file.setdefault(revision.file_id, []).append(revision)
    flags: dict = {}
    for flag in Flag.objects.filter(file__in=files, resolved_at__isnull=True).select_related(
        "revision", "created_by"
    ):
        flags.setdefault(flag.file_id, []).append(flag)
    texts = reading.revision_texts(files[0].project, revisions)
    items = []
    for file in files:
        history = by_file.get(file.pk, [])
        base = next((r for r in history if r.number == file.seen), None)
        new = [r for r in history if r.number > file.seen]
        findings = findings_over(new)
        items.append(
            ReviewItem(
                file=file,
                since=file.seen,
                revisions=new,
                by_agent=file.by_agent,
                findings=findings,
                flags=flags.get(file.pk, []),
                diff=diff_texts(texts[base.pk] if base else "", texts[file.head.pk]),
                blame=blamed_revision(new, findings),
            )
        )
    return items


def findings_over(revisions: list[Revision]) -> list[dict]:
    """The scanner's findings across consecutive revisions (oldest first, the last one the
    head), each distinct finding once: where it first appeared (`revision`, `line`) and whether
    the head still has it (`present`) or since which revision it is gone (`gone_since`).
    A finding is known by its kind and masked excerpt: lines move as text is edited."""
    if not revisions:
        return []
    head = revisions[-1]
    out: dict[tuple, dict] = {}
    for index, revision in enumerate(revisions):
        for finding in revision.findings:
            key = (finding.get("kind"), finding.get("excerpt"))
            entry = out.setdefault(key, dict(finding, revision=revision.number))
            following = revisions[index + 1] if index + 1 < len(revisions) else None
            entry["present"] = revision is head
            entry["gone_since"] = following.number if following is not None else None
            entry["latest"] = head.number
    for entry in out.values():
        if entry["present"]:
            entry["gone_since"] = None
    # Planted instructions (memory/quarantine.py) are kept on the revision that brought them
    # only, so whether the head still has one is not known here: blame and scan_memory say.
    for revision in revisions:
        for finding in (revision.poisoning or {}).get("findings", []):
            key = (finding.get("family"), finding.get("excerpt"))
            out.setdefault(
                key,
                {
                    "kind": finding.get("family"),
                    "line": finding.get("line"),
                    "excerpt": finding.get("excerpt"),
                    "revision": revision.number,
                    "poisoning": True,
                    "present": None,
                    "gone_since": None,
                    "latest": head.number,
                },
            )
    return list(out.values())
