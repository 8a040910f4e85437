"""Idempotency keys after a crash, in the test process: when a retry may take over a key whose
first attempt has not answered (its worker dead on this machine: at once; on another host:
once its lease runs out; a live one: never), and fencing: an attempt that was taken over
commits nothing more. The real thing, a gunicorn worker SIGKILLed mid-post, is
tests/test_crash_retries.py."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import time

import pytest
from django.utils import timezone

from projects.memory import store
from projects.models import AgentSession, IdempotencyRecord, MemoryFile
from projects.runners import hooks, idempotency

pytestmark = pytest.mark.django_db
BODY = b'{"session": "s", "writes": []}'


def _owned_by(agent, owner: str, *, lease: float = 60.0, claimed_ago: float = 0.0) -> IdempotencyRecord:
    """A request with key "k" whose attempt (`owner`) has not answered."""
    record, replay = idempotency.begin(agent=agent, key="k", endpoint="hooks/post", body=BODY)
    assert not replay
    now = timezone.now()
    IdempotencyRecord.objects.filter(pk=record.pk).update(
        owner=owner,
        lease_until=now + dt.timedelta(seconds=lease),
        claimed_at=now - dt.timedelta(seconds=claimed_ago),
    )
    return record


def _dead_owner() -> str:
    """The owner token of a process of this machine that has exited."""
    process = subprocess.Popen(["sleep", "30"])
    started = idempotency._started(process.pid)
    process.kill()
    process.wait()
    return f"{idempotency._machine()}|{process.pid}|{started}|gone"


def _again(agent):
    return idempotency.begin(agent=agent, key="k", endpoint="hooks/post", body=BODY)


def test_a_key_whose_worker_died_on_this_machine_is_retryable_at_once(agent):
    _owned_by(agent, _dead_owner(), lease=60)  # its lease would hold it for another minute
    record, replay = _again(agent)
    assert not replay and record.owner.split("|")[1] == str(os.getpid())


def test_a_key_whose_worker_lives_stays_in_progress_whatever_its_lease(agent):
    alive = subprocess.Popen(["sleep", "30"])
    try:
        owner = f"{idempotency._machine()}|{alive.pid}|{idempotency._started(alive.pid)}|live"
        _owned_by(agent, owner, lease=-5)  # its heartbeat is late: the pid still says alive
        with pytest.raises(idempotency.InProgress) as busy:
            _again(agent)
        assert busy.value.retry_after == 1
    finally:
        alive.kill()
        alive.wait()
    record, _ = _again(agent)  # and once it is gone, at once
    assert record.owner != owner


def test_a_pid_that_now_belongs_to_another_process_counts_as_gone(agent):
    pid = os.getpid()
    _owned_by(agent, f"{idempotency._machine()}|{pid}|1|before-a-restart", lease=60)
    record, _ = _again(agent)
    assert not record.owner.endswith("|before-a-restart")


def test_a_key_from_another_host_waits_for_its_lease(agent):
    elsewhere = "another-boot/pid:[1]|4242|999|other-host"
    _owned_by(agent, elsewhere, lease=7)
    with pytest.raises(idempotency.InProgress) as busy:
        _again(agent)
    assert 6 <= busy.value.retry_after <= 7
    IdempotencyRecord.objects.filter(key="k").update(lease_until=timezone.now() - dt.timedelta(seconds=1))
    record, _ = _again(agent)
    assert record.owner != elsewhere


def test_a_request_running_past_the_limit_is_no_longer_kept(agent):
    _owned_by(agent, idempotency._owner_token(), lease=60, claimed_ago=idempotency.RUN_LIMIT + 1)
    record, _ = _again(agent)
    assert record.claimed_at > timezone.now() - dt.timedelta(seconds=5)


def test_a_released_key_is_retryable_at_once_and_an_answered_one_replays(agent):
    record, _ = idempotency.begin(agent=agent, key="k", endpoint="hooks/post", body=BODY)
    idempotency.release(record)
    second, replay = _again(agent)
    assert not replay
    idempotency.finish(second, 200, {"session": "s", "results": []})
    third, replay = _again(agent)
    assert replay and third.response == {"session": "s", "results": []}


def test_an_attempt_that_was_taken_over_commits_nothing_more(client, s3, project, agent, token):
    """Fencing: the first attempt was thought gone and a retry took the key; when the first
    goes on after all, its write is rolled back at commit (Superseded), and the retry's write
    lands once, as the agent's."""
    store.file_create(
        project=project, scope="workspace", path="notes/log.md", content="# Log\n", actor=_system()
    )
    session_id = client.post(
        "/api/v1/hooks/pre",
        data="{}",
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    ).json()["session"]
    session = AgentSession.objects.select_related("agent__project", "user").get(pk=session_id)
    write = hooks.WriteRequest("workspace/notes/log.md", "append", "- once\n", None, None)
    body = json.dumps({"n": 1}).encode()
    first, _ = idempotency.begin(agent=agent, key="k2", endpoint="hooks/post", body=body)
    IdempotencyRecord.objects.filter(pk=first.pk).update(owner=_dead_owner())  # as a retry saw it
    second, _ = idempotency.begin(agent=agent, key="k2", endpoint="hooks/post", body=body)
    with pytest.raises(idempotency.Superseded):
        hooks.hook_post(session=session, writes=[write], record=first)
    log = MemoryFile.objects.select_related("head").get(path="notes/log.md")
    assert log.head.number == 1  # nothing of the first attempt committed
    [result] = hooks.hook_post(session=session, writes=[write], record=second)
    assert result["status"] == "written"
    log = MemoryFile.objects.select_related("head").get(path="notes/log.md")
    assert (log.head.number, log.head.author_kind) == (2, "agent")
    assert s3.get(log.key).decode().count("- once\n") == 1
    with pytest.raises(idempotency.Superseded):  # nor can it store an answer
        idempotency.finish(first, 200, {})


@pytest.mark.django_db(transaction=True)
def test_a_running_attempts_lease_is_renewed_by_the_heartbeat(agent, settings):
    settings.MGC_IDEMPOTENCY_LEASE_SECONDS = 0.6
    record, _ = idempotency.begin(agent=agent, key="k", endpoint="hooks/post", body=BODY)
    first_lease = record.lease_until
    idempotency.hold(record)
    try:
        deadline = time.monotonic() + 10
        while IdempotencyRecord.objects.get(pk=record.pk).lease_until <= first_lease:
            assert time.monotonic() < deadline, "the lease was never renewed"
            time.sleep(0.05)
    finally:
        idempotency.let_go(record, failed=True)
    released = IdempotencyRecord.objects.get(pk=record.pk)
    assert released.owner == "" and released.lease_until <= timezone.now()


def _system():
    from projects.audit import Actor

    return Actor.system("t")


def test_a_request_begun_before_owners_were_named_keeps_its_lease(agent):
    """During a rolling upgrade a worker of the last version may still run a request it began
    without naming an owner (and without fencing): its lease is respected as before."""
    _owned_by(agent, "", lease=30)
    with pytest.raises(idempotency.InProgress):
        _again(agent)
    IdempotencyRecord.objects.filter(key="k").update(lease_until=timezone.now() - dt.timedelta(seconds=1))
    record, _ = _again(agent)
    assert record.owner


def test_a_write_that_landed_and_was_recorded_by_another_save_is_not_made_again(
    client, s3, project, agent, token, person
):
    """The worker died after its append reached S3 and before its commit; before the retry,
    another save met that head and recorded it (as the agent's, from its metadata). The retry
    finds its own write among the revisions, by the request it belongs to, and does not append
    the line a second time."""
    from django.db import DatabaseError

    from projects.audit import Actor
    from tests.conftest import DatabaseRefusal

    store.file_create(
        project=project, scope="workspace", path="notes/log.md", content="# Log\n", actor=_system()
    )
    session_id = client.post(
        "/api/v1/hooks/pre", data="{}", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    ).json()["session"]
    session = AgentSession.objects.select_related("agent__project", "user").get(pk=session_id)
    write = hooks.WriteRequest("workspace/notes/log.md", "append", "- the agent's line\n", None, None)
    first, _ = idempotency.begin(agent=agent, key="k3", endpoint="hooks/post", body=b"{}")
    killed = DatabaseRefusal("projects_revision")  # the commit never comes: S3 has the line
    killed.start()
    try:
        with pytest.raises(DatabaseError):
            hooks.hook_post(session=session, writes=[write], record=first)
    finally:
        killed.stop()
    log = MemoryFile.objects.select_related("head", "project").get(path="notes/log.md")
    store.file_append(file=log, addition="- a person's line\n", actor=Actor.person(person))
    IdempotencyRecord.objects.filter(pk=first.pk).update(owner=_dead_owner())
    second, _ = idempotency.begin(agent=agent, key="k3", endpoint="hooks/post", body=b"{}")
    [result] = hooks.hook_post(session=session, writes=[write], record=second)
    text = s3.get(log.key).decode()
    assert text == "# Log\n- the agent's line\n- a person's line\n"
    assert (result["status"], result["revision"]) == ("written", 2)


class _WorkerDied(BaseException):
    """The worker's process ends here: nothing after it runs, not even a finally's release."""


def test_an_end_retried_with_another_summary_after_a_crash_is_taken_over_and_written_once(
    client, s3, project, agent, token, admin, settings, monkeypatch
):
    """Claude Code's Stop dies after its write committed and before its answer; its SessionEnd
    comes under the same key with another summary. While the Stop's worker lives, that is a
    409 (not a 422: the summary is a label); once it is gone, the SessionEnd takes the key
    over and goes on from the committed write: the line once, the session ended once, and
    the answer the same for any later summary."""
    from projects.events import subscriptions
    from projects.models import OutboxEvent, SessionEvent

    # Recorded for a subscriber (the outbox row is written with the change; nothing is sent).
    settings.MGC_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1"]
    subscriptions.webhook_create(
        by=admin, project=project, url="http://127.0.0.1:9/h", events=["session.ended"]
    )
    store.file_create(
        project=project, scope="workspace", path="notes/log.md", content="# Log\n", actor=_system()
    )

    def post(payload: dict):
        return client.post(
            "/api/v1/hooks/post",
            data=json.dumps(payload),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
            HTTP_IDEMPOTENCY_KEY="push-end",
        )

    session_id = client.post(
        "/api/v1/hooks/pre", data="{}", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    ).json()["session"]
    writes = [{"path": "workspace/notes/log.md", "mode": "append", "content": "- once\n"}]

    def died(*args, **kwargs):
        raise _WorkerDied

    with monkeypatch.context() as dying:
        dying.setattr(idempotency, "finish", died)  # after the write's commit, before the answer
        dying.setattr(idempotency, "let_go", lambda *args, **kwargs: None)
        with pytest.raises(_WorkerDied):
            post({"session": session_id, "writes": writes, "summary": "Claude Code stop"})
    record = IdempotencyRecord.objects.get(agent=agent, key="push-end")
    assert record.state == IdempotencyRecord.State.RUNNING and record.partial["0"]["status"] == "written"

    # Its worker (this process) still runs: wait, do not take over, and never a 422.
    busy = post({"session": session_id, "writes": writes, "summary": "Claude Code sessionend"})
    assert busy.status_code == 409 and int(busy["Retry-After"]) >= 1

    IdempotencyRecord.objects.filter(pk=record.pk).update(owner=_dead_owner())
    taken = post({"session": session_id, "writes": writes, "summary": "Claude Code sessionend"})
    assert taken.status_code == 200, taken.content
    [result] = taken.json()["results"]
    assert (result["status"], result["revision"]) == ("written", 2)
    log = MemoryFile.objects.select_related("head").get(path="notes/log.md")
    assert log.head.number == 2 and s3.get(log.key).decode().count("- once\n") == 1
    assert SessionEvent.objects.filter(session_id=session_id, kind="post").count() == 1
    assert AgentSession.objects.get(pk=session_id).ended_at is not None
    assert OutboxEvent.objects.filter(type="session.ended").count() == 1

    again = post({"session": session_id, "writes": writes, "summary": "a third label"})
    assert again.status_code == 200 and again["Idempotent-Replayed"] == "true"
    assert again.json() == taken.json()
    other = post({"session": session_id, "writes": [{**writes[0], "content": "- other\n"}]})
    assert other.status_code == 422  # other writes under the key: another request
