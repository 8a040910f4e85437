"""The adapters, offline, against a live test server: Claude Code's command hooks fed the
documented event payloads, and real agent loops of the OpenAI Agents SDK and LangChain driven by
fake models that call a tool and write memory. Each checks the whole cycle: the next pre hook
sees the new memory, the session receipt, the tool and error events, the audit trail, and that
a replayed event writes nothing twice."""

import io
import json

import pytest

from projects.audit import Actor
from projects.memory import reading, store
from projects.models import AgentSession, AuditEvent, MemoryFile, SessionEvent
from runnerkit import Client
from runnerkit.claude import main as mgc_hook

pytestmark = [pytest.mark.db_independent, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def console(live_server, s3, project, agent, person, token):
    system = Actor.system("t")
    store.file_create(
        project=project,
        scope=MemoryFile.Scope.AGENT,
        agent=agent,
        path="SOUL.md",
        content="You analyse incidents.\n",
        actor=system,
    )
    store.file_create(
        project=project,
        scope=MemoryFile.Scope.USER,
        user=person,
        path="USER.md",
        content="Maria prefers UTC.\n",
        actor=Actor.person(person),
    )
    store.file_create(
        project=project,
        scope=MemoryFile.Scope.WORKSPACE,
        path="incidents/a.md",
        content="# Incident A\n",
        actor=system,
    )
    return {"url": live_server.url, "token": token, "user": person.username}


def _workspace_text(path: str) -> str:
    file = MemoryFile.objects.select_related("head", "project").get(path=path)
    return reading.file_read(file).text


def _events(kind: str) -> list[SessionEvent]:
    return list(SessionEvent.objects.filter(kind=kind).order_by("id"))


# --- Claude Code ---------------------------------------------------------------------------------


def _hook(console, tmp_path, event: dict, *, url=None) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    env = {
        "MGC_URL": url or console["url"],
        "MGC_RUNNER_TOKEN": console["token"],
        "MGC_USER": console["user"],
        "MGC_STATE_DIR": str(tmp_path / "state"),
        "MGC_MEMORY_DIR": str(tmp_path / "memory"),
        "MGC_TIMEOUT": "5",
    }
    code = mgc_hook(stdin=io.StringIO(json.dumps(event)), stdout=stdout, stderr=stderr, env=env)
    return code, stdout.getvalue(), stderr.getvalue()


def _claude(name: str, session: str = "claude-1", **fields) -> dict:
    return {
        "session_id": session,
        "transcript_path": f"/tmp/{session}.jsonl",
        "cwd": "/work",
        "hook_event_name": name,
        **fields,
    }


def test_claude_code_hooks_carry_the_whole_memory_cycle(console, tmp_path, agent):
    code, out, _ = _hook(console, tmp_path, _claude("SessionStart", source="startup"))
    assert code == 0
    context = json.loads(out)["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart"
    assert "<user_profile>\nMaria prefers UTC." in context["additionalContext"]
    session = AgentSession.objects.get(external_ref="claude-1")
    assert session.receipt and session.user.username == console["user"]
    # Once per session: the first prompt does not get the memory again.
    assert _hook(console, tmp_path, _claude("UserPromptSubmit", prompt="Why slow?"))[1] == ""

    tool = _claude(
        "PostToolUse",
        tool_name="Bash",
        tool_input={"command": "grep 5xx log"},
        tool_response={"stdout": "3 hits"},
        tool_use_id="toolu_01",
    )
    for _ in range(2):  # delivered twice
        assert _hook(console, tmp_path, tool)[0] == 0
    assert [e.payload["name"] for e in _events("tool")] == ["Bash"]
    failure = _claude(
        "PostToolUseFailure",
        tool_name="Bash",
        tool_use_id="toolu_02",
        tool_input={"command": "psql"},
        error="connection refused",
    )
    _hook(console, tmp_path, failure)
    _hook(console, tmp_path, failure)
    assert [e.payload["message"] for e in _events("error")] == ["connection refused"]

    # The agent edits its memory folder; Stop sends it, a second Stop sends nothing again.
    folder = next((tmp_path / "memory").iterdir())
    incident = folder / "workspace" / "incidents" / "a.md"
    incident.write_text(incident.read_text() + "\nRoot cause: pool exhaustion.\n")
    stop = _claude("Stop", stop_hook_active=False)
    assert _hook(console, tmp_path, stop)[0] == 0
    assert _hook(console, tmp_path, stop)[0] == 0
    assert _workspace_text("incidents/a.md").count("Root cause: pool exhaustion.") == 1
    head = MemoryFile.objects.select_related("head").get(path="incidents/a.md").head
    assert (head.author_kind, head.author_agent, head.session_ref) == ("agent", agent, str(session.pk))
    assert AuditEvent.objects.filter(action="file.save", actor_agent=agent).exists()

    code, out, _ = _hook(console, tmp_path, _claude("SessionStart", session="claude-2", source="startup"))
    assert "Root cause: pool exhaustion." in json.loads(out)["hookSpecificOutput"]["additionalContext"]


def test_claude_code_is_not_blocked_when_the_console_is_down(console, tmp_path):
    code, out, err = _hook(
        console, tmp_path, _claude("SessionStart", source="startup"), url="http://127.0.0.1:9"
    )
    assert code == 1 and out == ""  # 1: Claude Code's non-blocking error
    assert "goes on without it" in err


def test_claude_code_tells_the_memory_again_after_a_compaction(console, tmp_path):
    _hook(console, tmp_path, _claude("SessionStart", source="startup"))
    assert _hook(console, tmp_path, _claude("UserPromptSubmit", prompt="x"))[1] == ""
    _, out, _ = _hook(console, tmp_path, _claude("SessionStart", source="compact"))
    assert "additionalContext" in out
    assert AgentSession.objects.filter(external_ref="claude-1").count() == 1


# --- OpenAI Agents SDK ---------------------------------------------------------------------------


def _in_own_thread(call, *args, **kwargs):
    """The SDK runs its own event loop; the browser tests leave one running in this thread."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(call, *args, **kwargs).result()


def test_openai_agents_run_with_memory_hooks_and_the_remember_tool(console, agent, tmp_path):
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message, function_call

    from runnerkit.openai_agents import (
        MemoryContext,
        MemoryHooks,
        memory_instructions,
        remember,
    )

    set_tracing_disabled(True)

    @function_tool
    def lookup_alerts(service: str) -> str:
        """Alerts of a service."""
        return f"{service}: 12 alerts, p99 900 ms"

    model = ScriptedModel(
        [
            [function_call("lookup_alerts", {"service": "auth"}, call_id="call_1")],
            [function_call("remember", {"note": "auth p99 was 900 ms on Dec 3"}, call_id="call_2")],
            [assistant_message("Pool exhaustion; noted.")],
        ]
    )
    analyst = Agent(
        name="analyst",
        instructions=memory_instructions("You analyse incidents."),
        model=model,
        tools=[lookup_alerts, remember],
    )
    context = MemoryContext(user=console["user"])
    hooks = MemoryHooks(Client(console["url"], console["token"]))
    result = _in_own_thread(Runner.run_sync, analyst, "Why is auth slow?", context=context, hooks=hooks)
    assert result.final_output == "Pool exhaustion; noted."

    system = model.calls[0].system_instructions
    assert system.startswith("You analyse incidents.") and "Maria prefers UTC." in system
    session = AgentSession.objects.get(pk=context.run.session)
    assert session.external_ref == "openai-agents:analyst"
    assert [e.payload["name"] for e in _events("tool")] == ["lookup_alerts", "remember"]
    notes = MemoryFile.objects.get(path__startswith="notes/")
    assert "auth p99 was 900 ms on Dec 3" in _workspace_text(notes.path)
    assert notes.head.author_agent == agent and notes.head.session_ref == str(session.pk)

    # The end of the run delivered again: nothing new to send, nothing written twice.
    import asyncio

    _in_own_thread(asyncio.run, hooks.on_agent_end(type("Ctx", (), {"context": context})(), analyst, "again"))
    assert _workspace_text(notes.path).count("auth p99 was 900 ms on Dec 3") == 1
    # The run's temporary folder (it held a copy of USER.md) is gone with the run.
    assert not context.run.folder.exists()
    # A post sent again after a crash that lost its answer (the sandbox's state not yet
    # advanced): the same Idempotency-Key and body, so the console replays its first answer.
    from runnerkit import MemoryRun

    run = MemoryRun(Client(console["url"], console["token"]), user=console["user"], folder=tmp_path / "run-2")
    run.start()
    run.remember("pool size raised to 40", path=f"workspace/{notes.path}")
    kept = {
        f: f.read_bytes()
        for f in run.folder.rglob("*")
        if f.is_file() and (f.name == ".mgc-sandbox.json" or ".mgc-base" in f.parts)
    }
    first = run.finish(key="end-of-run-2")
    for f, data in kept.items():
        f.write_bytes(data)
    again = MemoryRun(run.client, folder=run.folder, session=run.session).finish(
        key="end-of-run-2"
    )  # the process that retries, after the crash
    assert first == again
    assert _workspace_text(notes.path).count("pool size raised to 40") == 1

    next_prompt = Client(console["url"], console["token"]).pre(user=console["user"])["prompt"]
    assert "auth p99 was 900 ms on Dec 3" in next_prompt


# --- LangChain -----------------------------------------------------------------------------------


def test_langchain_agent_with_memory_middleware(console, agent):
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool

    from runnerkit.langchain import MemoryMiddleware, remember

    seen: list = []

    class FakeModel(GenericFakeChatModel):
        def bind_tools(self, tools, **kwargs):
            return self

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            seen.append(messages)
            return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    @tool
    def lookup_alerts(service: str) -> str:
        """Alerts of a service."""
        return f"{service}: 12 alerts"

    @tool
    def restart(service: str) -> str:
        """Restart a service."""
        raise RuntimeError(f"{service} is protected")

    model = FakeModel(
        messages=iter(
            [
                AIMessage(
                    "", tool_calls=[{"name": "lookup_alerts", "args": {"service": "auth"}, "id": "lc_1"}]
                ),
                AIMessage(
                    "",
                    tool_calls=[{"name": "remember", "args": {"note": "auth had 12 alerts"}, "id": "lc_2"}],
                ),
                AIMessage("", tool_calls=[{"name": "restart", "args": {"service": "auth"}, "id": "lc_3"}]),
                AIMessage("Done."),
            ]
        )
    )
    middleware = MemoryMiddleware(Client(console["url"], console["token"]), user=console["user"])
    graph = create_agent(
        model,
        tools=[lookup_alerts, remember, restart],
        system_prompt="You analyse incidents.",
        middleware=[middleware],
    )
    with pytest.raises(RuntimeError, match="protected"):
        graph.invoke({"messages": [{"role": "user", "content": "Why is auth slow?"}]})

    system = seen[0][0]
    assert system.type == "system" and "You analyse incidents." in system.text
    assert "Maria prefers UTC." in system.text and "not a message from your operator" in system.text
    # the untrusted workspace goes in a user turn, fenced, not in the system message
    records = seen[0][1]
    assert records.type == "human" and "# Incident A" in records.text and "# Incident A" not in system.text
    assert '<workspace_memory trust="untrusted"' in records.text
    assert seen[0][2].text == "Why is auth slow?"
    assert [e.payload["name"] for e in _events("tool")] == ["lookup_alerts", "remember"]
    assert [e.payload["message"] for e in _events("error")] == ["restart: auth is protected"]


def test_langchain_after_agent_sends_the_remembered_notes(console, agent):
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    from runnerkit.langchain import MemoryMiddleware, remember

    class FakeModel(GenericFakeChatModel):
        def bind_tools(self, tools, **kwargs):
            return self

    model = FakeModel(
        messages=iter(
            [
                AIMessage(
                    "",
                    tool_calls=[
                        {
                            "name": "remember",
                            "args": {"note": "deploys on Fridays broke auth twice"},
                            "id": "lc_9",
                        }
                    ],
                ),
                AIMessage("Noted."),
            ]
        )
    )
    middleware = MemoryMiddleware(Client(console["url"], console["token"]), user=console["user"])
    graph = create_agent(model, tools=[remember], middleware=[middleware])
    graph.invoke({"messages": [{"role": "user", "content": "Remember the Friday deploys."}]})
    notes = MemoryFile.objects.get(path__startswith="notes/")
    assert "deploys on Fridays broke auth twice" in _workspace_text(notes.path)
    assert notes.head.author_agent == agent
    replay = middleware._runs  # the run was finished and forgotten
    assert replay == {}
    prompt = Client(console["url"], console["token"]).pre(user=console["user"])["prompt"]
    assert "deploys on Fridays broke auth twice" in prompt


# --- Runs that fail: nothing the agent wrote is dropped ------------------------------------------


def _ended_with_error(session: AgentSession, *words: str) -> None:
    session.refresh_from_db()
    assert session.ended_at is not None
    messages = [e.payload["message"] for e in _events("error") if e.session_id == session.pk]
    assert any(all(w in m for w in words) for m in messages), messages


def test_an_openai_run_that_raises_still_sends_the_fact_and_ends_with_an_error(console, agent):
    from agents import Agent, MaxTurnsExceeded, function_tool, set_tracing_disabled
    from agents.testing import ScriptedModel, function_call

    from runnerkit.openai_agents import MemoryContext, MemoryHooks, memory_instructions, remember

    set_tracing_disabled(True)

    @function_tool
    def lookup_alerts(service: str) -> str:
        """Alerts of a service."""
        return f"{service}: 12 alerts"

    model = ScriptedModel(
        [
            [function_call("remember", {"note": "the auth pool was exhausted"}, call_id="c1")],
            [function_call("lookup_alerts", {"service": "auth"}, call_id="c2")],
            [function_call("lookup_alerts", {"service": "db"}, call_id="c3")],
        ]
    )
    analyst = Agent(
        name="analyst",
        instructions=memory_instructions("You analyse incidents."),
        model=model,
        tools=[lookup_alerts, remember],
    )
    context = MemoryContext(user=console["user"])
    hooks = MemoryHooks(Client(console["url"], console["token"]))
    with pytest.raises(MaxTurnsExceeded):
        _in_own_thread(hooks.run_sync, analyst, "Why is auth slow?", context=context, max_turns=2)
    notes = MemoryFile.objects.get(path__startswith="notes/")
    assert "the auth pool was exhausted" in _workspace_text(notes.path)
    assert notes.head.author_agent == agent
    _ended_with_error(AgentSession.objects.get(pk=context.run.session), "MaxTurnsExceeded")
    assert not context.run.folder.exists()  # the temporary copy of USER.md is gone


def _fake_model(messages):
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    seen: list = []

    class FakeModel(GenericFakeChatModel):
        def bind_tools(self, tools, **kwargs):
            return self

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            seen.append(messages)
            return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

        async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
            seen.append(messages)
            return await super()._agenerate(messages, stop=stop, run_manager=run_manager, **kwargs)

    return FakeModel(messages=iter(messages)), seen


def test_a_langchain_tool_that_raises_still_sends_the_fact_and_ends_with_an_error(console, agent):
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool

    from runnerkit.langchain import MemoryMiddleware, remember

    @tool
    def restart(service: str) -> str:
        """Restart a service."""
        raise RuntimeError(f"{service} is protected")

    model, _seen = _fake_model(
        [
            AIMessage(
                "",
                tool_calls=[
                    {"name": "remember", "args": {"note": "auth restarts are protected"}, "id": "lc_1"}
                ],
            ),
            AIMessage("", tool_calls=[{"name": "restart", "args": {"service": "auth"}, "id": "lc_2"}]),
            AIMessage("Done."),
        ]
    )
    middleware = MemoryMiddleware(Client(console["url"], console["token"]), user=console["user"])
    graph = create_agent(model, tools=[remember, restart], middleware=[middleware])
    with pytest.raises(RuntimeError, match="protected"):
        graph.invoke({"messages": [{"role": "user", "content": "Restart auth."}]})
    notes = MemoryFile.objects.get(path__startswith="notes/")
    assert "auth restarts are protected" in _workspace_text(notes.path)
    _ended_with_error(AgentSession.objects.get(external_ref="langchain"), "restart", "auth is protected")
    assert middleware._runs == {}


def test_an_async_langchain_run_gets_its_memory_and_sends_its_notes(console, agent):
    import asyncio

    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage

    from runnerkit.langchain import MemoryMiddleware, remember

    model, seen = _fake_model(
        [
            AIMessage(
                "",
                tool_calls=[
                    {
                        "name": "remember",
                        "args": {"note": "deploys on Fridays broke auth twice"},
                        "id": "lc_9",
                    }
                ],
            ),
            AIMessage("Noted."),
        ]
    )
    middleware = MemoryMiddleware(Client(console["url"], console["token"]), user=console["user"])
    graph = create_agent(
        model, tools=[remember], system_prompt="You analyse incidents.", middleware=[middleware]
    )
    result = _in_own_thread(
        asyncio.run,
        graph.ainvoke({"messages": [{"role": "user", "content": "Remember the Friday deploys."}]}),
    )
    assert result["messages"][-1].text == "Noted."
    assert "Maria prefers UTC." in seen[0][0].text
    notes = MemoryFile.objects.get(path__startswith="notes/")
    assert "deploys on Fridays broke auth twice" in _workspace_text(notes.path)
    session = AgentSession.objects.get(external_ref="langchain")
    assert session.ended_at is not None and notes.head.session_ref == str(session.pk)
    assert [e.payload["name"] for e in _events("tool")] == ["remember"]


def test_claude_code_reports_an_edit_of_a_read_only_file_and_puts_it_back(console, tmp_path):
    _hook(console, tmp_path, _claude("SessionStart", source="startup"))
    folder = next((tmp_path / "memory").iterdir())
    soul = folder / "SOUL.md"
    soul.chmod(0o644)  # as root nothing stops the edit anyway
    soul.write_text("I am someone else.\n")
    code, out, err = _hook(
        console,
        tmp_path,
        _claude(
            "PostToolUse",
            tool_name="Edit",
            tool_use_id="toolu_9",
            tool_input={
                "file_path": str(soul),
                "old_string": "You analyse incidents.",
                "new_string": "I am someone else.",
            },
            tool_response={"filePath": str(soul), "structuredPatch": [{"lines": ["+secret"]}]},
        ),
    )
    assert code == 2 and out == ""  # PostToolUse: exit 2 hands stderr to Claude
    assert "SOUL.md: this edit is not kept" in err and "put back" in err
    assert soul.read_text() == "You analyse incidents.\n"
    errors = [e.payload for e in _events("error")]
    assert errors[-1]["details"]["code"] == "not_kept"
    tool = _events("tool")[-1].payload
    assert "I am someone else" not in tool["summary"] and "secret" not in tool["summary"]
    # Changed behind the hooks' back (a shell command): reported at Stop, not dropped.
    soul.write_text("Changed by a script.\n")
    code, _out, err = _hook(console, tmp_path, _claude("Stop", stop_hook_active=False))
    assert code == 1 and "SOUL.md: kept_locally (read_only)" in err
    assert "SOUL.md: kept_locally (read_only)" in _events("error")[-1].payload["message"]
    session = AgentSession.objects.get(external_ref="claude-1")
    assert session.ended_at is not None  # it wrote nothing, and shows ended all the same


def test_claude_code_deleting_a_memory_file_is_a_governed_delete(console, tmp_path, agent):
    agent.hook_policy["post"]["workspace/**.md"]["delete"] = "direct"
    agent.save()
    _hook(console, tmp_path, _claude("SessionStart", source="startup"))
    folder = next((tmp_path / "memory").iterdir())
    (folder / "workspace" / "incidents" / "a.md").unlink()
    (folder / "USER.md").unlink()  # USER.md: no delete in the policy
    code, _out, err = _hook(console, tmp_path, _claude("Stop", stop_hook_active=False))
    incident = MemoryFile.objects.select_related("head").get(path="incidents/a.md")
    assert incident.is_deleted and incident.head.author_agent == agent
    assert code == 1 and "USER.md: kept_locally (deleted_locally)" in err
    assert not MemoryFile.objects.select_related("head").get(path="USER.md").is_deleted
    assert _hook(console, tmp_path, _claude("Stop", stop_hook_active=False))[0] == 1  # no twice
    assert incident.revisions.count() == 2


def test_claude_code_stop_failure_sends_its_details_and_session_end_cleans_up(console, tmp_path):
    _hook(console, tmp_path, _claude("SessionStart", source="startup"))
    folder = next((tmp_path / "memory").iterdir())
    assert (folder / "USER.md").exists()
    _hook(
        console,
        tmp_path,
        _claude("StopFailure", error="invalid_request", error_details="prompt is too long: 212000 tokens"),
    )
    error = _events("error")[-1].payload
    assert error["message"] == "invalid_request: prompt is too long: 212000 tokens"
    assert error["details"]["error_details"] == "prompt is too long: 212000 tokens"
    code, _out, _err = _hook(console, tmp_path, _claude("SessionEnd", reason="other"))
    assert code == 0
    assert not folder.exists() and list((tmp_path / "state").iterdir()) == []
    assert AgentSession.objects.get(external_ref="claude-1").ended_at is not None


def test_mgc_hook_prints_settings_with_its_own_absolute_command():
    import sys

    out = io.StringIO()
    assert mgc_hook(argv=["--settings"], stdout=out) == 0
    settings = json.loads(out.getvalue())
    command = settings["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert command.startswith(sys.executable) and command.endswith("-m runnerkit.claude")
    assert "Edit(./.mgc-memory/**)" in settings["permissions"]["allow"]


# --- The examples a newcomer runs (docs/RUNNERS.md) -----------------------------------------------


@pytest.mark.parametrize(
    "script", ["claude_code_replay.py", "openai_agents_runner.py", "langchain_runner.py"]
)
def test_each_runtimes_example_changes_the_memory(console, tmp_path, script):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "MGC_"))}
    env.update(
        MGC_URL=console["url"],
        MGC_RUNNER_TOKEN=console["token"],
        MGC_USER=console["user"],
        MGC_STATE_DIR=str(tmp_path / "state"),
    )
    done = subprocess.run(
        [sys.executable, str(root / "examples" / script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "has the new memory" in done.stdout


def test_the_replay_example_fails_loudly_when_its_fact_did_not_land(console, tmp_path, agent):
    import os
    import subprocess
    import sys
    from pathlib import Path

    agent.hook_policy["post"].pop("workspace/**.md")  # the notes file is refused now
    agent.save()
    root = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "MGC_"))}
    env.update(
        MGC_URL=console["url"],
        MGC_RUNNER_TOKEN=console["token"],
        MGC_USER=console["user"],
        MGC_STATE_DIR=str(tmp_path / "state"),
    )
    for _run in range(2):  # the second run must not read the first one's folder either
        done = subprocess.run(
            [sys.executable, str(root / "examples" / "claude_code_replay.py")],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 1, done.stdout + done.stderr
        assert "has the new memory" not in done.stdout
        assert "workspace/notes/claude.md: rejected (policy_denied)" in done.stdout
        assert "Nothing is claimed about the memory" in done.stderr


# --- runnerkit as a package of its own -----------------------------------------------------------


@pytest.mark.django_db(transaction=False)
def test_runnerkit_installs_on_its_own_with_the_mgc_hook_command(tmp_path):
    """pip builds it from runnerkit/pyproject.toml; the installed copy imports without the
    console and its `mgc-hook` answers a console that is not there without blocking."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    source, target = tmp_path / "src" / "runnerkit", tmp_path / "site"
    # A copy: pip builds in the source folder, which stays clean that way.
    shutil.copytree(root / "runnerkit", source, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(source)],
        check=True,
        timeout=300,
        capture_output=True,
    )
    assert (target / "bin" / "mgc-hook").exists() and (target / "bin" / "mgc-mcp").exists()
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(target),
        "MGC_URL": "http://127.0.0.1:9",
        "MGC_RUNNER_TOKEN": "mgc_x",
        "MGC_STATE_DIR": str(tmp_path / "state"),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import runnerkit, sys; "
            "print(runnerkit.__file__, runnerkit.__version__, runnerkit.API_VERSION);"
            "from runnerkit.claude import main; sys.exit(main())",
        ],
        input='{"session_id": "s", "hook_event_name": "SessionStart"}',
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.startswith(str(target)) and " v1" in done.stdout
    assert done.returncode == 1 and "goes on without it" in done.stderr
