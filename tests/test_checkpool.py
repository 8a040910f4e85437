"""The pool of password checks (projects.governance.checkpool): a bound on checks at once, a
short queue in two lanes with the trusted one first, busy only when the queue is full or the
wait runs out."""

import os
import sys
import threading
import time

import pytest

from projects.governance.checkpool import Busy, CheckPool

pytestmark = pytest.mark.db_independent


def _hold(
    pool: CheckPool, trusted: bool, release: threading.Event, order: list, name: str
) -> threading.Thread:
    """A check that takes the pool's turn (waiting if need be) and holds it until `release`."""

    def run():
        try:
            with pool.slot(trusted=trusted):
                order.append(name)
                release.wait(5)
        except Busy:
            order.append(f"{name}: busy")

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _until(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_a_trusted_sign_in_goes_ahead_of_every_other_that_waits():
    pool = CheckPool(size=1, queue=4)
    order: list[str] = []
    gates = {name: threading.Event() for name in ("first", "new1", "new2", "known")}
    threads = [_hold(pool, False, gates["first"], order, "first")]
    _until(lambda: order == ["first"])
    threads += [_hold(pool, False, gates["new1"], order, "new1")]
    _until(lambda: pool.state()["waiting"] == 1)
    threads += [_hold(pool, False, gates["new2"], order, "new2")]
    _until(lambda: pool.state()["waiting"] == 2)
    threads += [_hold(pool, True, gates["known"], order, "known")]
    _until(lambda: pool.state()["trusted_waiting"] == 1)
    for n, name in enumerate(("first", "known", "new1", "new2")):
        gates[name].set()  # the check in progress ends: the next in line takes its turn
        _until(lambda n=n: len(order) == min(4, n + 2))
    for thread in threads:
        thread.join(5)
    assert order == ["first", "known", "new1", "new2"]
    assert pool.state() == {"running": 0, "trusted_waiting": 0, "waiting": 0}


def test_at_most_size_checks_run_at_once_and_the_queue_holds_the_rest():
    pool = CheckPool(size=2, queue=3)
    running = peak = 0
    lock = threading.Lock()
    refused = []

    def check():
        nonlocal running, peak
        try:
            with pool.slot(trusted=False):
                with lock:
                    running += 1
                    peak = max(peak, running)
                time.sleep(0.02)
                with lock:
                    running -= 1
        except Busy:
            refused.append(1)

    threads = [threading.Thread(target=check) for _ in range(5)]  # 2 running + 3 waiting
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert peak == 2 and refused == []


def test_busy_when_the_lane_is_full_with_a_retry_after_and_the_other_lane_still_waits():
    pool = CheckPool(size=1, queue=1)
    order: list[str] = []
    release = threading.Event()
    threads = [_hold(pool, False, release, order, "running")]
    _until(lambda: order == ["running"])
    threads.append(_hold(pool, False, release, order, "waiting"))
    _until(lambda: pool.state()["waiting"] == 1)
    with pytest.raises(Busy) as busy, pool.slot(trusted=False):
        pass
    assert busy.value.retry_after >= 1
    threads.append(_hold(pool, True, release, order, "known"))  # its own lane has room
    _until(lambda: pool.state()["trusted_waiting"] == 1)
    release.set()
    for thread in threads:
        thread.join(5)
    assert order == ["running", "known", "waiting"]


def test_busy_when_the_wait_runs_out():
    pool = CheckPool(size=1, queue=2, wait=0.05)
    order: list[str] = []
    release = threading.Event()
    holder = _hold(pool, False, release, order, "running")
    _until(lambda: order == ["running"])
    began = time.monotonic()
    with pytest.raises(Busy), pool.slot(trusted=True):
        pass
    assert time.monotonic() - began >= 0.05
    assert pool.state() == {"running": 1, "trusted_waiting": 0, "waiting": 0}
    release.set()
    holder.join(5)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's own nice value is Linux's")
def test_checks_run_on_threads_of_lowered_priority_and_the_caller_keeps_its_own():
    pool = CheckPool(size=1, queue=0, nice=10)
    try:
        mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        theirs = pool.check(lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id()), trusted=False)
        assert theirs == 10 or (mine > 10 and theirs == mine)  # (a niced run may not go back up)
        assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == mine
    finally:
        pool.close()
