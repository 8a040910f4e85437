"""The runner API: pre/post/tool/error, tokens, policy, proposals, every error path."""

import json

import pytest
from django.utils import timezone

from projects.audit import Actor
from projects.memory import reading, store
from projects.models import AgentSession, Membership, MemoryFile, Proposal, Revision, SessionEvent
from projects.runners import bearer, policy, proposals

pytestmark = pytest.mark.django_db


@pytest.fixture
def memory(s3, project, agent, person):
    admin = Actor.system("test")
    for name, text in [
        ("SOUL.md", "You are the incident analyst."),
        ("AGENTS.md", "1. Cite sources.\n"),
        ("TOOLS.md", "grafana_query"),
    ]:
        store.file_create(project=project, scope="agent", agent=agent, path=name, content=text, actor=admin)
    store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="Maria prefers UTC.\n",
        actor=Actor.person(person),
    )
    store.file_create(
        project=project, scope="workspace", path="incidents/a.md", content="# Incident A\n", actor=admin
    )
    return project


def call(client, path, body, token=None, raw=None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    return client.post(
        f"/api/v1/hooks/{path}" if "/" not in path else f"/api/v1/{path}",
        data=raw if raw is not None else json.dumps(body),
        content_type="application/json",
        **headers,
    )


def test_pre_assembles_prompt_and_records_a_receipt(client, memory, token, person):
    response = call(client, "pre", {"user": "maria", "session": "run-1"}, token)
    assert response.status_code == 200, response.content
    data = response.json()
    assert data["prompt"].startswith("What follows is your memory: records the console keeps for you")
    assert "\n\n<agent_identity>\nYou are the incident analyst." in data["prompt"]
    assert "<user_profile>\nMaria prefers UTC.\n</user_profile>" in data["prompt"]
    assert '<workspace_memory trust="untrusted" origin="people">' in data["prompt"]
    # each section's trust and origin, so a runner can place the untrusted ones elsewhere
    assert [(s["trust"], s["origin"]) for s in data["sections"]] == [
        ("trusted", ["people"]),
        ("trusted", ["people"]),
        ("trusted", ["people"]),
        ("trusted", ["people"]),
        ("untrusted", ["people"]),
    ]
    assert "### file: workspace/incidents/a.md" in data["prompt"]
    tags = [s["tag"] for s in data["sections"]]
    assert tags == ["agent_identity", "agent_rules", "tool_instructions", "user_profile", "workspace_memory"]
    profile = data["sections"][3]
    assert (profile["path"], profile["revision"]) == ("USER.md", 1)
    session = AgentSession.objects.get(pk=data["session"])
    assert session.prompt_sha256 == data["prompt_sha256"] and session.user == person
    assert session.external_ref == "run-1"
    assert session.receipt[3]["files"][0]["revision"] == 1


def test_post_appends_to_workspace_directly_as_the_agent(client, memory, token, agent, s3):
    session = call(client, "pre", {"user": "maria"}, token).json()["session"]
    response = call(
        client,
        "post",
        {
            "session": session,
            "summary": "triage",
            "writes": [
                {"path": "workspace/incidents/a.md", "mode": "append", "content": "- 10:00 resolved\n"}
            ],
        },
        token,
    )
    result = response.json()["results"][0]
    assert result["status"] == "written" and result["revision"] == 2
    file = MemoryFile.objects.get(project=memory, path="incidents/a.md")
    assert s3.get(file.key) == b"# Incident A\n- 10:00 resolved\n"
    revision = file.head
    assert (revision.author_kind, revision.author_agent, revision.session_ref) == ("agent", agent, session)


def test_policy_denies_what_it_does_not_list(client, memory, token):
    session = call(client, "pre", {}, token).json()["session"]
    results = call(
        client,
        "post",
        {
            "session": session,
            "writes": [
                {"path": "SOUL.md", "mode": "replace", "content": "I obey."},
                {"path": "AGENTS.md", "mode": "replace", "content": "No rules."},
            ],
        },
        token,
    ).json()["results"]
    assert [(r["status"], r["code"]) for r in results] == [
        ("rejected", "policy_denied"),
        ("rejected", "policy_denied"),
    ]
    assert MemoryFile.objects.get(path="SOUL.md").head.number == 1


def test_proposals_wait_for_approval_then_apply(client, memory, token, make_user, s3):
    session = call(client, "pre", {"user": "maria"}, token).json()["session"]
    results = call(
        client,
        "post",
        {
            "session": session,
            "writes": [
                {"path": "AGENTS.md", "mode": "append", "content": "2. Times in UTC.\n"},
                {"path": "USER.md", "mode": "append", "content": "Works nights.\n"},
            ],
        },
        token,
    ).json()["results"]
    assert [r["status"] for r in results] == ["proposed", "proposed"]
    rules = MemoryFile.objects.get(path="AGENTS.md")
    assert rules.head.number == 1  # nothing written yet
    approver = make_user("boss")
    first = Proposal.objects.get(pk=results[0]["proposal"])
    revision = proposals.proposal_approve(proposal=first, by=approver, note="ok")
    assert revision.author_kind == "agent" and revision.session_ref == session
    assert s3.get(rules.key) == b"1. Cite sources.\n2. Times in UTC.\n"
    second = Proposal.objects.get(pk=results[1]["proposal"])
    proposals.proposal_reject(proposal=second, by=approver, note="not relevant")
    assert MemoryFile.objects.get(path="USER.md").head.number == 1
    with pytest.raises(policy.HookError):
        proposals.proposal_approve(proposal=second, by=approver)


def test_replace_uses_the_receipt_revision_and_conflicts_on_change(client, memory, token, agent):
    agent.hook_policy["post"]["workspace/**.md"] = {"modes": ["replace"], "approval": False}
    agent.save()
    session = call(client, "pre", {}, token).json()["session"]
    file = MemoryFile.objects.select_related("head", "project").get(path="incidents/a.md")
    store.file_save(file=file, content="changed meanwhile\n", actor=Actor.system("t"), base_revision=1)
    result = call(
        client,
        "post",
        {
            "session": session,
            "writes": [{"path": "workspace/incidents/a.md", "mode": "replace", "content": "mine\n"}],
        },
        token,
    ).json()["results"][0]
    assert (result["status"], result["head_revision"]) == ("conflict", 2)
    ok = call(
        client,
        "post",
        {
            "session": session,
            "writes": [
                {
                    "path": "workspace/incidents/a.md",
                    "mode": "replace",
                    "content": "mine\n",
                    "base_revision": 2,
                }
            ],
        },
        token,
    ).json()["results"][0]
    assert ok["status"] == "written" and ok["revision"] == 3


def test_a_replace_with_the_heads_own_text_makes_no_revision(client, memory, token, agent):
    agent.hook_policy["post"]["workspace/**.md"] = {"modes": ["replace"], "approval": False}
    agent.save()
    session = call(client, "pre", {}, token).json()["session"]
    file = MemoryFile.objects.select_related("head", "project").get(path="incidents/a.md")
    same = reading.revision_read(file.head)
    results = call(
        client,
        "post",
        {
            "session": session,
            "writes": [
                {"path": "workspace/incidents/a.md", "mode": "replace", "content": same},
                {"path": "workspace/incidents/a.md", "mode": "replace", "content": same + "more\n"},
            ],
        },
        token,
    ).json()["results"]
    assert (results[0]["status"], results[0]["revision"], results[0]["unchanged"]) == ("written", 1, True)
    assert (results[1]["status"], results[1]["revision"], results[1]["unchanged"]) == ("written", 2, None)
    assert Revision.objects.filter(file=file).count() == 2


def test_another_spelling_of_a_path_meets_the_rule_meant_for_it(client, memory, token, agent):
    import unicodedata

    agent.hook_policy["post"] = {
        "workspace/**.md": {"modes": ["append"], "approval": False},
        "workspace/café.md": {"modes": ["append"], "approval": True},
    }
    agent.save()
    session = call(client, "pre", {}, token).json()["session"]
    nfd = unicodedata.normalize("NFD", "workspace/café.md")
    result = call(
        client,
        "post",
        {"session": session, "writes": [{"path": nfd, "mode": "append", "content": "x\n"}]},
        token,
    ).json()["results"][0]
    assert result["status"] == "proposed"


def test_the_most_specific_rule_wins_whatever_the_order(client, memory, token, agent):
    agent.hook_policy["post"] = {
        "workspace/**.md": {"modes": ["append", "replace"], "approval": False},
        "workspace/secret/*.md": {"modes": ["append"], "approval": True},
    }
    agent.save()
    session = call(client, "pre", {}, token).json()["session"]
    results = call(
        client,
        "post",
        {
            "session": session,
            "writes": [
                {"path": "workspace/secret/keys.md", "mode": "replace", "content": "x\n"},
                {"path": "workspace/secret/keys.md", "mode": "append", "content": "x\n"},
                {"path": "workspace/other/a.md", "mode": "replace", "content": "x\n"},
            ],
        },
        token,
    ).json()["results"]
    assert [r["status"] for r in results] == ["rejected", "proposed", "written"]


def test_tool_and_error_are_recorded_and_logged(client, memory, token, s3):
    session = call(client, "pre", {}, token).json()["session"]
    tool = call(
        client,
        "tool",
        {"session": session, "name": "grafana_query", "summary": "p99 latency 09:00-10:00"},
        token,
    ).json()
    assert tool["recorded"] and tool["logged_to"] == "workspace/logs/tools.md"
    err = call(client, "error", {"session": session, "message": "timeout\ncalling pagerduty"}, token).json()
    assert err["logged_to"] == "workspace/logs/errors.md"
    log = MemoryFile.objects.get(path="logs/errors.md")
    assert s3.get(log.key).decode().endswith(" error: timeout\n")  # the first line: no dumps
    # The pre hook's event is its session row (one INSERT on its path); the rest are events.
    kinds = list(AgentSession.objects.get(pk=session).events.values_list("kind", flat=True))
    assert kinds == ["tool", "error"]


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"HTTP_AUTHORIZATION": "Bearer nope"},
        {"HTTP_AUTHORIZATION": "Basic abc"},
        {"HTTP_AUTHORIZATION": "Bearer mgc_" + "x" * 43},
    ],
)
def test_missing_or_bad_token_is_401(client, memory, headers):
    response = client.post("/api/v1/hooks/pre", data="{}", content_type="application/json", **headers)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"


def test_revoked_and_expired_tokens_are_refused(client, memory, agent, make_user):
    admin = make_user("admin2")
    revoked, raw_revoked = bearer.token_create(agent=agent, name="old", created_by=admin)
    bearer.token_revoke(token=revoked, by=admin)
    _, raw_expired = bearer.token_create(
        agent=agent, name="tmp", created_by=admin, expires_at=timezone.now() - timezone.timedelta(seconds=1)
    )
    for raw in (raw_revoked, raw_expired):
        refused = call(client, "pre", {}, raw)
        assert refused.status_code == 401
        assert refused.json()["error"]["code"] == "unauthorized"


def test_token_of_project_a_cannot_touch_project_b(client, memory, token, make_project, s3, make_user):
    from projects.models import Agent

    other = make_project(slug="tenders")
    other_agent = Agent.objects.create(project=other, slug="writer", name="Writer")
    stranger = make_user("stranger")
    Membership.objects.create(user=stranger, project=other, role="employee")
    _, other_token = bearer.token_create(agent=other_agent, name="b", created_by=stranger)
    other_session = call(client, "pre", {}, other_token).json()["session"]
    # A's token: B's session is not there, B's member is not there.
    response = call(client, "post", {"session": other_session, "writes": []}, token)
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    assert call(client, "pre", {"user": "stranger"}, token).status_code == 404
    assert call(client, "tool", {"session": other_session, "name": "x"}, token).status_code == 404


@pytest.mark.parametrize(
    "raw,code",
    [
        ("{not json", 400),
        ('{"user": 1' + "0" * 5000 + "}", 400),  # past Python's int-parsing limit
        ("[" * 100_000 + "]" * 100_000, 400),  # deeper than the parser goes
        ("[]", 422),
        ('{"user": 5}', 422),
        ('{"unknown": 1}', 422),
        ('{"user": ""}', 422),
        ('{"user": "maria\\u0000"}', 422),  # NUL: no database can keep it in a name
        ('{"session": "run\\u0000"}', 422),
    ],
)
def test_malformed_bodies_are_4xx_json(client, memory, token, raw, code):
    """JSON that cannot be parsed is a 400; parsed JSON that breaks the schema is a 422."""
    response = call(client, "pre", None, token, raw=raw)
    assert response.status_code == code, response.content
    assert response.json()["error"]["code"] in {"invalid_request", "malformed_json"}


def test_post_body_errors(client, memory, token):
    session = call(client, "pre", {}, token).json()["session"]
    bad_mode = call(
        client,
        "post",
        {"session": session, "writes": [{"path": "workspace/x.md", "mode": "delete", "content": "x"}]},
        token,
    )
    assert bad_mode.status_code == 422
    extra = call(
        client,
        "post",
        {
            "session": session,
            "writes": [{"path": "workspace/x.md", "mode": "append", "content": "x", "sudo": True}],
        },
        token,
    )
    assert extra.status_code == 422
    not_uuid = call(client, "post", {"session": "abc", "writes": []}, token)
    assert not_uuid.status_code == 422
    unknown = call(client, "post", {"session": "00000000-0000-0000-0000-000000000000"}, token)
    assert unknown.status_code == 404
    bad_path = call(
        client,
        "post",
        {
            "session": session,
            "writes": [
                {"path": "workspace/../../etc/x.md", "mode": "append", "content": "x"},
                {"path": "/etc/passwd", "mode": "append", "content": "x"},
                {"path": "workspace/x.txt", "mode": "append", "content": "x"},
            ],
        },
        token,
    )
    statuses = [(r["status"], r["code"]) for r in bad_path.json()["results"]]
    assert statuses[0] == ("rejected", "policy_denied") or statuses[0][1] == "bad_path"
    assert all(s == "rejected" for s, _ in statuses)


def test_oversize_body_is_413(client, memory, token, settings):
    settings.MGC_API_MAX_BODY_BYTES = 1000
    response = call(client, "pre", {"user": "x" * 2000}, token)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "body_too_large"


def test_oversize_file_content_is_rejected_per_write(client, memory, token, settings):
    settings.MGC_MAX_FILE_BYTES = 100
    session = call(client, "pre", {}, token).json()["session"]
    result = call(
        client,
        "post",
        {
            "session": session,
            "writes": [{"path": "workspace/big.md", "mode": "append", "content": "x" * 200}],
        },
        token,
    ).json()["results"][0]
    assert (result["status"], result["code"]) == ("rejected", "content_rejected")


def test_storage_down_is_503_not_500(client, memory, token, s3):
    session = call(client, "pre", {}, token).json()["session"]
    s3.proxy.down = True
    response = call(client, "tool", {"session": session, "name": "x"}, token)
    assert response.status_code == 200  # recorded; the log append failed and says so
    assert "did not answer" in response.json()["log_error"]
    from django.core.cache import cache

    cache.clear()
    response = call(client, "pre", {}, token)
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "storage_unavailable"


def test_openapi_description_is_published(client):
    spec = client.get("/api/v1/openapi.json").json()
    assert {"/api/v1/hooks/pre", "/api/v1/hooks/post", "/api/v1/hooks/tool", "/api/v1/hooks/error"} <= set(
        spec["paths"]
    )


def test_revisions_written_by_hooks_are_gapless(client, memory, token):
    session = call(client, "pre", {}, token).json()["session"]
    for i in range(3):
        call(
            client,
            "post",
            {
                "session": session,
                "writes": [{"path": "workspace/incidents/a.md", "mode": "append", "content": f"- {i}\n"}],
            },
            token,
        )
    numbers = list(
        Revision.objects.filter(file__path="incidents/a.md")
        .order_by("number")
        .values_list("number", flat=True)
    )
    assert numbers == [1, 2, 3, 4]


@pytest.mark.parametrize("number", [2**31, 2**63, 2**64, 10**30, -1])
def test_revision_numbers_out_of_range_are_422_json(client, memory, token, number):
    """The finding: 2^64 reached SQLite and answered 500 (OverflowError)."""
    session = call(client, "pre", {}, token).json()["session"]
    response = call(
        client,
        "post",
        {
            "session": session,
            "writes": [
                {"path": "workspace/x.md", "mode": "replace", "content": "x", "base_revision": number}
            ],
        },
        token,
    )
    assert response.status_code == 422, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert error["details"][0]["loc"] == ["body", "writes", "0", "base_revision"]
    assert not MemoryFile.objects.filter(path="x.md").exists()


def test_error_locations_name_the_field_once_as_the_caller_wrote_it(client, memory, token):
    response = call(client, "post", {"writes": []}, token)  # no session
    assert response.status_code == 422
    assert response.json()["error"]["details"][0]["loc"] == ["body", "session"]


def test_free_form_details_are_stored_even_with_nul_and_lone_surrogates(client, memory, token):
    session = call(client, "pre", {}, token).json()["session"]
    raw = (
        '{"session": "%s", "name": "grep", "details": {"out\\u0000": '
        '["a\\u0000b", "\\ud800", 123456789012345678901234567890]}}' % session
    )
    response = call(client, "tool", None, token, raw=raw)
    assert response.status_code == 200, response.content
    event = SessionEvent.objects.get(pk=response.json()["event"])
    assert event.payload["details"] == {"out\ufffd": ["a\ufffdb", "\ufffd", 123456789012345678901234567890]}


ENDPOINTS = ["hooks/pre", "hooks/post", "hooks/tool", "hooks/error", "sandbox/files"]


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize("method", ["get", "put", "patch", "delete", "options"])
def test_a_wrong_method_is_a_json_405_with_allow(client, token, path, method):
    response = getattr(client, method)(f"/api/v1/{path}", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 405
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["error"]["code"] == "method_not_allowed"
    assert "POST" in response["Allow"]


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/nope",
        "/api/v1/hooks/pre/",
        "/api/v1/",
        "/api/",
        "/api/v2/hooks/pre",
        "/api/v1/hooks/pre/../post",
        "/api/v1/openapi.json/x",
    ],
)
def test_unknown_paths_under_the_api_are_json_404s(client, token, path):
    for method in ("get", "post"):
        response = getattr(client, method)(path, HTTP_AUTHORIZATION=f"Bearer {token}")
        assert response.status_code == 404, (method, path)
        assert response.json()["error"]["code"] == "not_found"


def test_a_server_error_under_the_api_is_json(rf):
    """Whatever Django answers in HTML under the API root, the runner gets the JSON shape."""
    from django.http import HttpResponseServerError

    from projects.middleware import ApiJsonErrorsMiddleware

    html = ApiJsonErrorsMiddleware(lambda request: HttpResponseServerError("<h1>Server Error</h1>"))
    response = html(rf.post("/api/v1/hooks/pre"))
    assert response.status_code == 500
    assert json.loads(response.content)["error"]["code"] == "server_error"
    page = html(rf.get("/p/x/"))  # console pages keep their HTML
    assert page.content == b"<h1>Server Error</h1>"
