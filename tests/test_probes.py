"""/healthz, /readyz and /metrics through the console's own stack, and what every other request
carries: its id (X-Request-ID) and its hook's timing. The same probes against a real gunicorn
console, with SeaweedFS and the database taken away and given back, and a real Prometheus
scraping it: tests/test_platform.py."""

import json

import pytest
from django.test import Client
from prometheus_client import REGISTRY

from projects import health, metrics
from projects.audit import Actor
from projects.models import OutboxEvent, WebhookSubscription


@pytest.fixture(autouse=True)
def fresh_readiness(settings):
    settings.MGC_READY_CACHE_SECONDS = 0
    health.forget()
    yield
    health.forget()


def _sample(name: str, **labels) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.mark.db_independent
def test_healthz_answers_without_sign_in_or_a_known_host(client):
    # A probe comes to the pod's address, which ALLOWED_HOSTS does not list, over plain HTTP.
    answer = client.get("/healthz", HTTP_HOST="10.1.2.3:8000")
    assert answer.status_code == 200
    assert answer.json() == {"status": "ok"}
    assert answer["Cache-Control"] == "no-store"


def test_readyz_lists_every_check_and_is_ready(s3, db, client):
    answer = client.get("/readyz", HTTP_HOST="10.1.2.3:8000")
    body = answer.json()
    assert answer.status_code == 200, body
    assert body["status"] == "ready"
    assert set(body["checks"]) == {"database", "s3", "cache", "outbox"}
    assert all(check["ok"] for check in body["checks"].values())
    assert "failing" not in body


def test_readyz_names_s3_when_its_bucket_does_not_answer(s3, db, client):
    s3.proxy.down = True
    try:
        answer = client.get("/readyz")
    finally:
        s3.proxy.down = False
    body = answer.json()
    assert answer.status_code == 503
    assert body["failing"] == ["s3"]
    # The kind of failure, never the endpoint, a key or a message.
    assert body["checks"]["s3"]["error"] in {"unreachable", "timeout", "503"}, body
    assert "127.0.0.1" not in answer.content.decode()


def test_readyz_names_the_outbox_when_due_events_wait_past_the_limit(s3, db, client, settings):
    from datetime import timedelta

    from django.utils import timezone

    settings.MGC_READY_OUTBOX_MAX_AGE = 60
    hook = WebhookSubscription.objects.create(url="https://hooks.example.com/x", secret="whsec_test")
    OutboxEvent.objects.create(
        event_id="evt_1",
        subscription=hook,
        type="memory.revision.created",
        body={},
        next_attempt_at=timezone.now() - timedelta(seconds=30),
    )
    assert client.get("/readyz").status_code == 200  # due 30 s ago: a worker may be on it
    # A retry scheduled for later is not waiting for a worker, however old the event is.
    OutboxEvent.objects.create(
        event_id="evt_2",
        subscription=hook,
        type="memory.revision.created",
        body={},
        created_at=timezone.now() - timedelta(hours=5),
        next_attempt_at=timezone.now() + timedelta(minutes=10),
    )
    assert client.get("/readyz").status_code == 200
    OutboxEvent.objects.filter(event_id="evt_1").update(next_attempt_at=timezone.now() - timedelta(minutes=5))
    answer = client.get("/readyz")
    assert answer.status_code == 503
    assert answer.json()["failing"] == ["outbox"]
    assert answer.json()["checks"]["outbox"]["pending"] == 2
    # A disabled webhook's events wait for a person, not for the worker: not a readiness matter.
    WebhookSubscription.objects.filter(pk=hook.pk).update(disabled_at=timezone.now())
    assert client.get("/readyz").status_code == 200


def test_readyz_answer_is_reused_for_the_cache_seconds(s3, db, client, settings, django_assert_num_queries):
    settings.MGC_READY_CACHE_SECONDS = 60
    client.get("/readyz")
    with django_assert_num_queries(0):
        assert client.get("/readyz").status_code == 200


def test_readyz_checks_the_change_feed_where_one_is_configured(s3, db, client, settings):
    settings.MGC_S3_CHANGE_FEED, settings.MGC_S3_FILER_ADDRESS = "seaweedfs", s3.server.filer_address
    answer = client.get("/readyz")
    assert answer.status_code == 200 and answer.json()["checks"]["change_feed"]["ok"]
    # A filer that takes no connections: hooks would list the bucket each time, and the feed
    # this configuration asks for cannot follow.
    settings.MGC_S3_FILER_ADDRESS = "127.0.0.1:1.2"
    answer = client.get("/readyz")
    assert answer.status_code == 503 and answer.json()["failing"] == ["change_feed"]


@pytest.mark.db_independent
def test_metrics_are_off_unless_a_token_or_a_network_is_set(client, settings):
    settings.MGC_METRICS_TOKEN, settings.MGC_METRICS_NETWORKS = "", []
    assert client.get("/metrics").status_code == 404


def test_metrics_need_the_token(s3, db, client, settings):
    settings.MGC_METRICS_TOKEN, settings.MGC_METRICS_NETWORKS = "scrape-secret-123", []
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong-token-12").status_code == 401
    answer = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-secret-123")
    assert answer.status_code == 200
    text = answer.content.decode()
    assert 'mgc_ready_check{check="s3"} 1.0' in text
    assert "mgc_outbox_pending_events 0.0" in text
    for outcome in metrics.WRITE_OUTCOMES:  # the poisoning scanner's outcome is there from the start
        assert f'mgc_memory_writes_total{{outcome="{outcome}"}}' in text


def test_metrics_from_an_allowed_network_need_no_token(s3, db, client, settings):
    settings.MGC_METRICS_TOKEN, settings.MGC_METRICS_NETWORKS = "", ["10.0.0.0/8"]
    assert client.get("/metrics", REMOTE_ADDR="10.3.4.5").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="192.168.1.9").status_code == 401


def test_a_pre_and_a_post_hook_move_their_histograms_and_the_writes(s3, db, agent, token, person):
    from projects.memory import store

    store.file_create(
        project=agent.project,
        scope="agent",
        agent=agent,
        path="SOUL.md",
        content="You analyse incidents.\n",
        actor=Actor.person(person),
    )
    agent.hook_policy = {"post": {"workspace/notes/**": {"modes": ["append"], "approval": False}}}
    agent.save()
    before = {
        "pre": _sample("mgc_hook_duration_seconds_count", hook="pre"),
        "post": _sample("mgc_hook_duration_seconds_count", hook="post"),
        "written": _sample("mgc_memory_writes_total", outcome="written"),
        "refused": _sample("mgc_memory_writes_total", outcome="refused"),
    }
    runner = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    pre = runner.post("/api/v1/hooks/pre", {"user": person.username}, content_type="application/json")
    assert pre.status_code == 200
    session = pre.json()["session"]
    post = runner.post(
        "/api/v1/hooks/post",
        json.dumps(
            {
                "session": session,
                "writes": [
                    {"path": "workspace/notes/a.md", "mode": "append", "content": "one\n"},
                    {"path": "AGENTS.md", "mode": "replace", "content": "not allowed\n"},
                ],
            }
        ),
        content_type="application/json",
    )
    assert [r["status"] for r in post.json()["results"]] == ["written", "rejected"]
    assert _sample("mgc_hook_duration_seconds_count", hook="pre") == before["pre"] + 1
    assert _sample("mgc_hook_duration_seconds_count", hook="post") == before["post"] + 1
    assert _sample("mgc_hook_answers_total", hook="pre", status="2xx") >= 1
    assert _sample("mgc_memory_writes_total", outcome="written") == before["written"] + 1
    assert _sample("mgc_memory_writes_total", outcome="refused") == before["refused"] + 1
    # Every answer names its request, for joining a runner's log to the console's.
    assert len(pre["X-Request-ID"]) >= 16 and pre["X-Request-ID"] != post["X-Request-ID"]


@pytest.mark.db_independent
def test_request_id_is_made_here_unless_a_trusted_proxy_set_it(db, client, settings):
    # `db`: a request checks the thread's persistent connection when it sat idle (health.py),
    # and one an earlier test left open is this thread's.
    settings.MGC_TRUSTED_PROXIES = 0
    made = client.get("/accounts/login/", HTTP_X_REQUEST_ID="client-chose-this")
    assert made["X-Request-ID"] != "client-chose-this"
    settings.MGC_TRUSTED_PROXIES = 1
    kept = client.get("/accounts/login/", HTTP_X_REQUEST_ID="nginx-4f2a9c")
    assert kept["X-Request-ID"] == "nginx-4f2a9c"
    odd = client.get("/accounts/login/", HTTP_X_REQUEST_ID="bad id\twith spaces")
    assert odd["X-Request-ID"] != "bad id\twith spaces"


@pytest.mark.db_independent
def test_s3_errors_are_counted_by_operation(s3, db, project):
    from projects.memory.errors import StorageUnavailable
    from projects.memory.storage import storage_for

    storage = storage_for(project)
    key = f"{project.prefix}workspace/probe.md"
    before = {op: _sample("mgc_s3_errors_total", operation=op) for op in ("GetObject", "PutObject")}
    s3.proxy.inject("*", r".*", "status", status=503, times=10**6)
    try:
        with pytest.raises(StorageUnavailable):
            storage.read(key)
        with pytest.raises(StorageUnavailable):
            storage.write(key, b"x\n")
    finally:
        s3.proxy.heal()
    assert _sample("mgc_s3_errors_total", operation="GetObject") == before["GetObject"] + 1
    assert _sample("mgc_s3_errors_total", operation="PutObject") == before["PutObject"] + 1


@pytest.mark.db_independent
def test_sign_in_refusals_are_counted_by_kind_at_the_door_and_in_the_backends(
    db, make_user, settings, monkeypatch
):
    from django.core.cache import cache

    from projects.governance import checkpool

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.MGC_LOGIN_FAILURE_LIMIT = 2
    cache.clear()
    make_user("nina")
    reasons = ("password", "locked", "busy")
    before = {reason: _sample("mgc_signin_refusals_total", reason=reason) for reason in reasons}

    def attempt() -> int:
        answer = Client().post(
            "/accounts/login/", {"username": "nina", "password": "not hers"}, REMOTE_ADDR="203.0.113.9"
        )
        return answer.status_code

    def counted() -> dict:
        return {r: _sample("mgc_signin_refusals_total", reason=r) - before[r] for r in reasons}

    try:
        assert [attempt(), attempt()] == [200, 200]  # two wrong passwords: the pair is locked
        assert counted() == {"password": 2, "locked": 0, "busy": 0}
        assert attempt() == 429  # refused at the door: the cache knows
        assert counted() == {"password": 2, "locked": 1, "busy": 0}
        cache.clear()  # a process whose cache does not know: the guard backend reads the database
        assert attempt() == 429
        assert counted() == {"password": 2, "locked": 2, "busy": 0}
        cache.clear()
        monkeypatch.setattr(checkpool.pool().lanes[False], "full", lambda: True)  # every check taken
        settings.MGC_LOGIN_FAILURE_LIMIT = 10
        assert attempt() == 429
        assert counted() == {"password": 2, "locked": 2, "busy": 1}
    finally:
        cache.clear()


def test_refused_sign_ins_and_retention_runs_are_counted(s3, db, client, project, make_user, admin):
    from projects.governance import holds, retention

    make_user("nina")
    refused = _sample("mgc_signin_refusals_total", reason="password")
    client.post("/accounts/login/", {"username": "nina", "password": "not her password"})
    assert _sample("mgc_signin_refusals_total", reason="password") == refused + 1

    runs = _sample("mgc_sweeps_total", kind="retention", outcome="done")
    retention.apply(project)
    assert _sample("mgc_sweeps_total", kind="retention", outcome="done") == runs + 1
    placed = _sample("mgc_sweeps_total", kind="hold_place", outcome="unenforced")
    holds.hold_place(by=admin, project=project, reason="case 1")  # the test bucket has no Object Lock
    assert _sample("mgc_sweeps_total", kind="hold_place", outcome="unenforced") == placed + 1
