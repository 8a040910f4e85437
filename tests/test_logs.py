"""Log lines: JSON with the request's context, and never a secret or a memory text.

A marker is written into memory, a token and passwords are made and sent, through every door:
sign-in (right and wrong password), the token's creation page, the pre hook (the marker is in
its prompt), the post hook (written, refused and conflicting writes), the editor, S3 failing
under a save, and /metrics with its token. Every record any logger writes meanwhile is
captured at DEBUG, with the console's own formatter, in debug mode (SQL would be logged
then), and none of them may hold any of it."""

import io
import json
import logging
import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from projects import logs
from projects.audit import Actor
from projects.memory import store
from projects.models import AgentToken, Membership, MemoryFile

MARKER = "ZEBRA-QUARTZ-7731"  # in memory texts
PASSWORD = "Correct-Horse-4417-battery"
WRONG_PASSWORD = "Wrong-Pony-9902-staple"
METRICS_TOKEN = "scrape-me-5569-token"


@pytest.fixture
def captured(settings):
    """Every record of every logger at DEBUG, formatted as production formats them."""
    settings.DEBUG = True
    settings.MGC_METRICS_TOKEN = METRICS_TOKEN
    logs.known_secrets([METRICS_TOKEN])
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JsonFormatter())
    handler.addFilter(logs.ContextFilter())
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield stream
    root.removeHandler(handler)
    root.setLevel(old_level)
    logs.known_secrets([])


@pytest.mark.db_independent  # what is logged does not depend on the database
def test_no_secret_and_no_memory_text_reaches_the_logs(captured, s3, transactional_db, project, agent):
    admin = get_user_model().objects.create_user("olga", password=PASSWORD)
    Membership.objects.create(user=admin, project=project, role="admin")
    store.file_create(
        project=project,
        scope="agent",
        agent=agent,
        path="SOUL.md",
        content=f"You analyse incidents. {MARKER}-soul\n",
        actor=Actor.person(admin),
    )
    agent.hook_policy = {
        "post": {
            "workspace/**": {"modes": ["append", "replace"], "approval": False},
            "AGENTS.md": {"modes": ["replace"], "approval": True},
        }
    }
    agent.save()

    browser = Client()
    # Sign-in: a wrong password, then the right one.
    assert (
        browser.post("/accounts/login/", {"username": "olga", "password": WRONG_PASSWORD}).status_code == 200
    )
    assert browser.post("/accounts/login/", {"username": "olga", "password": PASSWORD}).status_code == 302

    # A runner token made on its page (shown once on the next page).
    made = browser.post(
        reverse("projects:token_create", args=[project.slug, agent.slug]),
        {"name": "prod runner"},
        follow=True,
    )
    raw = re.search(r"mgc_[A-Za-z0-9_\-]{20,}", made.content.decode()).group(0)
    assert AgentToken.objects.filter(agent=agent).exists()

    runner = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
    pre = runner.post("/api/v1/hooks/pre", {"user": "olga"}, content_type="application/json")
    assert MARKER in pre.json()["prompt"]
    session = pre.json()["session"]

    def post(writes):
        return runner.post(
            "/api/v1/hooks/post",
            json.dumps({"session": session, "writes": writes, "end": False}),
            content_type="application/json",
        ).json()["results"]

    assert (
        post([{"path": "workspace/notes.md", "mode": "append", "content": f"{MARKER}-post\n"}])[0]["status"]
        == "written"
    )
    refused = post(
        [
            {"path": "workspace/bin.md", "mode": "replace", "content": f"{MARKER}-nul\x00"},
            {"path": "USER.md", "mode": "replace", "content": f"{MARKER}-denied\n"},
            {"path": "AGENTS.md", "mode": "replace", "content": f"{MARKER}-proposed\n"},
            {
                "path": "workspace/notes.md",
                "mode": "replace",
                "content": f"{MARKER}-stale\n",
                "base_revision": 0,
            },
        ]
    )
    assert [r["status"] for r in refused] == ["rejected", "rejected", "proposed", "conflict"]

    # S3 failing under a save: the storage's warning names the operation, not the text.
    s3.proxy.inject("PUT", r"notes\.md", "status", status=503, times=3)
    failing = runner.post(
        "/api/v1/hooks/post",
        json.dumps(
            {
                "session": session,
                "writes": [{"path": "workspace/notes.md", "mode": "append", "content": f"{MARKER}-s3down\n"}],
                "end": False,
            }
        ),
        content_type="application/json",
    )
    s3.proxy.heal()
    assert failing.status_code == 503

    # The editor.
    notes = MemoryFile.objects.get(project=project, path="notes.md")
    saved = browser.post(
        reverse("projects:file_edit", args=[project.slug, notes.pk]),
        {"content": f"# Notes\n{MARKER}-editor\n", "message": "by hand", "base_revision": notes.head.number},
    )
    assert saved.status_code == 302

    # Prometheus with its token.
    assert Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {METRICS_TOKEN}").status_code == 200
    # A runner sending a bad token, and an unknown path with a token in it.
    Client(HTTP_AUTHORIZATION="Bearer mgc_not-a-real-token-0000000").post(
        "/api/v1/hooks/pre", {}, content_type="application/json"
    )

    text = captured.getvalue()
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    # The capture saw the requests, with their context: it would have seen a leak.
    pre_line = next(
        line for line in lines if line["logger"] == "mgc.request" and "/hooks/pre" in line["message"]
    )
    assert pre_line["agent"] == agent.slug and pre_line["project"] == project.slug
    assert pre_line["session"] == session and pre_line["request_id"] == pre["X-Request-ID"]
    assert any(line["logger"] == "mgc.request" and line.get("user") == "olga" for line in lines)
    assert any("S3 PutObject failed" in line["message"] for line in lines)
    for secret in (MARKER, raw, raw[len("mgc_") :], PASSWORD, WRONG_PASSWORD, METRICS_TOKEN):
        assert secret not in text, f"{secret!r} reached the logs"


@pytest.mark.db_independent
def test_scrub_takes_out_tokens_secrets_and_set_password_links():
    logs.known_secrets(["s3-secret-value-xyz"])
    try:
        line = logs.scrub(
            "Authorization: Bearer abcdefghijklmnop token mgc_AbCdEf123456 whsec_Zm9vYmFyYmF6 "
            "GET /accounts/set-password/MQ/cbx12-abcdef0123456789/ key=s3-secret-value-xyz password=hunter22"
        )
    finally:
        logs.known_secrets([])
    for leaked in (
        "abcdefghijklmnop",
        "AbCdEf123456",
        "Zm9vYmFyYmF6",
        "abcdef0123456789",
        "s3-secret-value",
        "hunter22",
    ):
        assert leaked not in line, line
    assert "/accounts/set-password/[redacted]/" in line


@pytest.mark.db_independent
def test_text_format_keeps_one_readable_line_with_the_context():
    record = logging.LogRecord("mgc.request", logging.INFO, __file__, 1, "GET %s %s", ("/x", 200), None)
    token = logs.begin("req-1")
    try:
        logs.bind(project="incidents")
        logs.ContextFilter().filter(record)
    finally:
        logs.end(token)
    record.fields = {"ms": 1.5}
    text = logs.TextFormatter().format(record)
    assert text.endswith("GET /x 200 [request_id=req-1 project=incidents ms=1.5]")
    as_json = json.loads(logs.JsonFormatter().format(record))
    assert as_json["request_id"] == "req-1" and as_json["project"] == "incidents" and as_json["ms"] == 1.5
