"""The console's own MCP endpoint (/mcp/), people signing in through the identity provider
(devtools/oidc_provider, its own process: the session's `identity_provider` fixture).

The first test is the whole way a person goes: the `mcp` SDK's own client with its OAuth
client provider, against a live console, discovers the protected resource metadata, signs in
as alice at the provider (its login form driven from the redirect handler), lists the tools,
appends a fact; the next pre hook for alice carries it and history names her, via MCP. The
others speak the same JSON-RPC with the Django test client, with access tokens the provider
issued by the same authorization code flow (PKCE, a resource indicator)."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests

from projects.audit import Actor
from projects.governance import groups
from projects.memory import reading, store
from projects.models import Agent, AgentSession, AuditEvent, McpSession, MemoryFile, Project, Revision
from projects.runners import prehook
from tests.test_sso import ProviderVisit

pytestmark = [pytest.mark.django_db, pytest.mark.db_independent]  # no locking or SQL of its own: one run
REDIRECT = "http://127.0.0.1:33418/callback"  # the MCP host's loopback port (never listened on)


# --- The provider's side: access tokens as an MCP host gets them ------------------------------


def access_token(provider, username: str, *, resource: str, password: str | None = None) -> str:
    """The authorization code flow of the provider's public MCP client, with PKCE and a
    resource indicator, as a person signing in: the access token."""
    verifier = secrets.token_urlsafe(64)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = {
        "response_type": "code",
        "client_id": provider.mcp_client_id,
        "redirect_uri": REDIRECT,
        "state": "s",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": resource,
        "scope": "openid",
    }
    visit = ProviderVisit(provider, username, password or f"pw-{username}")
    back = visit.authorize(f"{provider.issuer}/authorize/?{urlencode(query)}")
    code = parse_qs(urlsplit(back).query)["code"][0]
    answer = requests.post(
        f"{provider.issuer}/token/",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT,
            "client_id": provider.mcp_client_id,
            "code_verifier": verifier,
            "resource": resource,
        },
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()["access_token"]


@pytest.fixture
def company(sso, s3, project, agent, make_project, make_user):
    """incidents/analyst with alice (employee, group sre), boris (compliance, group audit) and
    carol (employee); tenders/drafter, where alice is no member. Each has a USER.md."""
    boss = make_user("boss", is_superuser=True)
    groups.mapping_save(by=boss, project=project, group="sre", role="employee")
    groups.mapping_save(by=boss, project=project, group="audit", role="compliance")
    tenders = make_project(slug="tenders", name="Tenders")
    Agent.objects.create(project=tenders, slug="drafter", name="Tender drafter")
    for name, group in (("alice", "sre"), ("boris", "audit"), ("carol", "sre")):
        sso.user(name, password=f"pw-{name}", groups=[group])
    store.file_create(
        project=project,
        scope="agent",
        agent=agent,
        path="SOUL.md",
        content="You analyse incidents.\n",
        actor=Actor.system("t"),
    )
    store.file_create(
        project=project,
        scope="workspace",
        path="incidents/a.md",
        content="# Incident A\n- pool size 20\n",
        actor=Actor.system("t"),
    )
    return {"provider": sso, "project": project, "agent": agent, "tenders": tenders}


def profile(project, user, text: str) -> None:
    store.file_create(
        project=project, scope="user", user=user, path="USER.md", content=text, actor=Actor.person(user)
    )


class Mcp:
    """A JSON-RPC client over the Django test client: one MCP session at one endpoint."""

    def __init__(self, client, token: str | None, path: str = "/mcp/"):
        self.client, self.token, self.path = client, token, path
        self.session, self.next_id = None, 0

    def headers(self) -> dict:
        out = {"HTTP_ACCEPT": "application/json, text/event-stream"}
        if self.token:
            out["HTTP_AUTHORIZATION"] = f"Bearer {self.token}"
        if self.session:
            out["HTTP_MCP_SESSION_ID"] = self.session
            out["HTTP_MCP_PROTOCOL_VERSION"] = "2025-11-25"
        return out

    def post(self, method: str, params: dict | None = None, *, notify: bool = False):
        message = {"jsonrpc": "2.0", "method": method, "params": params or {}}
        if not notify:
            self.next_id += 1
            message["id"] = self.next_id
        return self.client.post(
            self.path, json.dumps(message), content_type="application/json", **self.headers()
        )

    def initialize(self) -> dict:
        answer = self.post(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        )
        assert answer.status_code == 200, answer.content
        self.session = answer["Mcp-Session-Id"]
        assert self.post("notifications/initialized", notify=True).status_code == 202
        return answer.json()["result"]

    def call(self, tool: str, **arguments) -> tuple[str, bool]:
        answer = self.post("tools/call", {"name": tool, "arguments": arguments})
        assert answer.status_code == 200, answer.content
        result = answer.json()["result"]
        return result["content"][0]["text"], result.get("isError", False)

    def prompt(self) -> str:
        answer = self.post("resources/read", {"uri": "memory://prompt"})
        return answer.json()["result"]["contents"][0]["text"]


# --- The whole way, with the mcp SDK's own client ---------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_mcp_sdk_client_signs_in_as_alice_and_her_fact_lands_as_her_revision(company, live_server):
    import anyio
    import httpx2
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata

    provider = company["provider"]
    url = f"{live_server.url}/mcp/{company['project'].slug}/{company['agent'].slug}/"
    visit = ProviderVisit(provider, "alice", "pw-alice")
    answers, transcript = {}, []

    class Storage:  # the host's keychain: the client registered ahead, at the provider
        tokens = None

        async def get_tokens(self):
            return self.tokens

        async def set_tokens(self, tokens):
            self.tokens = tokens

        async def get_client_info(self):
            return OAuthClientInformationFull(
                client_id=provider.mcp_client_id, redirect_uris=[REDIRECT], token_endpoint_auth_method="none"
            )

        async def set_client_info(self, info):
            pass

    async def redirect_handler(authorization_url: str) -> None:
        # The browser the host opens: alice signs in on the provider's own login page.
        transcript.append(f"browser -> {authorization_url.split('?')[0]}")
        answers["back"] = await anyio.to_thread.run_sync(visit.authorize, authorization_url)

    async def callback_handler() -> AuthorizationCodeResult:
        query = parse_qs(urlsplit(answers["back"]).query)
        return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0])

    oauth = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            redirect_uris=[REDIRECT], token_endpoint_auth_method="none", client_name="test host"
        ),
        storage=Storage(),
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )

    async def conversation():
        async with (
            httpx2.AsyncClient(auth=oauth, timeout=30) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            init = await session.initialize()
            transcript.append(f"initialize -> {init.server_info.name}; instructions carry alice's memory")
            listed = await session.list_tools()
            transcript.append("tools: " + ", ".join(t.name for t in listed.tools))
            result = await session.call_tool(
                "memory_append", {"path": "workspace/notes/alice.md", "text": "- pool exhausted at 09:14\n"}
            )
            text = result.content[0].text
            transcript.append(f"memory_append -> {text}")
            prompt = (await session.read_resource("memory://prompt")).contents[0].text
            return init, listed, result, prompt

    # In a thread of its own: the browser tests' Playwright leaves an event loop running in
    # this one, and asyncio runs no second loop in a thread that has one.
    with ThreadPoolExecutor(1) as pool:
        init, listed, result, prompt = pool.submit(anyio.run, conversation).result(timeout=120)
    print("\n" + "\n".join(transcript))
    prm = oauth.context.protected_resource_metadata
    assert str(prm.resource) == url and [str(s) for s in prm.authorization_servers] == [provider.issuer]
    assert "memory_append" in {t.name for t in listed.tools} and "memory_use_agent" in {
        t.name for t in listed.tools
    }
    assert (
        not result.is_error
        and result.content[0].text == "Written: workspace/notes/alice.md is now revision 1."
    )
    assert "You analyse incidents." in init.instructions and "<agent_identity>" in prompt
    # The revision is the agent's, on alice's behalf, via MCP: history and the trail say so.
    file = MemoryFile.objects.select_related("head").get(path="notes/alice.md")
    head = file.head
    alice = head.author_user
    assert alice.username == "alice" and head.author_agent == company["agent"]
    assert head.author_label == "agent:analyst for alice via MCP"
    event = AuditEvent.objects.get(action="file.save", object_id=str(file.pk))
    assert event.actor_user == alice and event.actor_label == "agent:analyst for alice via MCP"
    # The MCP session was one console session, ended when the client left (DELETE).
    session = AgentSession.objects.get(via="mcp", user=alice)
    assert session.ended_at is not None and head.session_ref == str(session.pk)
    assert McpSession.objects.get(user=alice).ended_reason == "client_left"
    # alice's next pre hook carries the fact.
    _next, assembly = prehook.hook_pre(agent=company["agent"], user=alice)
    assert "- pool exhausted at 09:14" in assembly.prompt


# --- Without a valid token: 401, nothing written ----------------------------------------------


@pytest.mark.parametrize(
    "switch",
    [
        None,
        {"audience": "http://testserver/another/"},
        {"expired": True},
        {"forge": True},
        {"forge": "own-kid"},
    ],
    ids=["no-token", "wrong-audience", "expired", "other-key", "unknown-key-id"],
)
def test_a_request_without_a_valid_token_is_401_and_writes_nothing(client, company, switch):
    provider = company["provider"]
    token = None
    if switch is not None:
        provider.misbehave(tokens="access", **switch)
        token = access_token(provider, "alice", resource="http://testserver/mcp/")
        provider.misbehave()
    revisions = Revision.objects.count()
    mcp = Mcp(client, token, "/mcp/incidents/analyst/")
    answer = mcp.post(
        "initialize",
        {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    )
    assert answer.status_code == 401
    challenge = answer["WWW-Authenticate"]
    assert challenge.startswith(
        'Bearer resource_metadata="http://testserver/.well-known/oauth-protected-resource/mcp/incidents/analyst"'
    )
    assert ('error="invalid_token"' in challenge) == (token is not None)
    mcp.session = "00000000-0000-4000-8000-000000000000"
    assert (
        mcp.post(
            "tools/call", {"name": "memory_append", "arguments": {"path": "USER.md", "text": "x"}}
        ).status_code
        == 401
    )
    assert Revision.objects.count() == revisions and not McpSession.objects.exists()
    assert not AgentSession.objects.exists()


def test_protected_resource_metadata_names_the_provider(client, sso):
    root = client.get("/.well-known/oauth-protected-resource")
    assert root.status_code == 200 and root.json() == {
        "resource": "http://testserver/mcp/",
        "authorization_servers": [sso.issuer],
        "scopes_supported": ["openid"],
        "bearer_methods_supported": ["header"],
        "resource_name": "Memory Governance Console",
    }
    agent = client.get("/.well-known/oauth-protected-resource/mcp/incidents/analyst").json()
    assert agent["resource"] == "http://testserver/mcp/incidents/analyst/"
    assert client.get("/.well-known/oauth-protected-resource/admin").status_code == 404


# --- What a person reaches is what their role allows -------------------------------------------


def _signed_in(client, company, name: str, path: str = "/mcp/") -> Mcp:
    token = access_token(company["provider"], name, resource="http://testserver/mcp/")
    return Mcp(client, token, path)


def test_alice_reaches_her_projects_agents_and_her_own_profile_only(client, company, django_user_model):
    mcp = _signed_in(client, company, "alice")
    result = mcp.initialize()
    assert "No agent is chosen yet" in result["instructions"]
    alice = django_user_model.objects.get(username="alice")
    carol = django_user_model.objects.create_user("carol-local")
    profile(company["project"], alice, "Alice prefers UTC.\n")
    profile(company["project"], carol, "Carol's secret preference.\n")
    agents, _ = mcp.call("memory_agents")
    assert agents.startswith("incidents/analyst") and "tenders" not in agents
    refused, error = mcp.call("memory_use_agent", project="tenders", agent="drafter")
    assert error and "No agent tenders/drafter" in refused
    # Another project's agent by URL: the same 404 as an agent that does not exist.
    elsewhere = Mcp(client, mcp.token, "/mcp/tenders/drafter/")
    assert elsewhere.post("initialize", {}).status_code == 404
    assert Mcp(client, mcp.token, "/mcp/tenders/nobody/").post("initialize", {}).status_code == 404
    text, error = mcp.call("memory_use_agent", project="incidents", agent="analyst")
    assert not error and "Alice prefers UTC." in text and "Carol" not in text
    own, error = mcp.call("memory_read", path="USER.md")
    assert not error and "Alice prefers UTC." in own
    for path in ("users/carol-local/USER.md", "../users/carol-local/USER.md", "workspace/../USER.md"):
        text, error = mcp.call("memory_read", path=path)
        assert error and "Carol" not in text, path
    # SOUL.md: read, not written (the hook policy has no rule for it).
    assert "You analyse incidents." in mcp.call("memory_read", path="SOUL.md")[0]
    text, error = mcp.call("memory_replace", path="SOUL.md", content="I am someone else.\n", base_revision=1)
    assert error and "policy_denied" in text
    # Her profile through the consent flow: a proposal she decides.
    text, error = mcp.call("memory_append", path="USER.md", text="- prefers short answers\n")
    assert not error and text.startswith("Proposed (proposal ")


def test_a_compliance_colleague_reads_but_never_writes(client, company):
    mcp = _signed_in(client, company, "boris", "/mcp/incidents/analyst/")
    mcp.initialize()
    revisions = Revision.objects.count()
    text, error = mcp.call("memory_read", path="workspace/incidents/a.md")
    assert not error and "# Incident A" in text and "read only (compliance)" in text
    assert AuditEvent.objects.filter(action="read.file", actor_user__username="boris").count() == 1
    for tool, arguments in (
        ("memory_append", {"path": "workspace/notes/x.md", "text": "x\n"}),
        ("memory_replace", {"path": "workspace/incidents/a.md", "content": "y\n", "base_revision": 1}),
        ("memory_delete", {"path": "workspace/incidents/a.md"}),
        ("memory_str_replace", {"path": "workspace/incidents/a.md", "old_str": "20", "new_str": "40"}),
    ):
        text, error = mcp.call(tool, **arguments)
        assert error and "read_only" in text, (tool, text)
    assert Revision.objects.count() == revisions


def test_alice_disabled_at_the_provider_is_refused_within_the_recheck_interval(client, company, settings):
    settings.MGC_OIDC_RECHECK_SECONDS = 1
    mcp = _signed_in(client, company, "alice", "/mcp/incidents/analyst/")
    mcp.initialize()
    assert mcp.post("ping").status_code == 200
    company["provider"].disable("alice")
    disabled = time.perf_counter()
    while (answer := mcp.post("ping")).status_code == 200:
        assert time.perf_counter() - disabled < 3, "still let in"
        time.sleep(0.05)
    elapsed = time.perf_counter() - disabled
    print(
        f"\nMGC_OIDC_RECHECK_SECONDS=1: MCP refused {elapsed * 1000:.0f} ms after the provider disabled alice"
    )
    assert answer.status_code == 401 and elapsed < 1.5
    assert 'error="invalid_token"' in answer["WWW-Authenticate"]
    ended = AuditEvent.objects.get(action="session.ended")
    assert ended.details["via"] == "mcp" and ended.details["mcp_sessions"] == 1
    assert McpSession.objects.get().ended_reason == "signed_out"
    assert AgentSession.objects.get(via="mcp").ended_at is not None


def test_two_people_at_once_on_one_endpoint_each_see_only_their_own_profile(
    client, company, django_user_model
):
    from django.test import Client

    people = {}
    for name in ("alice", "carol"):
        people[name] = _signed_in(Client(), company, name, "/mcp/incidents/analyst/")
        people[name].initialize()  # the first request makes the account (linked by sub)
    for name in ("alice", "carol"):
        profile(
            company["project"], django_user_model.objects.get(username=name), f"{name.title()}'s own notes.\n"
        )
    for name in ("alice", "carol"):  # new sessions: the pre hook now has the profiles
        people[name].session = None
        people[name].initialize()

    # Both sessions open at once, their requests interleaved on the one endpoint.
    prompts = {name: people[name].prompt() for name in ("alice", "carol", "alice", "carol")}
    assert "Alice's own notes." in prompts["alice"] and "Carol" not in prompts["alice"]
    assert "Carol's own notes." in prompts["carol"] and "Alice" not in prompts["carol"]
    # One session is not another's: carol's token cannot use alice's session id.
    stolen = Mcp(Client(), people["carol"].token, "/mcp/incidents/analyst/")
    stolen.session = people["alice"].session
    assert stolen.post("resources/read", {"uri": "memory://prompt"}).status_code == 404


# --- Agent hosts without a person, the transport ----------------------------------------------


def test_a_runner_token_still_works_as_a_bearer_token(client, company, token):
    mcp = Mcp(client, token)
    result = mcp.initialize()
    assert "You analyse incidents." in result["instructions"]
    text, error = mcp.call("memory_append", path="workspace/notes/host.md", text="- from a host\n")
    assert not error, text
    head = MemoryFile.objects.select_related("head").get(path="notes/host.md").head
    assert head.author_label == "agent:analyst via MCP" and head.author_user is None
    assert Mcp(client, "mgc_not-a-token").post("initialize", {}).status_code == 401
    # Another agent's endpoint is not this token's.
    assert Mcp(client, token, "/mcp/tenders/drafter/").post("initialize", {}).status_code == 404


def test_the_transport_get_delete_retries_and_unknown_sessions(client, company, token):
    mcp = Mcp(client, token, "/mcp/incidents/analyst/")
    mcp.initialize()
    assert client.get("/mcp/incidents/analyst/", **mcp.headers()).status_code == 405
    # The same JSON-RPC request again (a client's retry): written once.
    message = {
        "jsonrpc": "2.0",
        "id": 77,
        "method": "tools/call",
        "params": {"name": "memory_append", "arguments": {"path": "workspace/r.md", "text": "- once\n"}},
    }
    for _ in range(2):
        answer = client.post(
            "/mcp/incidents/analyst/", json.dumps(message), content_type="application/json", **mcp.headers()
        )
        assert answer.json()["result"]["content"][0]["text"] == "Written: workspace/r.md is now revision 1."
    file = MemoryFile.objects.get(path="r.md")
    assert reading.file_read(file).text == "- once\n"
    assert mcp.post("nothing/here").json()["error"]["code"] == -32601
    batch = client.post("/mcp/incidents/analyst/", "[]", content_type="application/json", **mcp.headers())
    assert batch.status_code == 400
    real, mcp.session = mcp.session, "not-a-session-id"
    assert mcp.post("ping").status_code == 404
    mcp.session = real
    assert client.delete("/mcp/incidents/analyst/", **mcp.headers()).status_code == 204
    assert mcp.post("ping").status_code == 404
    assert AgentSession.objects.get(via="mcp").ended_at is not None
    assert Project.objects.count() == 2


def test_an_agent_acting_for_a_person_reads_so_in_each_language_and_in_the_objects_metadata(agent, person):
    from django.utils import translation

    from projects.audit import VIA_MCP
    from projects.memory import metadata
    from projects.system_text import actor_shown

    actor = Actor.for_agent(agent, "s-1", on_behalf_of=person, via=VIA_MCP)
    assert actor.label == "agent:analyst for maria via MCP"
    assert actor_shown(actor.label) == "agent:analyst for maria via MCP"
    with translation.override("ru"):
        assert actor_shown(actor.label) == "агент:analyst для maria через MCP"
        assert actor_shown("agent:analyst via MCP") == "агент:analyst через MCP"
    # A half-done save is finished with the same author: the metadata names both.
    back = metadata.actor_from_metadata(metadata.write_metadata(actor, "m", None, None))
    assert (back.agent, back.user, back.via, back.label) == (agent, person, VIA_MCP, actor.label)
