"""The events worker as it runs in production: `manage.py events_worker` processes (django-tasks-db's
worker plus the outbox relay) against the test database, delivering to a real receiver on
127.0.0.1. A worker in another process needs a database it can reach, so these run in the
PostgreSQL run (the SQLite run's database lives in the test process's memory)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from projects import outbox
from projects.events import subscriptions
from projects.events.tasks import deliver_event
from projects.models import DeliveryAttempt, OutboxEvent
from tests.receiver import Receiver

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="a worker process needs a database it can reach: PostgreSQL run",
    ),
]


@pytest.fixture(autouse=True)
def loopback_allowed(settings):
    settings.MGC_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1"]


@pytest.fixture
def receiver():
    found = Receiver()
    yield found
    found.close()


class Workers:
    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.processes: list[subprocess.Popen] = []

    def start(self, name: str) -> subprocess.Popen:
        db = connection.settings_dict
        env = {
            **os.environ,
            "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
            "MGC_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1",
            "MGC_EVENTS_LEASE_SECONDS": "1.5",
            "MGC_EVENTS_POLL_SECONDS": "0.1",
            "MGC_EVENTS_RETRY_BASE_SECONDS": "0.05",
            "MGC_EVENTS_RETRY_MAX_SECONDS": "0.2",
            "MGC_WEBHOOK_READ_TIMEOUT": "20",
            "MGC_LOG_LEVEL": "WARNING",
        }
        log = open(self.tmp_path / f"{name}.log", "w")  # noqa: SIM115 - closed with the process
        process = subprocess.Popen(
            [sys.executable, "manage.py", "events_worker", "--no-startup-delay", "--worker-id", name],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.processes.append(process)
        return process

    def log(self, name: str) -> str:
        return (self.tmp_path / f"{name}.log").read_text()

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture
def workers(tmp_path):
    found = Workers(tmp_path)
    yield found
    found.stop()


def _wait(condition, timeout: float = 20.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _events(subscription, count: int) -> list[OutboxEvent]:
    """`count` committed events for the subscription (as a change would record them)."""
    for n in range(count):
        outbox.emit("session.started", project=subscription.project, data={"n": n})
    return list(OutboxEvent.objects.filter(subscription=subscription).order_by("pk"))


def test_a_worker_killed_mid_delivery_delivers_after_restart_with_the_same_id(
    project, admin, receiver, workers
):
    subscription, secret = subscriptions.webhook_create(
        by=admin, project=project, url=receiver.url, events=["session.started"]
    )
    [event] = _events(subscription, 1)
    receiver.holding = True  # the receiver keeps the first request waiting

    first = workers.start("w1")
    [held] = receiver.wait_for(1, timeout=30)
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    receiver.holding = False
    receiver.hold.set()  # its answer goes nowhere: the worker is gone

    workers.start("w2")
    requests = receiver.wait_for(2, timeout=30)
    _wait(lambda: OutboxEvent.objects.get(pk=event.pk).state == "delivered", what="delivered")

    assert held.id == requests[1].id == event.event_id
    receiver.verified(secret, requests[1])
    log = list(DeliveryAttempt.objects.filter(event=event).order_by("number"))
    assert [(a.number, a.worker, a.status_code) for a in log] == [(1, "w1", None), (2, "w2", 200)]
    assert log[0].finished_at is None  # the killed attempt stays in the log, unanswered


def test_two_workers_never_deliver_one_event_at_the_same_time(project, admin, receiver, workers):
    subscription, _ = subscriptions.webhook_create(
        by=admin, project=project, url=receiver.url, events=["session.started"]
    )
    events = _events(subscription, 40)
    # Each event on the queue three times over, beside the relay's own: the workers race for it.
    for event in events:
        for _ in range(3):
            deliver_event.enqueue(event.pk)
    receiver.delay = 0.03

    workers.start("a")
    workers.start("b")
    _wait(
        lambda: OutboxEvent.objects.filter(state="delivered").count() == len(events),
        timeout=60,
        what="every event delivered",
    )

    assert receiver.overlaps == []
    ids = [r.id for r in receiver.requests]
    assert sorted(ids) == sorted(e.event_id for e in events)  # each once, none twice
    by_worker = set(DeliveryAttempt.objects.values_list("worker", flat=True))
    assert by_worker == {"a", "b"}  # both took part
