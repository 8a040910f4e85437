"""S3 legal holds on stored versions: a hold's sweeps, and holding what is written past the
console as soon as the console learns of it.

A hold is committed first (from then on erasure, deletion and retention refuse what it covers,
and every version the console writes under it is held from birth: store, receipts, adoption);
then a sweep puts an Object Lock legal hold on every version its units cover (memory.holds).
A sweep goes one listing page at a time and keeps its place on the hold's row
(`sweep_cursor`), so it can stop anywhere (a request that failed, a killed process, a page's
time budget) and anyone can take it up again: the same placement run again, `reconcile`, the
events worker's task. A lease on the row keeps two sweeps of one hold from running at once.

Passes, by the hold's state:
- placing: every version; then the hold is placed, and `swept_through` is the store's clock
  when the pass began (every version written before it is held);
- placed: the versions written since `swept_through` (a runner's or anyone's direct writes
  that nothing else reported): the periodic sweep;
- releasing: the hold comes off every version no other standing hold covers.

Direct writes are held sooner where the console hears of them: the change feed reports each new
version (`FeedHolder`, in the events worker), and a catch-up or reconcile that adopts a change
under a hold holds that key's new versions, not only its head (`hold_key_versions`): a version
written and overwritten again before anyone looked is one of them.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext as _

from projects import metrics
from projects.memory import holds
from projects.memory.errors import StorageUnavailable
from projects.memory.feed import feed_for
from projects.memory.storage import LegalHoldUnsupported, MemoryStorage, storage_for
from projects.models import LegalHold, Project

log = logging.getLogger(__name__)

PAGE = 1000  # versions a listing page brings (S3's most)
ROUNDS = 3  # tries, within one sweep, of a version whose change failed
MAX_FAILED = 5000  # versions kept as "not changed yet"; past it the pass runs again whole
LEASE = dt.timedelta(seconds=60)  # longer than one page takes; a killed sweep is taken over after it
CLOCK_STEP = dt.timedelta(seconds=2)  # LastModified and the Date header are in whole seconds

_POOL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="mgc-hold")

State = LegalHold.State
_PASSES = {State.PLACING: "place", State.PLACED: "refresh", State.RELEASING: "release"}


@dataclass
class Progress:
    """Where a hold's sweep stands after one call."""

    state: str
    done: bool  # the pass ended: placed, refreshed or released
    changed: int = 0  # versions this call held (or released)
    total: int = 0  # versions held (or released) by the hold's sweeps so far
    failed: int = 0  # versions the store did not change yet
    error: str = ""  # why it stopped short
    busy: bool = False  # another sweep has the hold now
    enforced: bool = True  # False: the bucket has no Object Lock


def sweep(hold: LegalHold, *, budget: int | None = None) -> Progress:
    """Take the hold's sweep on from where it stands, until about `budget` versions were listed
    (the page that passes it is finished; None: to the end). Safe to call anywhere, any number
    of times: a hold another sweep has is left to it (`busy`), a placed hold gets a refresh
    pass, a released one nothing."""
    owner = uuid.uuid4().hex
    now = timezone.now()
    claimed = (
        LegalHold.objects.filter(pk=hold.pk)
        .filter(Q(sweep_lease_until__isnull=True) | Q(sweep_lease_until__lt=now))
        .update(sweep_owner=owner, sweep_lease_until=now + LEASE)
    )
    current = _fresh(hold.pk)
    if not claimed:
        return _progress(current, done=False, busy=True)
    kind = _PASSES.get(current.state)
    try:
        while True:
            progress = _run(current, owner, budget)
            if progress is not _RESTART:
                _counted(kind, progress)
                return progress
            current = _fresh(hold.pk)  # released while it was being placed: the other pass
            kind = _PASSES.get(current.state)
    except Exception:
        if kind is not None:
            metrics.sweeps.labels(f"hold_{kind}", "failed").inc()
        raise
    finally:
        LegalHold.objects.filter(pk=hold.pk, sweep_owner=owner).update(sweep_owner="", sweep_lease_until=None)


_RESTART = Progress(state="", done=False)


def _counted(kind: str | None, progress: Progress) -> None:
    """One sweep call in mgc_sweeps_total (kind hold_place, hold_refresh or hold_release; outcome
    done, unenforced: no Object Lock, stopped: its budget used, the rest to come, failed: the
    storage stopped it short) and the versions it changed in mgc_swept_total. A released hold's
    call, or one left to another sweep, did nothing and is not counted."""
    if kind is None or progress.busy:
        return
    if progress.error:
        outcome = "failed"
    elif not progress.done:
        outcome = "stopped"
    else:
        outcome = "done" if progress.enforced else "unenforced"
    metrics.sweeps.labels(f"hold_{kind}", outcome).inc()
    if progress.changed:
        what = "versions_released" if kind == "release" else "versions_held"
        metrics.swept.labels(what).inc(progress.changed)


def _fresh(pk) -> LegalHold:
    return LegalHold.objects.select_related("project", "file__project", "user").get(pk=pk)


def _progress(hold: LegalHold, *, done: bool, changed: int = 0, error: str = "", busy: bool = False):
    return Progress(
        state=hold.state,
        done=done,
        changed=changed,
        total=hold.swept_versions,
        failed=len((hold.sweep_cursor or {}).get("failed", [])),
        error=error or hold.sweep_error,
        busy=busy,
        enforced=hold.storage_enforced or hold.state == State.PLACING,
    )


def _new_cursor(hold: LegalHold, kind: str) -> dict:
    since = None
    if kind == "refresh" and hold.storage_enforced and hold.swept_through is not None:
        since = (hold.swept_through - CLOCK_STEP).isoformat()
    return {"pass": kind, "since": since, "started": "", "after": "", "unit": "", "key": "", "version": ""}


def _run(hold: LegalHold, owner: str, budget: int | None) -> Progress:
    kind = _PASSES.get(hold.state)
    if kind is None:
        return _progress(hold, done=True)
    cursor = hold.sweep_cursor if (hold.sweep_cursor or {}).get("pass") == kind else _new_cursor(hold, kind)
    cursor.setdefault("failed", [])
    on = kind != "release"
    since = dt.datetime.fromisoformat(cursor["since"]) if cursor.get("since") else None
    kept = _kept_by_others(hold) if not on else None
    changed, listed, locked = 0, 0, set()

    def save(done: int, **fields) -> bool:
        """Keep the place and the count; False if the hold changed state meanwhile (released
        while it was being placed) or another sweep took it over."""
        fields["sweep_lease_until"] = timezone.now() + LEASE
        return bool(
            LegalHold.objects.filter(pk=hold.pk, sweep_owner=owner, state=hold.state).update(
                sweep_cursor=cursor, swept_versions=F("swept_versions") + done, **fields
            )
        )

    try:
        if not cursor.get("listed"):
            for unit in holds.hold_units(hold):
                if cursor["after"] and unit.name <= cursor["after"]:
                    continue
                storage = storage_for(unit.project)
                if on and storage.bucket_name not in locked:
                    if not storage.object_lock_enabled():
                        raise LegalHoldUnsupported(storage.bucket_name)
                    locked.add(storage.bucket_name)
                resume = unit.name == cursor["unit"]
                key, version = (cursor["key"], cursor["version"]) if resume else ("", "")
                while True:
                    page = storage.versions_page(
                        unit.prefix, key_marker=key, version_marker=version, max_keys=PAGE
                    )
                    cursor["started"] = cursor["started"] or page.date.isoformat()
                    wanted = [
                        v
                        for v in page.versions
                        if unit.covers(v["Key"]) and (since is None or v["LastModified"] >= since)
                    ]
                    if on:
                        done, failed = _hold_page(storage, wanted)
                    else:
                        done, failed = _apply(
                            storage,
                            [v for v in wanted if _versioned(v) and not kept(unit.project, v["Key"])],
                            on=False,
                        )
                    changed += done
                    _note_failed(cursor, unit.project, failed)
                    key, version = page.next_key, page.next_version
                    if page.truncated:
                        cursor.update(unit=unit.name, key=key, version=version)
                    else:
                        cursor.update(after=unit.name, unit="", key="", version="")
                    if not save(done):
                        return (
                            _RESTART
                            if _owned(hold, owner)
                            else _progress(_fresh(hold.pk), done=False, busy=True)
                        )
                    listed += len(page.versions)
                    if not page.truncated:
                        break
                    if budget is not None and listed >= budget:
                        return _progress(_fresh(hold.pk), done=False, changed=changed)
            cursor["listed"] = True
        for _round in range(ROUNDS):
            if not cursor["failed"]:
                break
            done = _retry(cursor, on)
            changed += done
            if not save(done):
                return _RESTART if _owned(hold, owner) else _progress(_fresh(hold.pk), done=False, busy=True)
    except LegalHoldUnsupported:
        return _unsupported(hold, owner, changed)
    except StorageUnavailable as exc:
        message = _("The storage did not answer (%(problem)s); the sweep goes on from where it stopped.") % {
            "problem": exc.message
        }
        LegalHold.objects.filter(pk=hold.pk, sweep_owner=owner).update(sweep_error=message[:500])
        return _progress(_fresh(hold.pk), done=False, changed=changed, error=message)
    if cursor.get("redo") or cursor["failed"]:
        message = _(
            "The storage refused or dropped %(count)s of the requests; they are tried again "
            "by the next sweep (placing it again, reconcile, or the periodic sweep)."
        ) % {"count": len(cursor["failed"]) or MAX_FAILED}
        if cursor.get("redo"):  # too many to remember: the whole pass again
            cursor = _new_cursor(hold, kind)
        save(0, sweep_error=message[:500])
        return _progress(_fresh(hold.pk), done=False, changed=changed, error=message)
    return _complete(hold, owner, kind, cursor, changed)


def _owned(hold: LegalHold, owner: str) -> bool:
    return LegalHold.objects.filter(pk=hold.pk, sweep_owner=owner).exists()


def _complete(hold: LegalHold, owner: str, kind: str, cursor: dict, changed: int) -> Progress:
    now = timezone.now()
    started = dt.datetime.fromisoformat(cursor["started"]) if cursor.get("started") else now
    fields = {"sweep_cursor": {}, "sweep_error": "", "swept_at": now}
    if kind == "place":
        fields.update(state=State.PLACED, storage_enforced=True, swept_through=started)
    elif kind == "refresh":
        fields.update(storage_enforced=True, swept_through=started)
    else:
        fields.update(state=State.RELEASED)
    if not LegalHold.objects.filter(pk=hold.pk, sweep_owner=owner, state=hold.state).update(**fields):
        return _RESTART if _owned(hold, owner) else _progress(_fresh(hold.pk), done=False, busy=True)
    return _progress(_fresh(hold.pk), done=True, changed=changed)


def _unsupported(hold: LegalHold, owner: str, changed: int) -> Progress:
    """No Object Lock on a bucket the hold reaches: the console alone keeps it (it refuses
    deletions all the same). A refresh pass finds out when Object Lock is turned on."""
    fields = {"sweep_cursor": {}, "sweep_error": "", "swept_at": timezone.now(), "storage_enforced": False}
    if hold.state == State.PLACING:
        fields["state"] = State.PLACED
    elif hold.state == State.RELEASING:
        fields["state"] = State.RELEASED
    if not LegalHold.objects.filter(pk=hold.pk, sweep_owner=owner, state=hold.state).update(**fields):
        return _RESTART if _owned(hold, owner) else _progress(_fresh(hold.pk), done=False, busy=True)
    progress = _progress(_fresh(hold.pk), done=True, changed=changed)
    progress.enforced = False
    return progress


def _versioned(version: dict) -> bool:
    return version.get("VersionId") not in (None, "", "null")


def _hold_page(storage: MemoryStorage, versions: list[dict]) -> tuple[int, list]:
    """Hold a page's versions. An object written before the bucket kept versions has only the
    version "null", which SeaweedFS lets be deleted even when held. While it is the key's
    current version it is written again as a held version (the same bytes and metadata, so the
    same ETag) and the unprotected copy deleted. An older "null" version cannot be moved
    without changing what the key holds, and SeaweedFS neither holds it nor takes the request
    well (a PutObjectLegalHold on it leaves a delete marker that comes back when deleted): it
    is left as it is, kept by the console's refusal (its text is also in the file's held
    snapshots)."""
    rewritten = 0
    for version in [v for v in versions if not _versioned(v) and v.get("IsLatest")]:
        found = storage.read(version["Key"])
        if found is not None and found.version_id in ("", "null"):
            storage.write(version["Key"], found.body, metadata=found.metadata, legal_hold=True)
            storage.remove(version["Key"], "null")
            rewritten += 1
    done, failed = _apply(storage, [v for v in versions if _versioned(v)], on=True)
    return done + rewritten, failed


def _apply(storage: MemoryStorage, versions: list[dict], *, on: bool) -> tuple[int, list]:
    """Set the hold on (or off) each version, eight at a time. Returns how many changed and the
    (key, version id) of those the store did not answer for."""

    def one(version: dict):
        try:
            storage.set_legal_hold(version["Key"], version["VersionId"], on)
        except StorageUnavailable:
            return (version["Key"], version["VersionId"])
        return None

    failed = [item for item in _POOL.map(one, versions) if item is not None]
    return len(versions) - len(failed), failed


def _note_failed(cursor: dict, project: Project, failed: list) -> None:
    cursor["failed"] += [[str(project.pk), key, version] for key, version in failed]
    if len(cursor["failed"]) > MAX_FAILED:
        cursor["failed"], cursor["redo"] = [], True


def _retry(cursor: dict, on: bool) -> int:
    """Try once more each version the store did not change; those that fail again stay."""
    projects = {str(p.pk): p for p in Project.objects.filter(pk__in={item[0] for item in cursor["failed"]})}
    left, done = [], 0
    for project_id in sorted({item[0] for item in cursor["failed"]}):
        items = [item for item in cursor["failed"] if item[0] == project_id]
        project = projects.get(project_id)
        if project is None:
            continue  # the project is gone, and its versions with it
        changed, failed = _apply(
            storage_for(project), [{"Key": key, "VersionId": version} for _p, key, version in items], on=on
        )
        done += changed
        left += [[project_id, key, version] for key, version in failed]
    cursor["failed"] = left
    return done


def _kept_by_others(hold: LegalHold):
    """keep(project, key): another standing hold covers the key, so releasing this one leaves
    its S3 hold on."""
    units = [unit for other in holds.standing().exclude(pk=hold.pk) for unit in holds.hold_units(other)]
    return lambda project, key: any(u.project.pk == project.pk and u.covers(key) for u in units)


# --- What is written past the console -------------------------------------------------------------


SKEW = dt.timedelta(minutes=1)  # between the console's clock and the store's, at most


def since_of(standing: list[LegalHold]) -> dt.datetime | None:
    """From when the store's versions of a key under these holds may be unheld: the oldest
    `swept_through` among them (the store's clock). A hold still being placed has its sweep
    for what was there before it (and the refresh pass after it, for what the sweep passed
    by): from when it was placed, less a minute for the clocks."""
    marks = [h.swept_through or (h.placed_at - SKEW) for h in standing]
    return min(marks) - CLOCK_STEP if marks else None


def needs_holding(standing: list[LegalHold]) -> list[LegalHold]:
    """The holds whose storage holds anything: placed ones the bucket enforces, and those
    still being placed (a bucket without Object Lock holds nothing: no request is made)."""
    return [h for h in standing if h.storage_enforced or h.state == State.PLACING]


def hold_key_versions(storage: MemoryStorage, key: str, since: dt.datetime | None) -> int:
    """Hold every version of one key written since `since` (None: every version): what a
    catch-up or reconcile found changed under a hold, including versions written and
    overwritten again before anyone looked. Versions the store does not answer for are left
    to the periodic sweep. Returns how many it held."""
    held, marker, version_marker = 0, "", ""
    try:
        while True:
            page = storage.versions_page(key, key_marker=marker, version_marker=version_marker, max_keys=PAGE)
            wanted = [
                v
                for v in page.versions
                if v["Key"] == key and _versioned(v) and (since is None or v["LastModified"] >= since)
            ]
            done, failed = _apply(storage, wanted, on=True)
            held += done
            if failed:
                log.warning(
                    "legal hold: %s of %s's versions not held yet (the periodic sweep retries)", failed, key
                )
            if not page.truncated:
                return held
            marker, version_marker = page.next_key, page.next_version
    except LegalHoldUnsupported:
        return held
    except StorageUnavailable:
        log.warning("legal hold: could not list %s's versions (the periodic sweep holds them)", key)
        return held


class FeedHolder:
    """Holds each version the change feed reports written under a standing hold, as it is
    reported (a few milliseconds after the write): the events worker runs one. `refresh()`
    reads which keys the standing holds cover (the database, from the worker's thread); the
    feed's thread only matches keys against that and hands the S3 call to a small pool."""

    def __init__(self):
        self._units: dict[str, list[holds.Unit]] = {}
        self._followed: set[str] = set()
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="mgc-feed-hold")
        self.held = 0  # versions held so far, for the tests and the bench

    def refresh(self) -> None:
        if settings.MGC_S3_CHANGE_FEED != "seaweedfs":
            return  # no feed: the catch-up, reconcile and the periodic sweep hold direct writes
        by_bucket: dict[str, list[holds.Unit]] = {}
        for hold in holds.standing().select_related("project", "file__project", "user"):
            for unit in holds.hold_units(hold):
                by_bucket.setdefault(storage_for(unit.project).bucket_name, []).append(unit)
        self._units = by_bucket
        for bucket, units in by_bucket.items():
            if bucket not in self._followed:
                found = feed_for(bucket)
                if found is not None:
                    found.on_version(self.written)
                    self._followed.add(bucket)
                    self._warm(storage_for(units[0].project))

    def _warm(self, storage: MemoryStorage) -> None:
        """Make each pool thread's S3 client now (a boto3 client per thread, a fraction of a
        second each), not when the first write under a hold is reported."""
        for _thread in range(self._pool._max_workers):
            self._pool.submit(lambda: storage.client)

    def written(self, bucket: str, key: str, version_id: str) -> None:
        for unit in self._units.get(bucket, ()):
            if unit.covers(key):
                self._pool.submit(self._hold, unit.project, key, version_id)
                return

    def _hold(self, project: Project, key: str, version_id: str) -> None:
        try:
            storage_for(project).set_legal_hold(key, version_id, True)
            self.held += 1
        except (StorageUnavailable, LegalHoldUnsupported):
            log.warning(
                "legal hold: %s (%s) not held from the feed; the periodic sweep holds it", key, version_id
            )
