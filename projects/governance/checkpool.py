"""A bound on the CPU that password checks take: at most MGC_LOGIN_CHECKS run at once in a
process, and sign-ins beyond that wait their turn in a short queue, in one of two lanes. A
sign-in from a trusted client (a device cookie for its account) goes ahead of every other that
waits. A sign-in is refused as busy only when its lane is full or its wait would pass
QUEUE_WAIT_SECONDS; nothing is hashed for it then.

A password check is a PBKDF2 run (1.5 million rounds: about half a second of one core), which
hashlib runs without the GIL: the threads of a worker go on serving the runner API beside it.
The bound is per process; docs/DEPLOY.md says how it adds up over gunicorn workers and hosts.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections import deque

from django.conf import settings

# The longest a sign-in waits for a check before it is answered busy: well inside gunicorn's
# worker timeout, and about as long as a person waits for a page before trying again.
QUEUE_WAIT_SECONDS = 10.0


class Busy(Exception):
    """Every check is taken and the lane is full (or the wait ran out)."""

    def __init__(self, retry_after: int):
        super().__init__(f"busy, retry after {retry_after} s")
        self.retry_after = retry_after


class CheckPool:
    def __init__(self, size: int, queue: int, wait: float = QUEUE_WAIT_SECONDS):
        self.size, self.queue, self.wait = max(1, size), max(0, queue), wait
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
    size, queue = settings.MGC_LOGIN_CHECKS, settings.MGC_LOGIN_QUEUE
    with _pool_lock:
        if _pool is None or (_pool.size, _pool.queue) != (max(1, size), max(0, queue)):
            _pool = CheckPool(size, queue)
        return _pool
