"""A bound on the CPU that password checks take: at most MGC_LOGIN_CHECKS run at once in a
process, and sign-ins beyond that wait their turn in a short queue, in one of two lanes. A
sign-in from a trusted client (a device cookie for its account) goes ahead of every other that
waits. A sign-in is refused as busy only when its lane is full or its wait would pass
QUEUE_WAIT_SECONDS; nothing is hashed for it then.

A password check is a PBKDF2 run (1.5 million rounds: about half a second of one core). It runs
in one of the pool's own threads, whose scheduling priority is lowered (MGC_LOGIN_CHECK_NICE,
Linux's per-thread nice value): on an idle machine a check has a whole core, but while the
runner API needs the CPU it goes first, however many checks a flood keeps running. hashlib
hashes without the GIL, so the worker's other threads go on meanwhile. The bound is per
process; docs/DEPLOY.md says how it adds up over gunicorn workers and hosts.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings

# The longest a sign-in waits for a check before it is answered busy: well inside gunicorn's
# worker timeout, and about as long as a person waits for a page before trying again.
QUEUE_WAIT_SECONDS = 10.0


class Busy(Exception):
    """Every check is taken and the lane is full (or the wait ran out)."""

    def __init__(self, retry_after: int):
        super().__init__(f"busy, retry after {retry_after} s")
        self.retry_after = retry_after


logger = logging.getLogger(__name__)


def _lower_priority(nice: int) -> None:
    """Make the calling thread (a check's) yield the CPU to the rest of the process."""
    if nice <= 0:
        return
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)  # Linux: this thread
    except (AttributeError, OSError) as error:  # not Linux, or not allowed: checks run as they are
        logger.info("Password checks keep their priority: %s", error)


class CheckPool:
    def __init__(self, size: int, queue: int, wait: float = QUEUE_WAIT_SECONDS, nice: int = 0):
        self.size, self.queue, self.wait, self.nice = max(1, size), max(0, queue), wait, nice
        self._threads = ThreadPoolExecutor(
            max_workers=self.size,
            thread_name_prefix="mgc-password-check",
            initializer=_lower_priority,
            initargs=(nice,),
        )
        self._cond = threading.Condition()
        self._running = 0
        self._lanes: dict[bool, deque] = {True: deque(), False: deque()}
        self._seconds = 0.5  # a running mean of how long a check takes (for Retry-After)

    @contextlib.contextmanager
    def slot(self, *, trusted: bool):
        """Hold one of the checks while the block runs; Busy if none comes in time."""
        self._take(trusted)
        began = time.monotonic()
        try:
            yield
        finally:
            took = time.monotonic() - began
            with self._cond:
                self._running -= 1
                self._seconds = 0.8 * self._seconds + 0.2 * took
                self._cond.notify_all()

    def check(self, fn, *args, trusted: bool):
        """fn(*args) (a password check) in a turn of the pool, on one of its threads."""
        with self.slot(trusted=trusted):
            return self._threads.submit(fn, *args).result()

    def close(self) -> None:
        self._threads.shutdown(wait=False)

    def _next(self):
        for lane in (self._lanes[True], self._lanes[False]):
            if lane:
                return lane[0]
        return None

    def _take(self, trusted: bool) -> None:
        with self._cond:
            if self._running < self.size and self._next() is None:
                self._running += 1
                return
            lane = self._lanes[trusted]
            if len(lane) >= self.queue:
                raise Busy(self.retry_after())
            ticket = object()
            lane.append(ticket)
            deadline = time.monotonic() + self.wait
            try:
                while not (self._running < self.size and self._next() is ticket):
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise Busy(self.retry_after())
                    self._cond.wait(remaining)
                self._running += 1
            finally:
                lane.remove(ticket)
                self._cond.notify_all()  # the next in line may be someone else now

    def full(self, *, trusted: bool) -> bool:
        """Whether a sign-in in this lane would be refused as busy now (read without the lock:
        the first middleware's guess, which slot() makes sure of)."""
        return self._running >= self.size and len(self._lanes[trusted]) >= self.queue

    def retry_after(self) -> int:
        """Seconds until the checks running and waiting now would be done."""
        waiting = self._running + len(self._lanes[True]) + len(self._lanes[False])
        return max(1, math.ceil(self._seconds * waiting / self.size))

    def state(self) -> dict:
        with self._cond:
            return {
                "running": self._running,
                "trusted_waiting": len(self._lanes[True]),
                "waiting": len(self._lanes[False]),
            }


_pool: CheckPool | None = None
_pool_lock = threading.Lock()


def pool() -> CheckPool:
    """This process's pool, sized by the settings (made anew if they changed, as in tests)."""
    global _pool
    size, queue, nice = settings.MGC_LOGIN_CHECKS, settings.MGC_LOGIN_QUEUE, settings.MGC_LOGIN_CHECK_NICE
    with _pool_lock:
        if _pool is None or (_pool.size, _pool.queue, _pool.nice) != (max(1, size), max(0, queue), nice):
            if _pool is not None:
                _pool.close()
            _pool = CheckPool(size, queue, nice=nice)
        return _pool
