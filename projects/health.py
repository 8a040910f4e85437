"""Is this console process ready to serve: what /readyz answers and /metrics reports.

Each check is the cheapest question that shows its part works from here:

- database: `SELECT 1` on this thread's connection (a broken one is closed, so the next
  probe connects afresh);
- s3: a HEAD of the console's bucket, signed with its credentials (short timeouts, one
  attempt: `storage.bucket_answers`);
- cache: one set and get of a key of this process's own;
- change_feed, where MGC_S3_CHANGE_FEED is set: the filer takes connections, and this
  process's feed (once a hook started it) follows its stream;
- outbox: no event due for delivery has waited longer than MGC_READY_OUTBOX_MAX_AGE seconds
  (0 leaves the check out). Counted from when an event became due, not from when it was made,
  so a receiver that keeps failing (its events wait for their backoff) is not a console that
  is unready; a worker that is down or far behind is.

The answer is kept for MGC_READY_CACHE_SECONDS (one probe at a time runs the checks; the
others meanwhile get its answer), so a load balancer probing every second costs a few
queries a second at most. Failures are named, never explained with what could leak: an
error's kind (`unreachable`, `timeout`, an S3 error code, an exception's class), no message,
address or credential.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.core.cache import cache
from django.core.signals import got_request_exception
from django.db import InterfaceError, OperationalError, connection
from django.db.models import Count, Min
from django.dispatch import receiver
from django.utils import timezone

from projects.memory import feed, storage
from projects.models import OutboxEvent


@dataclass
class Check:
    ok: bool
    ms: float
    error: str = ""
    details: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        out = {"ok": self.ok, "ms": round(self.ms, 1)}
        if self.error:
            out["error"] = self.error
        out.update(self.details)
        return out


@dataclass
class Readiness:
    checks: dict[str, Check]
    at: float

    @property
    def ready(self) -> bool:
        return all(check.ok for check in self.checks.values())

    @property
    def failing(self) -> list[str]:
        return [name for name, check in self.checks.items() if not check.ok]

    def as_dict(self) -> dict:
        body = {
            "status": "ready" if self.ready else "not ready",
            "checks": {name: check.as_dict() for name, check in self.checks.items()},
        }
        if not self.ready:
            body["failing"] = self.failing
        return body


def _timed(check) -> Check:
    started = time.perf_counter()
    try:
        error, details = check()
    except Exception as exc:  # noqa: BLE001 - any failure is the answer, named by its kind
        error, details = type(exc).__name__, {}
    return Check(ok=not error, ms=(time.perf_counter() - started) * 1000, error=error, details=details)


def _database():
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception:
        connection.close()  # a dead connection would fail every probe of this thread
        database_failed()
        raise
    return "", {}


# --- Persistent connections after the database was away ----------------------------------------
# With MGC_DB_CONN_MAX_AGE each gunicorn thread keeps its connection between requests, and
# Django reuses it without asking whether it still works (CONN_HEALTH_CHECKS would ask with a
# query on every request, the hot path's included). After a database restart or failover each
# thread's first request would fail on its dead connection. So a thread asks once (Django's own
# check: one SELECT 1, and a new connection if that fails) when its connection sat idle for
# IDLE_CHECK_SECONDS, or when a failure was seen anywhere in the process since it last asked
# (a probe, another request's database error). A busy thread pays a clock read and an integer
# comparison.

IDLE_CHECK_SECONDS = 1.0
_generation = 0
_seen = threading.local()


def database_failed() -> None:
    global _generation
    _generation += 1


def connection_checked() -> None:
    """At a request's start: make sure this thread's persistent connection still works if it
    was idle, or if the database failed since this thread last checked."""
    now = time.monotonic()
    last = getattr(_seen, "used", now)
    _seen.used = now
    if getattr(_seen, "generation", 0) == _generation and now - last < IDLE_CHECK_SECONDS:
        return
    _seen.generation = _generation
    if connection.connection is not None and connection.in_atomic_block is False:
        connection.errors_occurred = True
        connection.close_if_unusable_or_obsolete()


@receiver(got_request_exception)
def _request_failed(sender, request=None, **kwargs):
    import sys

    error = sys.exc_info()[1]
    if isinstance(error, (OperationalError, InterfaceError)):
        database_failed()


def _s3():
    return storage.bucket_answers(), {}


_CACHE_KEY = f"mgc:ready:{os.getpid()}"


def _cache():
    value = str(time.monotonic())
    cache.set(_CACHE_KEY, value, timeout=60)
    return ("" if cache.get(_CACHE_KEY) == value else "mismatch"), {}


def _change_feed():
    if not feed.filer_answers():
        return "unreachable", {}
    following = feed.following()
    if following is False:
        return "not_following", {}
    return "", {"following": following}


def outbox_backlog() -> dict:
    """Events waiting for delivery to live subscriptions: how many, the oldest's age, and
    how long the longest-due one has waited for a worker (seconds)."""
    now = timezone.now()
    found = OutboxEvent.objects.filter(
        state=OutboxEvent.State.PENDING,
        subscription__removed_at__isnull=True,
        subscription__disabled_at__isnull=True,
    ).aggregate(
        pending=Count("pk"),
        oldest=Min("created_at"),
        due=Min("next_attempt_at"),
    )
    oldest, due = found["oldest"], found["due"]
    return {
        "pending": found["pending"],
        "oldest_age": (now - oldest).total_seconds() if oldest else 0.0,
        "due_age": max(0.0, (now - due).total_seconds()) if due else 0.0,
    }


def _outbox():
    backlog = outbox_backlog()
    limit = settings.MGC_READY_OUTBOX_MAX_AGE
    details = {"pending": backlog["pending"], "waiting_seconds": round(backlog["due_age"], 1)}
    return ("backlog" if backlog["due_age"] > limit else ""), details


def _checks() -> dict:
    checks = {"database": _database, "s3": _s3, "cache": _cache}
    if settings.MGC_S3_CHANGE_FEED:
        checks["change_feed"] = _change_feed
    if settings.MGC_READY_OUTBOX_MAX_AGE > 0:
        checks["outbox"] = _outbox
    return checks


_lock = threading.Lock()
_last: Readiness | None = None


def readiness(*, fresh: bool = False) -> Readiness:
    """The checks' answer, at most MGC_READY_CACHE_SECONDS old (`fresh`: run them now)."""
    global _last
    keep = settings.MGC_READY_CACHE_SECONDS
    found = _last
    if not fresh and found is not None and time.monotonic() - found.at < keep:
        return found
    with _lock:
        found = _last
        if not fresh and found is not None and time.monotonic() - found.at < keep:
            return found  # another probe ran them while this one waited
        checks = {}
        for name, check in _checks().items():
            if name == "outbox" and not checks["database"].ok:
                # Without the database the outbox cannot be asked: say so, do not wait again.
                checks[name] = Check(ok=False, ms=0.0, error="database")
                continue
            checks[name] = _timed(check)
        _last = Readiness(checks, time.monotonic())
        return _last


def forget() -> None:
    """The next probe runs the checks (tests)."""
    global _last
    _last = None
