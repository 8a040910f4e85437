"""Legal holds: placed and released by admins and compliance officers, audited, and enforced by
the storage itself (an S3 Object Lock legal hold on every version a hold covers).

While a hold stands, erasure, deletion and retention refuse what it covers, naming the hold
(memory.holds); what is written meanwhile is held as it is written (store, receipts).
Placing it puts the S3 hold on every version already there; releasing takes it off again,
except where another standing hold still covers the version.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from projects import metrics
from projects.audit import Actor, audit_record
from projects.memory import globs, holds, layout, lifecycle
from projects.memory.storage import LegalHoldUnsupported
from projects.models import LegalHold, MemoryFile, Project

MAX_REASON = 500


@dataclass
class Sweep:
    """What placing or releasing did in storage."""

    versions: int
    enforced: bool  # False: the bucket has no Object Lock, the store holds nothing
    note: str = ""


def hold_place(
    *,
    by,
    project: Project,
    reason: str,
    case_reference: str = "",
    user=None,
    file: MemoryFile | None = None,
    glob: str = "",
) -> tuple[LegalHold, Sweep]:
    """Place a hold on the project, or on a person (`user`: their profile in every project and
    what agents were told about them), a file, or workspace files (`glob`)."""
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError(_("Say why it is held (the reason is kept with the hold)."), code="hold_reason")
    chosen = [x for x in (user, file, glob) if x]
    if len(chosen) > 1:
        raise ValidationError(
            _("A hold covers the project, or one person, one file or one glob."), code="hold_target"
        )
    if file is not None and file.project_id != project.pk:
        raise ValidationError(_("The file belongs to another project."), code="hold_file")
    if glob:
        glob = glob.strip()
        if not glob.startswith(globs.WORKSPACE_PREFIX) or not glob.endswith(".md"):
            raise ValidationError(_("A glob names workspace files: workspace/<glob>.md."), code="hold_glob")
        try:
            layout.validate_workspace_path(globs.glob_sample(glob[len(globs.WORKSPACE_PREFIX) :]))
        except ValidationError as exc:
            raise ValidationError(
                _("%(glob)s: %(why)s") % {"glob": glob, "why": " ".join(exc.messages)}, code="hold_glob"
            ) from None
    if user is not None:
        kind, target = LegalHold.Kind.PERSON, f"person {user.get_username()}"
    elif file is not None:
        kind, target = LegalHold.Kind.FILE, f"file {file.display_path}"
    elif glob:
        kind, target = LegalHold.Kind.GLOB, f"files {glob}"
    else:
        kind, target = LegalHold.Kind.PROJECT, f"project {project.slug}"
    with transaction.atomic():
        hold = LegalHold.objects.create(
            project=project,
            kind=kind,
            user=user,
            file=file,
            glob=glob,
            target=target,
            reason=reason[:MAX_REASON],
            case_reference=case_reference.strip()[:200],
            placed_by=by,
        )
        audit_record(
            actor=Actor.person(by),
            action="legal_hold.place",
            project=project,
            obj=hold,
            details={"covers": target, "reason": hold.reason, "case": hold.case_reference},
        )
    # The row is committed first: every write from now on is held as it is written, so the
    # sweep below cannot miss a version made while it runs.
    sweep = _sweep(hold, on=True)
    if sweep.enforced:
        LegalHold.objects.filter(pk=hold.pk).update(storage_enforced=True)
        hold.storage_enforced = True
    return hold, sweep


def hold_release(*, by, hold: LegalHold, note: str = "") -> Sweep:
    """Release a hold: the console stops refusing, and the S3 holds it put on come off, except
    on versions another standing hold covers. Safe to repeat."""
    with transaction.atomic():
        locked = LegalHold.objects.select_for_update().get(pk=hold.pk)
        if locked.released_at is None:
            locked.released_at, locked.released_by = timezone.now(), by
            locked.save(update_fields=["released_at", "released_by"])
            audit_record(
                actor=Actor.person(by),
                action="legal_hold.release",
                project=locked.project,
                obj=locked,
                details={"covers": locked.target, "note": (note or "")[:MAX_REASON]},
            )
    hold.refresh_from_db()
    return _sweep(hold, on=False)


def holds_sweep_again(*, project: Project | None = None) -> list[tuple[LegalHold, Sweep]]:
    """Put the S3 legal holds of every standing hold (of `project`, or everywhere) on again:
    after a bucket was restored from a copy that did not carry them, or Object Lock was turned
    on later. Safe to repeat; what a hold covers is held however often it runs."""
    standing = holds.standing().select_related("project", "user", "file")
    if project is not None:
        standing = standing.filter(project=project)
    done = []
    for hold in standing:
        sweep = _sweep(hold, on=True)
        if sweep.enforced and not hold.storage_enforced:
            LegalHold.objects.filter(pk=hold.pk).update(storage_enforced=True)
        done.append((hold, sweep))
    return done


def _sweep(hold: LegalHold, *, on: bool) -> Sweep:
    kind = "hold_place" if on else "hold_release"
    try:
        sweep = _sweep_storage(hold, on=on)
    except Exception:
        metrics.sweeps.labels(kind, "failed").inc()
        raise
    metrics.sweeps.labels(kind, "done" if sweep.enforced else "unenforced").inc()
    metrics.swept.labels("versions_held" if on else "versions_released").inc(sweep.versions)
    return sweep


def _sweep_storage(hold: LegalHold, *, on: bool) -> Sweep:
    total, enforced, note = 0, True, ""
    others = [h for h in holds.standing().exclude(pk=hold.pk)] if not on else []
    covered = [(p, key) for other in others for p, keys in holds.hold_prefixes(other) for key in keys]
    for project, prefixes in holds.hold_prefixes(hold):
        kept = [key for p, key in covered if p.pk == project.pk]
        try:
            total += lifecycle.hold_sweep(
                project, prefixes, on=on, keep=lambda key, kept=kept: any(key.startswith(k) for k in kept)
            )
        except LegalHoldUnsupported as exc:
            enforced = False
            note = _(
                "The bucket %(bucket)s has no S3 Object Lock, so the storage itself "
                "holds nothing there; the console still refuses to delete what the hold "
                "covers. Turn Object Lock on (manage.py ensure_bucket; docs/DEPLOY.md)."
            ) % {"bucket": exc.args[0]}
    return Sweep(versions=total, enforced=enforced, note=note)


def holds_of(project: Project, *, standing_only: bool = False):
    """The project's holds, and the person holds placed elsewhere that reach into it."""
    found = LegalHold.objects.filter(project=project).select_related(
        "user", "file", "placed_by", "released_by", "project"
    )
    return found.filter(released_at__isnull=True) if standing_only else found
