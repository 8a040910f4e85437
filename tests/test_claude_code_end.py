"""How a Claude Code session ends, fed to `mgc-hook` as the real CLI sends it (the payloads
below are Claude Code 2.1.197's own, captured from `claude -p` runs against a stand-in Messages
API on loopback), against a live console: a turn that writes nothing and a turn with a Write
each end the console session once, with no 4xx, and leave no folder and no state behind;
what the console did not take stays, and only that, and the next session sends it first."""

import json

import pytest

from projects.audit import Actor
from projects.memory import reading, store
from projects.models import AgentSession, MemoryFile, SessionEvent
from tests.test_runner_adapters import _hook, console  # noqa: F401 - the fixture, shared

pytestmark = [pytest.mark.db_independent, pytest.mark.django_db(transaction=True)]

SESSION = "898da0fb-6695-44af-b40d-225c59145f1a"
PROMPT_ID = "4b0d2892-270a-481f-b9cd-cf9e364339d2"
FACT = "- The auth service's p99 was 900 ms on Dec 3.\n"


def _base(session: str, cwd: str) -> dict:
    return {
        "session_id": session,
        "transcript_path": f"/home/maria/.claude/projects/-work/{session}.jsonl",
        "cwd": cwd,
    }


def _turn(session: str, cwd: str) -> dict:
    """The fields every event of a turn carries after SessionStart."""
    return {**_base(session, cwd), "prompt_id": PROMPT_ID, "permission_mode": "acceptEdits"}


def session_start(session: str, cwd: str) -> dict:
    return {**_base(session, cwd), "hook_event_name": "SessionStart", "source": "startup"}


def prompt_submit(session: str, cwd: str) -> dict:
    return {**_turn(session, cwd), "hook_event_name": "UserPromptSubmit", "prompt": "Why was auth slow?"}


def post_tool_use_write(session: str, cwd: str, path: str, content: str) -> dict:
    return {
        **_turn(session, cwd),
        "effort": {"level": "high"},
        "hook_event_name": "PostToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": path, "content": content},
        "tool_response": {
            "type": "create",
            "filePath": path,
            "content": content,
            "structuredPatch": [],
            "originalFile": None,
            "userModified": False,
        },
        "tool_use_id": "toolu_standin_1",
        "duration_ms": 12,
    }


def stop(session: str, cwd: str) -> dict:
    return {
        **_turn(session, cwd),
        "effort": {"level": "high"},
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": "Noted.",
        "background_tasks": [],
        "session_crons": [],
    }


def session_end(session: str, cwd: str) -> dict:
    return {**_base(session, cwd), "prompt_id": PROMPT_ID, "hook_event_name": "SessionEnd", "reason": "other"}


def _start(console, tmp_path, session=SESSION):  # noqa: F811 - the fixture's value
    cwd = str(tmp_path)
    code, out, err = _hook(console, tmp_path, session_start(session, cwd))
    assert code == 0, err
    assert _hook(console, tmp_path, prompt_submit(session, cwd))[0] == 0
    folder = next(p for p in (tmp_path / "memory").iterdir() if (p / "USER.md").exists())
    return cwd, folder, json.loads(out)["hookSpecificOutput"]["additionalContext"]


def _posts(session: str) -> list[dict]:
    return [
        e.payload
        for e in SessionEvent.objects.filter(session__external_ref=session, kind="post").order_by("id")
    ]


def test_a_turn_that_writes_nothing_ends_once_and_leaves_nothing(console, tmp_path):  # noqa: F811
    cwd, folder, _context = _start(console, tmp_path)
    assert (folder / "USER.md").read_text() == "Maria prefers UTC.\n"
    for event in (stop(SESSION, cwd), session_end(SESSION, cwd)):
        code, out, err = _hook(console, tmp_path, event)
        assert (code, out, err) == (0, "", ""), event["hook_event_name"]
    session = AgentSession.objects.get(external_ref=SESSION)
    assert session.ended_at is not None
    assert [p["summary"] for p in _posts(SESSION)] == ["Claude Code stop (turn)"]  # ended once
    assert not folder.exists() and list((tmp_path / "state").iterdir()) == []
    # A SessionEnd delivered again opens nothing and says nothing.
    assert _hook(console, tmp_path, session_end(SESSION, cwd)) == (0, "", "")
    assert AgentSession.objects.count() == 1 and list((tmp_path / "memory").iterdir()) == []


def test_a_turn_with_a_write_lands_it_ends_once_and_leaves_nothing(console, tmp_path, agent):  # noqa: F811
    cwd, folder, context = _start(console, tmp_path)
    assert f"Your memory files are in {folder}" in context
    target = folder / "workspace" / "notes" / "claude.md"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(FACT)  # what Claude Code's Write did before PostToolUse
    code, _out, err = _hook(console, tmp_path, post_tool_use_write(SESSION, cwd, str(target), FACT))
    assert code == 0, err
    for event in (stop(SESSION, cwd), session_end(SESSION, cwd)):
        code, out, err = _hook(console, tmp_path, event)
        assert (code, out, err) == (0, "", ""), event["hook_event_name"]
    file = MemoryFile.objects.select_related("head", "project").get(path="notes/claude.md")
    assert reading.file_read(file).text == FACT
    session = AgentSession.objects.get(external_ref=SESSION)
    assert (file.head.author_agent, file.head.session_ref) == (agent, str(session.pk))
    posts = _posts(SESSION)
    assert len(posts) == 1 and [r["status"] for r in posts[0]["results"]] == ["written"]
    tool = SessionEvent.objects.get(session=session, kind="tool").payload
    assert tool["name"] == "Write" and "900 ms" not in tool["summary"]  # contents left out
    assert not folder.exists() and list((tmp_path / "state").iterdir()) == []


def test_what_the_console_did_not_answer_stays_alone_and_goes_first_next_time(console, tmp_path):  # noqa: F811
    cwd, folder, _context = _start(console, tmp_path)
    target = folder / "workspace" / "notes" / "claude.md"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(FACT)
    down = "http://127.0.0.1:9"  # the console went away before the turn ended
    assert _hook(console, tmp_path, stop(SESSION, cwd), url=down)[0] == 1
    code, out, err = _hook(console, tmp_path, session_end(SESSION, cwd), url=down)
    assert code == 1 and out == ""
    assert "workspace/notes/claude.md" in err and ".mgc-unsent.json" in err and "sends them first" in err
    # Only the unsent post stays: no USER.md, no pulled copies, no state with the prompt.
    assert sorted(p.name for p in folder.iterdir()) == [".mgc-unsent.json"]
    assert oct((folder / ".mgc-unsent.json").stat().st_mode & 0o777) == "0o600"
    assert list((tmp_path / "state").iterdir()) == []
    assert not MemoryFile.objects.filter(path="notes/claude.md").exists()

    # The next session (the console is back) sends it first: its prompt has the fact.
    code, out, err = _hook(console, tmp_path, session_start("next-session", cwd))
    assert code == 0 and FACT.strip() in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "sent what an earlier session left: workspace/notes/claude.md: written" in err
    first = AgentSession.objects.get(external_ref=SESSION)
    file = MemoryFile.objects.select_related("head").get(path="notes/claude.md")
    assert file.head.session_ref == str(first.pk)  # the session that wrote it, never guessed
    assert first.ended_at is not None and not folder.exists()
    # Sent once: a second start finds nothing left to send.
    assert "earlier session" not in _hook(console, tmp_path, session_start("third", cwd))[2]
    assert file.revisions.count() == 1


def test_a_conflict_keeps_only_the_agents_text_to_merge(console, tmp_path):  # noqa: F811
    cwd, folder, _context = _start(console, tmp_path)
    incident = folder / "workspace" / "incidents" / "a.md"
    incident.write_text("# Incident A\n\nRoot cause: the agent's view.\n")
    file = MemoryFile.objects.select_related("head", "project").get(path="incidents/a.md")
    store.file_save(
        file=file, content="# Incident A\n\nA person's view.\n", actor=Actor.system("t"), base_revision=1
    )
    assert _hook(console, tmp_path, stop(SESSION, cwd))[0] == 1  # the conflict, on stderr
    code, _out, err = _hook(console, tmp_path, session_end(SESSION, cwd))
    assert code == 1 and "workspace/incidents/a.md met a newer revision" in err
    kept = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert kept == ["workspace/incidents/a.md"]  # the agent's text, nothing else
    assert "the agent's view" in incident.read_text()
    assert list((tmp_path / "state").iterdir()) == []
    assert len(_posts(SESSION)) == 1
