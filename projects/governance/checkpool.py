"""A bound on the CPU that password checks take, in two lanes: sign-ins from trusted clients (a
device cookie for the account: people who signed in on that browser before) and all others.
In each lane at most MGC_LOGIN_CHECKS checks run at once in a process, and sign-ins beyond that
wait their turn in a queue of MGC_LOGIN_QUEUE (twice that in the trusted lane). A sign-in is
refused as busy only when its lane's queue is full or its wait would pass QUEUE_WAIT_SECONDS
(TRUSTED_WAIT_SECONDS in the trusted lane); nothing is hashed for it then. A flood fills the
other lane only: a person on their own browser never waits behind it.

A password check is a PBKDF2 run (1.5 million rounds: about half a second of one core), on one
of its lane's own threads; hashlib hashes without the GIL, so the worker's other threads go on
meanwhile. The other lane's threads run at a lowered priority (MGC_LOGIN_CHECK_NICE, Linux's
per-thread nice value): on an idle machine such a check has a whole core, but while the runner
API needs the CPU it goes first, however many checks a flood keeps running. The bound is per
process; docs/DEPLOY.md says how it adds up over gunicorn workers and hosts.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings

logger = logging.getLogger(__name__)

# The longest a sign-in waits for a check before it is answered busy: well inside gunicorn's
# worker timeout, and about as long as a person waits for a page before trying again.
QUEUE_WAIT_SECONDS = 10.0
TRUSTED_WAIT_SECONDS = 30.0  # in the trusted lane (gunicorn's worker timeout is 60 s)


class Busy(Exception):
    """Every check of the lane is taken and its queue is full (or the wait ran out)."""

    def __init__(self, retry_after: int):
        super().__init__(f"busy, retry after {retry_after} s")
        self.retry_after = retry_after


def _lower_priority(nice: int) -> None:
    """Make the calling thread (a check's) yield the CPU to the rest of the process."""
    if nice <= 0:
        return
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)  # Linux: this thread
    except (AttributeError, OSError) as error:  # not Linux, or not allowed: checks run as they are
        logger.info("Password checks keep their priority: %s", error)


class Lane:
    """`size` checks at once on threads of their own, a FIFO queue of `queue` beyond them."""

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
        self._waiting: deque = deque()
        self._seconds = 0.5  # a running mean of how long a check takes (for Retry-After)

    def check(self, fn, *args):
        """fn(*args) on one of the lane's threads, in its turn; Busy if none comes in time."""
        self._take()
        began = time.monotonic()
        try:
            return self._threads.submit(fn, *args).result()
        finally:
            with self._cond:
                self._running -= 1
                self._seconds = 0.8 * self._seconds + 0.2 * (time.monotonic() - began)
                self._cond.notify_all()

    def _take(self) -> None:
        with self._cond:
            if self._running < self.size and not self._waiting:
                self._running += 1
                return
            if len(self._waiting) >= self.queue:
                raise Busy(self.retry_after())
            ticket = object()
            self._waiting.append(ticket)
            deadline = time.monotonic() + self.wait
            try:
                while not (self._running < self.size and self._waiting[0] is ticket):
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise Busy(self.retry_after())
                    self._cond.wait(remaining)
                self._running += 1
            finally:
                self._waiting.remove(ticket)
                self._cond.notify_all()  # the next in line may be someone else now

    def full(self) -> bool:
        """Whether a sign-in would be refused as busy now (read without the lock: the first
        middleware's guess, which check() makes sure of)."""
        return self._running >= self.size and len(self._waiting) >= self.queue

    def retry_after(self) -> int:
        """Seconds until the checks running and waiting now would be done."""
        return max(1, math.ceil(self._seconds * (self._running + len(self._waiting)) / self.size))

    def state(self) -> tuple[int, int]:
        with self._cond:
            return self._running, len(self._waiting)

    def close(self) -> None:
        self._threads.shutdown(wait=False)


class CheckPool:
    """The two lanes of one process."""

    def __init__(self, size: int, queue: int, wait: float = QUEUE_WAIT_SECONDS, nice: int = 0):
        self.settings = (max(1, size), max(0, queue), nice)
        # Only people who signed in on that browser before reach the first lane, however hard a
        # flood tries: its queue may be longer, and a person there would rather wait than be
        # refused (on a machine short of CPU a check takes seconds).
        self.lanes = {
            True: Lane(size, 2 * queue, TRUSTED_WAIT_SECONDS),
            False: Lane(size, queue, wait, nice=nice),
        }

    def check(self, fn, *args, trusted: bool):
        return self.lanes[trusted].check(fn, *args)

    def full(self, *, trusted: bool) -> bool:
        return self.lanes[trusted].full()

    def retry_after(self, *, trusted: bool) -> int:
        return self.lanes[trusted].retry_after()

    def state(self) -> dict:
        (known, known_waiting), (others, others_waiting) = self.lanes[True].state(), self.lanes[False].state()
        return {
            "trusted": known,
            "trusted_waiting": known_waiting,
            "running": others,
            "waiting": others_waiting,
        }

    def close(self) -> None:
        for lane in self.lanes.values():
            lane.close()


_pool: CheckPool | None = None
_pool_lock = threading.Lock()


def pool() -> CheckPool:
    """This process's pool, sized by the settings (made anew if they changed, as in tests)."""
    global _pool
    size, queue, nice = settings.MGC_LOGIN_CHECKS, settings.MGC_LOGIN_QUEUE, settings.MGC_LOGIN_CHECK_NICE
    with _pool_lock:
        if _pool is None or _pool.settings != (max(1, size), max(0, queue), nice):
            if _pool is not None:
                _pool.close()
            _pool = CheckPool(size, queue, nice=nice)
        return _pool
