"""Idempotency keys for the runner API (the convention of the IETF draft "The Idempotency-Key
HTTP Header Field" and of payment APIs): a runner sends a key with each post, tool or error
call and may repeat the call with the same key after a timeout, a 503 or a lost connection.

- first time: the request runs; its answer is stored with the key (in the database, so any
  worker or host recognises the retry);
- same key, same body, answered: the stored answer comes back and nothing is written again;
- same key, same body, still running: 409 with Retry-After; as soon as the request's worker
  is known to be gone, the retry takes over and goes on from the first write that had not
  committed;
- same key, another body: 422.
"The same body" is the same request by what it does: an endpoint may name a fingerprint of
its body that leaves out what changes nothing (a post's summary, a label), so a runtime that
ends one session twice with another summary under one key (Claude Code's Stop, then
SessionEnd) gets the first answer, not a 422.
Records are forgotten after MGC_IDEMPOTENCY_TTL_HOURS.

Two rules keep a write from happening twice (docs/ARCHITECTURE.md argues them):

- *Fencing.* Each attempt claims the record with an owner token of its own. Every write's
  transaction checks, under the record's row lock, that its attempt is still the owner
  before it commits (`note`, `finish`); an attempt that was taken over rolls its write back
  (`Superseded`). So whatever a liveness check gets wrong, a write commits at most once.
- *Liveness.* A retry may take over only once the first attempt is gone. When it ran on
  this machine (same boot, same pid namespace: always so with SQLite), its worker process is
  looked up: dead (or its pid now another process's, told by the start time) means gone, at
  once. From another host, the attempt's lease tells: one heartbeat thread per process
  renews the leases of the attempts it runs (every third of MGC_IDEMPOTENCY_LEASE_SECONDS),
  so a dead worker's key is free within that lease. An attempt running longer than
  RUN_LIMIT is no longer kept alive either way.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import os
import re
import threading
import time
import uuid
from functools import cache

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from projects.models import Agent, IdempotencyRecord

logger = logging.getLogger(__name__)

KEY_RE = re.compile(r"\A[\x21-\x7e]{1,200}\Z")  # visible ASCII, as header values go
# A request still running after this long is not kept alive any more: its lease runs out and
# a retry may take over (fencing stops the old one at its next write). Longer than any request
# takes with the S3 timeouts (39 s by default) and gunicorn's (60 s).
RUN_LIMIT = 300.0


class KeyReused(Exception):
    """The key was used before with another request body."""


class InProgress(Exception):
    def __init__(self, retry_after: int):
        super().__init__(retry_after)
        self.retry_after = retry_after


class Superseded(InProgress):
    """This attempt's key was taken over by a retry (its worker was thought gone): it stops
    before committing anything more; the retry answers."""

    def __init__(self):
        super().__init__(1)


def valid_key(key: str) -> bool:
    return bool(KEY_RE.match(key))


def lease() -> dt.timedelta:
    return dt.timedelta(seconds=settings.MGC_IDEMPOTENCY_LEASE_SECONDS)


# --- Who owns an attempt --------------------------------------------------------------------------


@cache
def _machine() -> str:
    """This kernel's boot and this pid namespace: where a pid means the same process. Empty
    where /proc does not tell (no pid check then, only the lease)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as boot:
            return f"{boot.read().strip()}/{os.readlink('/proc/self/ns/pid')}"
    except OSError:
        return ""


_UNKNOWN = "?"


def _started(pid: int) -> str | None:
    """The process's start time (clock ticks since boot); None when there is no such process,
    or only its exit status waits for its parent (a zombie: a killed worker that gunicorn has
    not reaped yet is dead all the same); "?" when /proc will not say (another user's process
    under hidepid)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return None
    except OSError:
        return _UNKNOWN
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return fields[19]


def _owner_token() -> str:
    pid = os.getpid()
    return f"{_machine()}|{pid}|{_started(pid) or _UNKNOWN}|{uuid.uuid4().hex[:16]}"


def _worker_alive(owner: str) -> bool | None:
    """Whether the owner's process still runs, when this machine can tell: it ran in this pid
    namespace on this boot, and its pid is that process still (the start time tells a reused
    pid). None when it cannot (another host, no /proc): the lease decides then."""
    machine, _, rest = owner.partition("|")
    pid, _, rest = rest.partition("|")
    started = rest.partition("|")[0]
    if not machine or machine != _machine() or not pid.isdigit() or started in ("", _UNKNOWN):
        return None
    now = _started(int(pid))
    return None if now == _UNKNOWN else now == started


# --- The record's life ----------------------------------------------------------------------------


def _digest(endpoint: str, body: bytes) -> str:
    return hashlib.sha256(endpoint.encode() + b"\n" + body).hexdigest()


def begin(
    *, agent: Agent, key: str, endpoint: str, body: bytes, also: tuple[bytes, ...] = ()
) -> tuple[IdempotencyRecord, bool]:
    """(record, replay): replay is True when the record holds the answer to send back.
    Otherwise this attempt owns the record (its `owner`) until it answers.
    `body` is what identifies the request (its bytes, or a fingerprint of what it does);
    `also`: other spellings of the same request a record may hold (the raw bytes, as records
    made before the endpoint had a fingerprint were keyed). A retry that differs only in what
    the fingerprint leaves out is the same request in every state: answered, it gets the first
    answer; running, it waits; its first attempt gone, it takes over (fenced as any retry)."""
    digest = _digest(endpoint, body)
    same = {digest, *(_digest(endpoint, other) for other in also)}
    now = timezone.now()
    ttl = dt.timedelta(hours=settings.MGC_IDEMPOTENCY_TTL_HOURS)
    owner = _owner_token()
    with transaction.atomic():
        record, created = IdempotencyRecord.objects.select_for_update().get_or_create(
            agent=agent,
            key=key,
            defaults={
                "endpoint": endpoint,
                "request_sha256": digest,
                "owner": owner,
                "claimed_at": now,
                "lease_until": now + lease(),
                "expires_at": now + ttl,
            },
        )
        if created:
            return record, False
        if record.expires_at <= now:  # forgotten: a new request under an old key
            record.endpoint, record.request_sha256, record.partial = endpoint, digest, {}
            record.state, record.response, record.status_code = (IdempotencyRecord.State.RUNNING, None, None)
            record.owner, record.claimed_at = owner, now
            record.lease_until, record.expires_at = now + lease(), now + ttl
            record.save()
            return record, False
        if record.request_sha256 not in same:
            raise KeyReused(key)
        if record.state == IdempotencyRecord.State.DONE:
            return record, True
        waiting = _still_running(record, now)
        if waiting is not None:
            raise InProgress(waiting)
        # Its worker died, gave up (released) or stopped renewing: this attempt takes over.
        record.owner, record.claimed_at, record.lease_until = owner, now, now + lease()
        record.save(update_fields=["owner", "claimed_at", "lease_until"])
        return record, False


def _still_running(record: IdempotencyRecord, now: dt.datetime) -> int | None:
    """Seconds to wait before asking again while the attempt that owns the record may still
    run; None once it cannot (then a retry may take over)."""
    if not record.owner:
        # Released (its lease ended with it), or started by a version of the console that named
        # no owner (during a rolling upgrade): its lease is all there is to go by.
        return None if record.lease_until <= now else max(1, int((record.lease_until - now).total_seconds()))
    if record.claimed_at is not None and (now - record.claimed_at).total_seconds() >= RUN_LIMIT:
        return None
    alive = _worker_alive(record.owner)
    if alive is not None:
        return 1 if alive else None
    if record.lease_until > now:
        return max(1, int((record.lease_until - now).total_seconds() + 0.999))
    return None


def _claimed(record: IdempotencyRecord) -> IdempotencyRecord:
    """The record, locked for this transaction, if this attempt still owns it; Superseded
    (which rolls the transaction's write back) when a retry took it over meanwhile."""
    current = IdempotencyRecord.objects.select_for_update().get(pk=record.pk)
    if current.owner != record.owner or current.state != IdempotencyRecord.State.RUNNING:
        raise Superseded()
    return current


def note(record: IdempotencyRecord | None, index: int, result: dict) -> None:
    """Keep one write's result; call inside the write's transaction (fenced: see above)."""
    if record is None:
        return
    current = _claimed(record)
    current.partial[str(index)] = result
    current.save(update_fields=["partial"])
    record.partial = current.partial


def noted(record: IdempotencyRecord | None, index: int) -> dict | None:
    return None if record is None else record.partial.get(str(index))


def finish(record: IdempotencyRecord | None, status: int, response: dict) -> None:
    """Store the answer; call inside the transaction of the request's last write (fenced)."""
    if record is None:
        return
    current = _claimed(record)
    current.state, current.status_code, current.response = (IdempotencyRecord.State.DONE, status, response)
    current.save(update_fields=["state", "status_code", "response"])
    record.state, record.status_code, record.response = current.state, status, response


def release(record: IdempotencyRecord | None) -> None:
    """The request failed before it could answer: let a retry take over at once."""
    if record is not None:
        IdempotencyRecord.objects.filter(
            pk=record.pk, owner=record.owner, state=IdempotencyRecord.State.RUNNING
        ).update(owner="", lease_until=timezone.now())


def forget_expired() -> int:
    return IdempotencyRecord.objects.filter(expires_at__lte=timezone.now()).delete()[0]


# --- Keeping a live attempt's lease ---------------------------------------------------------------


class _Heartbeat:
    """One thread per process renews the leases of the attempts this process is running. It
    runs only while there are some, and holds no database connection between beats."""

    def __init__(self):
        self.lock = threading.Lock()
        self.live: dict[int, tuple[str, float]] = {}  # record pk -> (owner, started)
        self.thread: threading.Thread | None = None
        self.pid = 0

    def add(self, record: IdempotencyRecord) -> None:
        with self.lock:
            self.live[record.pk] = (record.owner, time.monotonic())
            if self.thread is None or not self.thread.is_alive() or self.pid != os.getpid():
                self.pid = os.getpid()  # a forked child has no thread of its parent's
                self.thread = threading.Thread(target=self._run, name="idempotency-lease", daemon=True)
                self.thread.start()

    def remove(self, record: IdempotencyRecord) -> None:
        with self.lock:
            self.live.pop(record.pk, None)

    def _run(self) -> None:
        while True:
            time.sleep(settings.MGC_IDEMPOTENCY_LEASE_SECONDS / 3)
            with self.lock:
                now = time.monotonic()
                owners = [owner for owner, started in self.live.values() if now - started < RUN_LIMIT]
                if not self.live or self.pid != os.getpid():
                    self.thread = None
                    return
            if owners:
                self._renew(owners)

    @staticmethod
    def _renew(owners: list[str]) -> None:
        try:
            with transaction.atomic():
                # Rows a write of theirs holds locked are skipped (PostgreSQL): their owner is
                # busy committing, and the next beat comes before the lease runs out.
                locked = IdempotencyRecord.objects.select_for_update(skip_locked=True).filter(
                    owner__in=owners, state=IdempotencyRecord.State.RUNNING
                )
                IdempotencyRecord.objects.filter(pk__in=list(locked.values_list("pk", flat=True))).update(
                    lease_until=timezone.now() + lease()
                )
        except Exception:  # noqa: BLE001 - a missed beat only shortens the lease
            logger.warning("could not renew idempotency leases", exc_info=True)
        finally:
            connection.close()


_heartbeat = _Heartbeat()


def hold(record: IdempotencyRecord | None) -> None:
    """The attempt that owns `record` started its work: keep its lease while it runs."""
    if record is not None:
        _heartbeat.add(record)


def let_go(record: IdempotencyRecord | None, *, failed: bool) -> None:
    """The attempt ended; one that failed before answering lets a retry take over at once."""
    if record is None:
        return
    _heartbeat.remove(record)
    if failed:
        release(record)
