"""`mgc-mcp` driven by the `mcp` SDK's own client, in its own process, against a live console:
over stdio and over streamable HTTP the client lists the tools, reads the memory the pre hook
assembled, and writes through the hook policy; the next pre hook carries the fact; refusals,
proposals and conflicts come back as tool results; the console session ends when the client
goes."""

import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from projects.audit import Actor
from projects.memory import reading, store
from projects.models import AgentSession, MemoryFile, Proposal, SessionEvent
from runnerkit import Client

pytestmark = [pytest.mark.db_independent, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parent.parent
TOOLS = {
    "memory_list",
    "memory_read",
    "memory_append",
    "memory_replace",
    "memory_str_replace",
    "memory_insert",
    "memory_delete",
    "memory_rename",
}


@pytest.fixture
def console(live_server, s3, project, agent, person, token):
    system = Actor.system("t")
    store.file_create(
        project=project,
        scope="agent",
        agent=agent,
        path="SOUL.md",
        content="You analyse incidents.\n",
        actor=system,
    )
    store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="Maria prefers UTC.\n",
        actor=Actor.person(person),
    )
    store.file_create(
        project=project,
        scope="workspace",
        path="incidents/a.md",
        content="# Incident A\n- pool size 20\n",
        actor=system,
    )
    agent.hook_policy["post"]["workspace/**.md"].update(delete="direct", rename="direct")
    agent.save()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "MGC_"))}
    env.update(
        MGC_URL=live_server.url, MGC_RUNNER_TOKEN=token, MGC_USER=person.username, PYTHONPATH=str(ROOT)
    )
    return {"url": live_server.url, "token": token, "user": person.username, "env": env}


def _run(session_body, connect):
    """Run `session_body(client_session)` in a thread of its own (an event loop of its own)."""

    async def main():
        async with connect() as session:
            return await session_body(session)

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, main).result(timeout=120)


def _stdio(console):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    @asynccontextmanager
    async def connect():
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "runnerkit.mcp"], env=console["env"], cwd=str(ROOT)
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            session.initialized = await session.initialize()
            yield session

    return connect


def _text(result) -> str:
    return "\n".join(getattr(part, "text", "") for part in result.content)


async def _conversation(session) -> list[tuple[str, dict, str, bool]]:
    """The calls a model would make, and what each answered: (tool, arguments, text, error)."""
    transcript = []

    async def call(name, **arguments):
        result = await session.call_tool(name, arguments)
        transcript.append((name, arguments, _text(result), bool(result.is_error)))
        return result

    listed = await session.list_tools()
    transcript.append(("list_tools", {}, ", ".join(sorted(t.name for t in listed.tools)), False))
    await call("memory_list")
    read = await call("memory_read", path="workspace/incidents/a.md")
    revision = int(_text(read).split("revision ")[1].split(";")[0])
    await call("memory_append", path="workspace/notes/mcp.md", text="- auth p99 was 900 ms on Dec 3\n")
    await call(
        "memory_str_replace", path="workspace/incidents/a.md", old_str="pool size 20", new_str="pool size 40"
    )
    await call(
        "memory_replace", path="workspace/incidents/a.md", content="stale\n", base_revision=revision
    )  # moved on: a conflict with the current text
    await call("memory_insert", path="workspace/incidents/a.md", insert_line=1, text="- paged at 09:14")
    await call("memory_str_replace", path="workspace/incidents/a.md", old_str="nowhere", new_str="x")
    await call(
        "memory_rename", path="workspace/incidents/a.md", new_path="workspace/incidents/2026-12-03-auth.md"
    )
    await call("memory_append", path="USER.md", text="- prefers short answers\n")
    await call("memory_replace", path="SOUL.md", content="I am someone else.\n", base_revision=1)
    await call("memory_delete", path="workspace/notes/mcp.md")
    resource = await session.read_resource("memory://prompt")
    transcript.append(("read_resource", {"uri": "memory://prompt"}, resource.contents[0].text[:60], False))
    return transcript


def _check(console, transcript, instructions, agent):
    by_tool = [(name, error) for name, _args, _text, error in transcript]
    assert set(transcript[0][2].split(", ")) == TOOLS
    assert "Maria prefers UTC." in instructions and "# Incident A" in instructions
    texts = {i: text for i, (_name, _args, text, _error) in enumerate(transcript)}
    assert "workspace/incidents/a.md  revision 1" in texts[1] and "delete, rename" in texts[1]
    assert texts[2].startswith("workspace/incidents/a.md (revision 1;")
    assert texts[3] == "Written: workspace/notes/mcp.md is now revision 1."
    assert texts[4] == "Written: workspace/incidents/a.md is now revision 2."
    assert by_tool[5] == ("memory_replace", True) and "pool size 40" in texts[5]
    assert by_tool[6] == ("memory_insert", False)
    assert by_tool[7] == ("memory_str_replace", True) and "exactly once" in texts[7]
    assert texts[8].startswith("Renamed workspace/incidents/a.md to workspace/incidents/2026-12-03-auth.md")
    assert texts[9].startswith("Proposed (proposal ")
    assert by_tool[10] == ("memory_replace", True) and "policy_denied" in texts[10]
    assert texts[11].startswith("Deleted workspace/notes/mcp.md")
    assert texts[12].startswith("What follows is your memory")
    moved = MemoryFile.objects.select_related("head", "project").get(path="incidents/2026-12-03-auth.md")
    assert reading.file_read(moved).text == "# Incident A\n- paged at 09:14\n- pool size 40\n"
    assert moved.head.renamed_from.path == "incidents/a.md"
    assert Proposal.objects.get().content == "- prefers short answers\n"
    session = AgentSession.objects.get(external_ref="mcp")
    assert moved.head.session_ref == str(session.pk) and moved.head.author_agent == agent
    _wait_for(lambda: AgentSession.objects.get(pk=session.pk).ended_at is not None)
    ends = [e.payload.get("end") for e in SessionEvent.objects.filter(session=session, kind="post")]
    assert ends[-1] is True and not any(ends[:-1])
    # The next pre hook carries what the MCP session wrote.
    prompt = Client(console["url"], console["token"]).pre(user=console["user"])["prompt"]
    assert "pool size 40" in prompt and "### file: workspace/incidents/2026-12-03-auth.md" in prompt


def _wait_for(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_an_mcp_client_over_stdio_reads_and_writes_governed_memory(console, agent):
    async def body(session):
        # The server names itself with runnerkit's version (hosts show it).
        from runnerkit.version import __version__

        assert session.initialized.server_info.version == __version__
        return session.initialized.instructions, await _conversation(session)

    instructions, transcript = _run(body, _stdio(console))
    _print(transcript)
    _check(console, transcript, instructions, agent)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


MCP_TOKEN = "mcp-test-token-0123456789abcdef"


def _http_server(console, port: int, token: str | None = MCP_TOKEN) -> subprocess.Popen:
    env = dict(console["env"])
    if token:
        env["MGC_MCP_TOKEN"] = token
    return subprocess.Popen(
        [sys.executable, "-m", "runnerkit.mcp", "--transport", "http", "--port", str(port)],
        env=env,
        cwd=str(ROOT),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _http_session(port: int, headers: dict):
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    @asynccontextmanager
    async def connect():
        async with (
            create_mcp_http_client(headers=headers) as http,
            streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            session.initialized = await session.initialize()
            yield session

    return connect


def test_an_mcp_client_over_streamable_http_reads_and_writes_governed_memory(console, agent):
    port = _free_port()
    server = _http_server(console, port)
    try:
        _wait_for(lambda: _listening(port), timeout=30)

        async def body(session):
            return session.initialized.instructions, await _conversation(session)

        instructions, transcript = _run(body, _http_session(port, {"Authorization": f"Bearer {MCP_TOKEN}"}))
        _check(console, transcript, instructions, agent)
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_mcp_over_http_refuses_a_client_without_the_token(console):
    """The SDK's own client without the header, or with another token: 401 with
    WWW-Authenticate: Bearer, before any MCP session (no console session is opened). A server
    started without a token does not start."""
    import urllib.error
    import urllib.request

    refused = subprocess.run(
        [sys.executable, "-m", "runnerkit.mcp", "--transport", "http", "--port", str(_free_port())],
        env=console["env"],
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2 and "MGC_MCP_TOKEN" in refused.stderr
    port = _free_port()
    server = _http_server(console, port)
    try:
        _wait_for(lambda: _listening(port), timeout=30)
        for headers in (
            {},
            {"Authorization": "Bearer mcp-test-token-0123456789abcdeX"},
            {"Authorization": MCP_TOKEN},
        ):

            async def body(session):
                return session.initialized

            with pytest.raises(Exception) as failed:  # noqa: PT011 - an ExceptionGroup of the SDK's
                _run(body, _http_session(port, headers))
            # The SDK hands the 401's JSON-RPC error to the caller (in its task groups).
            assert "MCPError(-32001, \"Unauthorized: send 'Authorization: Bearer" in repr(failed.value)
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/mcp",
                data=b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}',
                headers={
                    "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream",
                    **headers,
                },
            )
            with pytest.raises(urllib.error.HTTPError) as answer:
                urllib.request.urlopen(request, timeout=10)
            assert answer.value.code == 401
            challenge = answer.value.headers["WWW-Authenticate"]
            assert challenge.startswith('Bearer realm="mgc-mcp"')
            assert ('error="invalid_token"' in challenge) == bool(headers)
        assert not AgentSession.objects.filter(external_ref="mcp").exists()
    finally:
        server.terminate()
        server.wait(timeout=10)


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _print(transcript) -> None:
    """The transcript, for a reader of the test's output (-s)."""
    for name, arguments, text, error in transcript:
        print(f"> {name} {arguments}\n< {'ERROR ' if error else ''}{text}\n")
