"""runnerkit.anthropic's governed memory tool driven by the `anthropic` SDK's own tool runner,
against a stand-in Messages API on loopback (an HTTP server of this test that answers with
the tool_use blocks a model would send: view, create, str_replace, insert, delete, rename).
Each command lands as the governed write it means, or comes back refused as the hook policy
says, as an is_error tool result the model reads; no real network."""

import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from projects.audit import Actor
from projects.memory import reading, store
from projects.models import AgentSession, MemoryFile, Proposal, SessionEvent
from runnerkit import Client

pytestmark = [pytest.mark.db_independent, pytest.mark.django_db(transaction=True)]

SCRIPT = [  # one model turn per item: the memory tool calls it asks for
    [{"command": "view", "path": "/memories"}],
    [{"command": "view", "path": "/memories/incidents/a.md"}],
    [
        {
            "command": "create",
            "path": "/memories/notes/claude.md",
            "file_text": "- auth p99 was 900 ms on Dec 3\n",
        },
        {"command": "create", "path": "/memories/incidents/a.md", "file_text": "again"},
    ],
    [
        {
            "command": "str_replace",
            "path": "/memories/incidents/a.md",
            "old_str": "pool size 20",
            "new_str": "pool size 40",
        },
        {"command": "str_replace", "path": "/memories/incidents/a.md", "old_str": "o", "new_str": "0"},
    ],
    [
        {
            "command": "insert",
            "path": "/memories/notes/claude.md",
            "insert_line": 0,
            "insert_text": "# Claude's notes",
        },
        {"command": "insert", "path": "/memories/notes/claude.md", "insert_line": 9, "insert_text": "x"},
        {
            "command": "insert",
            "path": "/memories/USER.md",
            "insert_line": 1,
            "insert_text": "- prefers short answers",
        },
    ],
    [
        {
            "command": "str_replace",
            "path": "/memories/SOUL.md",
            "old_str": "incidents",
            "new_str": "anything",
        },
        {"command": "view", "path": "/memories/../secrets"},
        {"command": "view", "path": "/etc/passwd"},
    ],
    [
        {
            "command": "rename",
            "old_path": "/memories/incidents/a.md",
            "new_path": "/memories/incidents/2026-12-03-auth.md",
        },
        {"command": "delete", "path": "/memories/scratch"},
        {"command": "delete", "path": "/memories/notes/missing.md"},
    ],
]


class StandIn:
    """A Messages API that plays SCRIPT, then ends the turn, and speaks server-side message
    threads as the SDK's tool runner uses them (anthropic 2.10 and up, 2.17 the newest its
    extra allows): a `thread: {"type": "create"}` request starts a conversation the server
    keeps; each later turn is a `continue` from the previous reply's id that sends only the new
    messages (the tool results) and none of the create-only fields. The turn is read from the
    conversation the thread holds, not from how many requests came, so a run that repeats or
    interleaves requests gets the right answers; a `continue` from an id it never gave is
    refused as the API refuses it (`thread_not_found`), and the SDK sends the whole history
    again under a new thread. It keeps every request with the conversation it continued."""

    def __init__(self, lose_threads_at: int | None = None):
        self.requests: list[dict] = []
        self.threads: dict[str, list[dict]] = {}  # reply id -> the conversation up to it
        self.lose_threads_at = lose_threads_at  # forget every thread when this request comes
        self._lock = threading.Lock()
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                thread = body.get("thread") or {}
                with stand_in._lock:
                    if len(stand_in.requests) == stand_in.lose_threads_at:
                        stand_in.threads.clear()  # the server lost them (once)
                        stand_in.lose_threads_at = None
                    if thread.get("type") == "continue":
                        history = stand_in.threads.get(thread.get("previous_message_id"))
                        if history is None:
                            return self._answer(404, THREAD_NOT_FOUND)
                    else:
                        history = []
                    history = [*history, *body["messages"]]
                    turn = sum(1 for message in history if message["role"] == "assistant")
                    stand_in.requests.append({"path": self.path, "body": body, "history": history})
                    if turn < len(SCRIPT):
                        content = [
                            {"type": "tool_use", "id": f"toolu_{turn}_{n}", "name": "memory", "input": call}
                            for n, call in enumerate(SCRIPT[turn])
                        ]
                        stop = "tool_use"
                    else:
                        content, stop = [{"type": "text", "text": "Noted."}], "end_turn"
                    reply_id = f"msg_{uuid.uuid4().hex[:12]}"
                    if thread:
                        stand_in.threads[reply_id] = [*history, {"role": "assistant", "content": content}]
                self._answer(
                    200,
                    {
                        "id": reply_id,
                        "type": "message",
                        "role": "assistant",
                        "model": "stand-in",
                        "content": content,
                        "stop_reason": stop,
                        "stop_sequence": None,
                        "usage": {"input_tokens": 1, "output_tokens": 1},
                    },
                )

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://{self.server.server_address[0]}:{self.server.server_address[1]}"

    def results(self) -> list[tuple[dict, str, bool]]:
        """(the command, what the tool answered, is_error) for every tool_use, in order."""
        out = []
        for turn, request in enumerate(self.requests[1:]):
            blocks = [b for b in request["history"][-1]["content"] if b.get("type") == "tool_result"]
            for call, block in zip(SCRIPT[turn], blocks, strict=True):
                content = block["content"]
                text = (
                    content if isinstance(content, str) else "".join(part.get("text", "") for part in content)
                )
                out.append((call, text, bool(block.get("is_error"))))
        return out


THREAD_NOT_FOUND = {
    "type": "error",
    "error": {
        "type": "not_found_error",
        "message": "The thread to continue was not found.",
        "details": {"error_code": "thread_not_found"},
    },
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
    for name in ("one", "two"):
        store.file_create(
            project=project, scope="workspace", path=f"scratch/{name}.md", content=f"{name}\n", actor=system
        )
    agent.hook_policy["post"]["workspace/**.md"].update(delete="direct", rename="direct")
    agent.save()
    return {"url": live_server.url, "token": token, "user": person.username}


def _in_own_thread(call):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(call).result(timeout=120)


def test_claudes_memory_tool_writes_governed_memory_through_the_tool_runner(console, agent):
    from anthropic import Anthropic

    from runnerkit.anthropic import GovernedMemoryTool

    stand_in = StandIn(lose_threads_at=3)
    try:

        def run():
            with GovernedMemoryTool(Client(console["url"], console["token"]), user=console["user"]) as memory:
                runner = Anthropic(
                    base_url=stand_in.url, api_key="test", max_retries=0
                ).beta.messages.tool_runner(
                    model="stand-in",
                    max_tokens=1024,
                    tools=[memory],
                    system=memory.prompt,
                    messages=[{"role": "user", "content": "Keep what you learn."}],
                )
                return memory, runner.until_done()

        memory, final = _in_own_thread(run)
    finally:
        stand_in.server.shutdown()
    assert final.content[0].text == "Noted."
    assert stand_in.requests[0]["body"]["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    assert "Maria prefers UTC." in stand_in.requests[0]["body"]["system"]
    # The runner kept the conversation on the server: one thread, each later turn a continue
    # with only its tool results.
    assert stand_in.requests[0]["body"]["thread"] == {"type": "create"}
    threads = [r["body"]["thread"]["type"] for r in stand_in.requests]
    assert threads == ["create", "continue", "continue", "create"] + ["continue"] * (len(SCRIPT) - 3)
    assert all(
        len(r["body"]["messages"]) == 1
        for r in stand_in.requests[1:]
        if r["body"]["thread"]["type"] == "continue"
    )
    # The server lost the thread once: the runner sent the whole conversation again under a new
    # one, and no command ran twice (the results below are one per command).
    assert len(stand_in.requests[3]["body"]["messages"]) == 2 * 3 + 1
    assert len(stand_in.requests[-1]["history"]) == 2 * len(SCRIPT) + 1
    results = stand_in.results()
    for call, text, error in results:
        print(f"> {json.dumps(call)}\n< {'ERROR ' if error else ''}{text}\n")
    said = [(text, error) for _call, text, error in results]
    listing = said[0][0]
    assert listing.startswith("Here're the files and directories up to 2 levels deep in /memories")
    assert "/memories/SOUL.md (read-only)" in listing
    assert "/memories/USER.md (append-only, changes need approval)" in listing
    assert "/memories/incidents/a.md\n" in listing + "\n" and "/memories/scratch/" in listing
    assert said[1] == (
        "Here's the content of /memories/incidents/a.md with line numbers:\n"
        "     1\t# Incident A\n     2\t- pool size 20\n     3\t",
        False,
    )
    assert said[2] == ("File created successfully at: /memories/notes/claude.md", False)
    assert said[3] == ("File /memories/incidents/a.md already exists", True)
    assert said[4][0].startswith("The memory file has been edited.") and not said[4][1]
    assert said[5][1] and "Multiple occurrences of old_str `o` in lines: 2, 2." in said[5][0]
    assert said[6] == ("The file /memories/notes/claude.md has been edited.", False)
    assert said[7] == ("Invalid `insert_line` parameter: 9. It should be within the range [0, 2].", True)
    assert said[8][0].startswith("Proposed for approval (proposal ") and not said[8][1]
    assert said[9][1] and "does not let this agent write SOUL.md" in said[9][0]
    assert said[10] == ("Path /memories/../secrets would escape /memories directory", True)
    assert said[11] == ("Path must start with /memories, got: /etc/passwd", True)
    assert said[12] == (
        "Successfully renamed /memories/incidents/a.md to /memories/incidents/2026-12-03-auth.md",
        False,
    )
    assert said[13] == ("Successfully deleted /memories/scratch", False)
    assert said[14] == ("The path /memories/notes/missing.md does not exist", True)

    # What landed, as whose, and the session's end.
    session = AgentSession.objects.get(pk=memory.memory.session)
    notes = MemoryFile.objects.select_related("head", "project").get(path="notes/claude.md")
    assert reading.file_read(notes).text == "# Claude's notes\n- auth p99 was 900 ms on Dec 3\n"
    assert [r.author_kind for r in notes.revisions.all()] == ["agent", "agent"]
    moved = MemoryFile.objects.select_related("head", "project").get(path="incidents/2026-12-03-auth.md")
    assert reading.file_read(moved).text == "# Incident A\n- pool size 40\n"
    assert moved.head.renamed_from.path == "incidents/a.md"
    assert moved.head.session_ref == str(session.pk)
    assert all(MemoryFile.objects.get(path=f"scratch/{n}.md").is_deleted for n in ("one", "two"))
    assert Proposal.objects.get().content == "- prefers short answers\n"
    posts = list(SessionEvent.objects.filter(session=session, kind="post"))
    # One post per command that was a write (7: the file's own checks refused the other five
    # before any), then the last one, which ends the session.
    assert len(posts) == 8 and posts[-1].payload["end"] is True
    assert [p.payload["end"] for p in posts[:-1]] == [False] * 7
    assert AgentSession.objects.get(pk=session.pk).ended_at is not None
    prompt = Client(console["url"], console["token"]).pre(user=console["user"])["prompt"]
    assert "auth p99 was 900 ms on Dec 3" in prompt and "pool size 40" in prompt


def test_a_retried_command_writes_once_and_a_run_that_raises_ends_with_an_error(console):
    from anthropic.types.beta import BetaMemoryTool20250818CreateCommand

    from runnerkit.anthropic import GovernedMemoryTool

    client = Client(console["url"], console["token"])
    tool = GovernedMemoryTool(client, user=console["user"])
    with pytest.raises(RuntimeError, match="model overloaded"):
        with tool:
            command = BetaMemoryTool20250818CreateCommand(
                command="create", path="/memories/notes/once.md", file_text="- once\n"
            )
            tool.execute(command)
            key = tool._key
            # The post's answer lost, the same command sent again with its key: one revision.
            again = client.post(
                tool.memory.session,
                [{"path": "workspace/notes/once.md", "mode": "replace", "content": "- once\n"}],
                key=key,
                end=False,
            )
            assert again["results"][0]["revision"] == 1
            raise RuntimeError("model overloaded")
    notes = MemoryFile.objects.get(path="notes/once.md")
    assert notes.revisions.count() == 1
    session = AgentSession.objects.get(pk=tool.memory.session)
    assert session.ended_at is not None
    errors = SessionEvent.objects.filter(session=session, kind="error")
    assert [e.payload["message"] for e in errors] == ["RuntimeError: model overloaded"]
