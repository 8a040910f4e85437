"""Legal holds: placed and released by admins and compliance officers, audited, and enforced by
the storage itself (an S3 Object Lock legal hold on every version a hold covers).

While a hold stands, erasure, deletion and retention refuse what it covers, naming the hold
(memory.holds); what is written meanwhile is held as it is written (store, receipts).

Placing a hold is finished or undone as a unit, whatever fails on the way. The hold is
committed first (the console refuses from then on), in the state *being placed*; the storage
sweep (memory.holding) then puts the S3 hold on every version already there and, when it has,
the hold is *placed*. A sweep that stops short (the storage failing, a killed process) keeps
its place: the same placement made again (same scope and case: no second hold), `reconcile`,
or the events worker's periodic sweep finishes it. A large one goes on in the worker as a
background task, with its progress on the holds page. Releasing goes the same way back:
*being released* until the S3 holds are off every version no other standing hold covers.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from projects.audit import Actor, audit_record
from projects.memory import globs, holding, holds, layout
from projects.memory.storage import storage_for
from projects.models import LegalHold, Lock, MemoryFile, Project

MAX_REASON = 500
INLINE_VERSIONS = 1000  # a page placing a hold sweeps this many versions itself, the worker the rest
TASK_VERSIONS = 5000  # versions per background task: webhooks sent by the same worker wait little

State = LegalHold.State


@dataclass
class Sweep:
    """Where the storage's side of placing (or releasing) a hold stands."""

    versions: int  # versions held (or released) in storage so far
    enforced: bool  # False: the bucket has no Object Lock, the store holds nothing
    note: str = ""
    finished: bool = True  # False: still being placed (or released)
    failed: int = 0  # versions the store did not change yet
    error: str = ""  # why the sweep stopped short
    background: bool = False  # the rest goes on in the events worker
    busy: bool = False  # another sweep of it is running now (the worker's)
    existing: bool = False  # the same placement was recorded already: this took it on
    releasing: bool = False
    changed: int = 0  # versions this call held (or released)


def sweep_summary(sweep: Sweep) -> str:
    """The storage's side of a placement or release, in a sentence or two, as the holds page
    and `manage.py legal_hold` say it."""
    if sweep.releasing:
        if sweep.finished:
            return _("%(count)s stored versions released in storage.") % {"count": sweep.versions}
        text = _("The storage's holds are being lifted: %(count)s stored versions released so far.") % {
            "count": sweep.versions
        }
    elif sweep.finished:
        return _("%(count)s stored versions are held by the storage itself.") % {"count": sweep.versions}
    else:
        text = _("It is being placed: %(count)s stored versions held by the storage so far.") % {
            "count": sweep.versions
        }
        if sweep.failed:
            text += " " + _("%(count)s could not be held yet.") % {"count": sweep.failed}
        text += " " + _("Erasure, deletion and retention already refuse what it covers.")
    if sweep.error:
        text += " " + sweep.error
    if sweep.busy:
        text += " " + _("A sweep running now goes on with it.")
    elif sweep.background:
        text += " " + _("The rest goes on in the background; the Legal holds page shows how far it is.")
    else:
        text += " " + _(
            "Doing the same again finishes it (it is the same hold, not a second one), and so do "
            "reconcile and the periodic sweep."
        )
    return text


def hold_place(
    *,
    by,
    project: Project,
    reason: str,
    case_reference: str = "",
    user=None,
    file: MemoryFile | None = None,
    glob: str = "",
    budget: int | None = None,
) -> tuple[LegalHold, Sweep]:
    """Place a hold on the project, or on a person (`user`: their profile in every project and
    what agents were told about them), a file, or workspace files (`glob`).

    A standing hold with the same scope and case is this same placement, made again (a re-run
    after a failure, a second click): no second hold, and its sweep is taken on from where it
    stopped. `budget`: sweep about that many versions here, and leave the rest to the events
    worker (None: all of it, here)."""
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
    case_reference = case_reference.strip()[:200]
    with transaction.atomic():
        Lock.hold(f"holds:{project.pk}")  # two placements of one scope at once make one hold
        hold = (
            LegalHold.objects.filter(
                project=project,
                kind=kind,
                user=user,
                file=file,
                glob=glob,
                case_reference=case_reference,
                released_at__isnull=True,
            )
            .order_by("placed_at")
            .first()
        )
        existing = hold is not None
        if hold is None:
            hold = LegalHold.objects.create(
                project=project,
                kind=kind,
                user=user,
                file=file,
                glob=glob,
                target=target,
                reason=reason[:MAX_REASON],
                case_reference=case_reference,
                placed_by=by,
                state=State.PLACING,
            )
            audit_record(
                actor=Actor.person(by),
                action="legal_hold.place",
                project=project,
                obj=hold,
                details={"covers": target, "reason": hold.reason, "case": hold.case_reference},
            )
    # The row is committed first: the console refuses what it covers, and every write from now
    # on is held as it is written, so the sweep below cannot miss a version made while it runs.
    sweep = _sweep(hold, budget=budget)
    sweep.existing = existing
    hold.refresh_from_db()
    return hold, sweep


def hold_release(*, by, hold: LegalHold, note: str = "", budget: int | None = None) -> Sweep:
    """Release a hold: the console stops refusing, and the S3 holds it put on come off, except
    on versions another standing hold covers. Safe to repeat: a release whose sweep stopped
    short is finished by the next call (or reconcile, or the periodic sweep)."""
    with transaction.atomic():
        locked = LegalHold.objects.select_for_update().get(pk=hold.pk)
        if locked.released_at is None:
            locked.released_at, locked.released_by = timezone.now(), by
            locked.state, locked.sweep_cursor, locked.swept_versions = State.RELEASING, {}, 0
            locked.sweep_error = ""
            locked.save(
                update_fields=[
                    "released_at",
                    "released_by",
                    "state",
                    "sweep_cursor",
                    "swept_versions",
                    "sweep_error",
                ]
            )
            audit_record(
                actor=Actor.person(by),
                action="legal_hold.release",
                project=locked.project,
                obj=locked,
                details={"covers": locked.target, "note": (note or "")[:MAX_REASON]},
            )
    sweep = _sweep(hold, budget=budget)
    hold.refresh_from_db()
    return sweep


def holds_sweep_again(*, project: Project | None = None) -> list[tuple[LegalHold, Sweep]]:
    """Put the S3 legal holds of every standing hold (of `project` and the person holds that
    reach into it, or everywhere) on again: after the bucket was restored from a copy that did
    not carry them (docs/DEPLOY.md, the restore drill), or Object Lock was turned on later.

    A placed hold's periodic sweep looks only at versions written since its last one, so each
    hold is set back to *being placed* (its sweep starts over from the first version; the
    console refuses what it covers all along) and swept here, as a placement is
    (memory.holding). One that stops short is finished by running this again, `reconcile`, or
    the periodic sweep. Safe to repeat."""
    found = holds.standing()
    if project is not None:
        found = found.filter(Q(project=project) | Q(kind=LegalHold.Kind.PERSON))
    chosen = list(found.order_by("placed_at").values_list("pk", flat=True))
    # A sweep running now sees the state change at its next page and starts the place pass.
    LegalHold.objects.filter(pk__in=chosen, released_at__isnull=True).update(
        state=State.PLACING, sweep_cursor={}, swept_versions=0, sweep_error="", swept_through=None
    )
    done = []
    for hold in LegalHold.objects.filter(pk__in=chosen).order_by("placed_at"):
        sweep = _sweep(hold, budget=None)
        hold.refresh_from_db()
        done.append((hold, sweep))
    return done


def hold_finish(hold: LegalHold, *, budget: int | None = None) -> Sweep:
    """Take the hold's sweep on from where it stopped (a placed hold: look for versions
    written past the console since its last sweep)."""
    return _sweep(hold, budget=budget)


def holds_settle(project: Project | None = None) -> list[tuple[LegalHold, Sweep]]:
    """Finish every sweep that stopped short, and hold what was written past the console under
    every standing hold since its last sweep (for `reconcile`): the holds of the project (and
    person holds, which reach into every project), or all of them."""
    found = LegalHold.objects.exclude(state=State.RELEASED).order_by("placed_at")
    if project is not None:
        found = found.filter(Q(project=project) | Q(kind=LegalHold.Kind.PERSON))
    return [(hold, _sweep(hold, budget=None)) for hold in found]


def holds_due(now: dt.datetime | None = None) -> int:
    """Put on the events worker's queue a sweep of every hold that needs one and has none
    running or queued lately: those being placed or released, and placed ones not swept for
    MGC_HOLD_SWEEP_SECONDS (what was written past the console meanwhile). Run by the worker
    every MGC_HOLD_SWEEP_SECONDS; returns how many it queued."""
    now = now or timezone.now()
    every = dt.timedelta(seconds=settings.MGC_HOLD_SWEEP_SECONDS)
    due = (
        LegalHold.objects.exclude(state=State.RELEASED)
        .filter(Q(sweep_lease_until__isnull=True) | Q(sweep_lease_until__lt=now))
        .filter(Q(sweep_queued_at__isnull=True) | Q(sweep_queued_at__lt=now - every))
        .filter(~Q(state=State.PLACED) | Q(swept_at__isnull=True) | Q(swept_at__lt=now - every))
    )
    count = 0
    for pk in due.values_list("pk", flat=True):
        count += _enqueue(pk, now)
    return count


def hold_continue(hold_id: int) -> str:
    """The events worker's task: a few listing pages of the hold's sweep, then the next task
    for the rest (so webhooks queued meanwhile are not held up behind a large sweep)."""
    hold = LegalHold.objects.filter(pk=hold_id).first()
    if hold is None:
        return "gone"
    progress = holding.sweep(hold, budget=TASK_VERSIONS)
    if not progress.done and not progress.busy and not progress.error:
        _enqueue(hold_id, timezone.now(), force=True)
        return f"{progress.state}: {progress.total} so far"
    return progress.error or ("busy" if progress.busy else progress.state)


def _enqueue(pk: int, now: dt.datetime, *, force: bool = False) -> int:
    from projects.governance.tasks import sweep_hold  # the task module imports this one

    queued = LegalHold.objects.filter(pk=pk)
    if not force:
        every = dt.timedelta(seconds=settings.MGC_HOLD_SWEEP_SECONDS)
        queued = queued.filter(Q(sweep_queued_at__isnull=True) | Q(sweep_queued_at__lt=now - every))
    if not queued.update(sweep_queued_at=now):
        return 0
    sweep_hold.enqueue(pk)
    return 1


def _sweep(hold: LegalHold, *, budget: int | None) -> Sweep:
    progress = holding.sweep(hold, budget=budget)
    background = False
    if not progress.done and budget is not None and not progress.error:
        background = progress.busy or bool(_enqueue(hold.pk, timezone.now(), force=True))
    note = ""
    if not progress.enforced:
        buckets = sorted({storage_for(unit.project).bucket_name for unit in holds.hold_units(hold)})
        note = _(
            "The bucket %(bucket)s has no S3 Object Lock, so the storage itself "
            "holds nothing there; the console still refuses to delete what the hold "
            "covers. Turn Object Lock on (manage.py ensure_bucket; docs/DEPLOY.md)."
        ) % {"bucket": ", ".join(buckets) or storage_for(hold.project).bucket_name}
    return Sweep(
        versions=progress.total,
        enforced=progress.enforced,
        note=note,
        finished=progress.done,
        failed=progress.failed,
        error=progress.error,
        background=background,
        busy=progress.busy,
        releasing=progress.state in (State.RELEASING, State.RELEASED),
        changed=progress.changed,
    )


def holds_of(project: Project, *, standing_only: bool = False):
    """The project's holds, and the person holds placed elsewhere that reach into it."""
    found = LegalHold.objects.filter(project=project).select_related(
        "user", "file", "placed_by", "released_by", "project"
    )
    return found.filter(released_at__isnull=True) if standing_only else found
