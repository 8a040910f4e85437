"""The pool of password checks (projects.governance.checkpool): in each lane a bound on checks
at once and a short FIFO queue, busy only when the queue is full or the wait runs out; the
lane of trusted clients has checks of its own, and the other lane's run at a lower priority."""

import os
import sys
import threading
import time

import pytest

from projects.governance.checkpool import Busy, CheckPool, Lane

pytestmark = pytest.mark.db_independent


def _until(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def _hold(check, release: threading.Event, order: list, name: str) -> threading.Thread:
    """A sign-in whose check, once it has its turn, lasts until `release`."""

    def run():
        try:
            check(lambda: (order.append(name), release.wait(5)))
        except Busy:
            order.append(f"{name}: busy")

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_each_waits_its_turn_in_order_and_busy_only_past_the_queue():
    lane = Lane(size=1, queue=2)
    order: list[str] = []
    gates = {name: threading.Event() for name in ("a", "b", "c")}
    threads = [_hold(lane.check, gates["a"], order, "a")]
    _until(lambda: order == ["a"])
    for n, name in enumerate(("b", "c")):
        threads.append(_hold(lane.check, gates[name], order, name))
        _until(lambda n=n: lane.state() == (1, n + 1))
    with pytest.raises(Busy) as busy:
        lane.check(lambda: order.append("d"))
    assert busy.value.retry_after >= 1
    for n, name in enumerate(("a", "b", "c")):
        gates[name].set()  # the check in progress ends: the next in line takes its turn
        _until(lambda n=n: len(order) == min(3, n + 2))
    for thread in threads:
        thread.join(5)
    assert order == ["a", "b", "c"] and lane.state() == (0, 0)


def test_at_most_size_checks_run_at_once_and_the_queue_holds_the_rest():
    lane = Lane(size=2, queue=3)
    running = peak = 0
    lock = threading.Lock()
    refused = []

    def work():
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.02)
        with lock:
            running -= 1

    def sign_in():
        try:
            lane.check(work)
        except Busy:
            refused.append(1)

    threads = [threading.Thread(target=sign_in) for _ in range(5)]  # 2 running + 3 waiting
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert peak == 2 and refused == []


def test_busy_when_the_wait_runs_out():
    lane = Lane(size=1, queue=2, wait=0.05)
    order: list[str] = []
    release = threading.Event()
    holder = _hold(lane.check, release, order, "running")
    _until(lambda: order == ["running"])
    began = time.monotonic()
    with pytest.raises(Busy):
        lane.check(lambda: None)
    assert time.monotonic() - began >= 0.05
    assert lane.state() == (1, 0)
    release.set()
    holder.join(5)


def test_a_flood_filling_the_other_lane_never_holds_up_a_trusted_sign_in():
    pool = CheckPool(size=1, queue=1)
    order: list[str] = []
    release = threading.Event()
    flood = [_hold(lambda fn: pool.check(fn, trusted=False), release, order, f"flood{n}") for n in range(3)]
    _until(lambda: len(order) == 2)  # one checked, one waiting, the third busy
    assert pool.full(trusted=False) and not pool.full(trusted=True)
    assert pool.check(lambda: "checked at once", trusted=True) == "checked at once"
    release.set()
    for thread in flood:
        thread.join(5)
    assert len(order) == 3 and sum("busy" in entry for entry in order) == 1
    assert pool.state() == {"trusted": 0, "trusted_waiting": 0, "running": 0, "waiting": 0}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's own nice value is Linux's")
def test_the_other_lanes_checks_run_at_a_lowered_priority_and_the_trusted_ones_do_not():
    pool = CheckPool(size=1, queue=0, nice=10)
    try:
        mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

        def priority():
            return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

        others = pool.check(priority, trusted=False)
        assert others == 10 or (mine > 10 and others == mine)  # (a niced run may not go back up)
        assert pool.check(priority, trusted=True) == mine
        assert priority() == mine  # the caller's thread is left as it was
    finally:
        pool.close()
