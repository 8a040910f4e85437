"""Memory as files an agent reads and edits one command at a time, every change a governed
write: the shared core of the MCP server (runnerkit.mcp) and the backend of Claude's memory
tool (runnerkit.anthropic). Standard library only.

    memory = GovernedMemory(Client(url, token), user="maria")
    memory.start()                                    # pre hook: the prompt, one session
    memory.read("workspace/notes/a.md")               # the head's text and revision
    memory.str_replace("workspace/notes/a.md", "Monday", "Tuesday", key="call-7")
    memory.end()                                      # the last post: the session ends

Reads go through the runner API (`files/list`, `files/read`); each command that changes
memory is one post hook call with end=false, carrying an Idempotency-Key the caller derives
from its runtime's own call id, so a call delivered twice writes once. The console applies
its hook policy to every write: a command comes back written, proposed (a person approves
it first), or refused with the console's reason, which `Refused` carries. Edits are sent as
the narrowest write that says them: text added at the end is an append (which commutes with
other writers and is all an append-only file allows), anything else a replace on the
revision that was read. A replace that meets a newer revision is tried once more on the
current text, so two agents editing different lines both land.
"""

from __future__ import annotations

from runnerkit import placing
from runnerkit.client import ApiError, Client

USER_FILE = "USER.md"
AGENT_FILES = ("SOUL.md", "AGENTS.md", "TOOLS.md")
WORKSPACE = "workspace/"


class Refused(Exception):
    """A command the console (or the file's text) did not let happen; `message` says why in
    words a model can act on, `result` is the console's answer when it gave one."""

    def __init__(self, code: str, message: str, result: dict | None = None):
        super().__init__(message)
        self.code, self.message, self.result = code, message, result or {}


def describe(result: dict) -> str:
    """One line for a write's result, for a model to read."""
    path, status = result.get("path", ""), result.get("status")
    if status == "proposed" and result.get("code") == "quarantined":
        return (
            f"Held for review (proposal {result.get('proposal')}): the text reads like instructions "
            f"planted in memory ({', '.join(result.get('findings') or [])}); an admin or a "
            f"compliance officer decides. Nothing is written to {path}."
        )
    if status == "proposed":
        return (
            f"Proposed (proposal {result.get('proposal')}): a person approves it before "
            f"{path} changes; nothing is written yet."
        )
    if result.get("mode") == "rename":
        return (
            f"Renamed {path} to {result.get('new_path')} (revision "
            f"{result.get('new_revision')}); the history keeps both."
        )
    if result.get("mode") == "delete":
        return f"Deleted {path}; its history is kept (revision {result.get('revision')})."
    if result.get("unchanged"):
        return f"{path} already says that: revision {result.get('revision')} is unchanged."
    return f"Written: {path} is now revision {result.get('revision')}."


class GovernedMemory:
    def __init__(
        self,
        client: Client,
        *,
        user: str | None = None,
        external_ref: str | None = None,
        session: str | None = None,
    ):
        self.client, self.user, self.external_ref = client, user, external_ref
        self.session = session
        self.prompt = ""
        self.answer: dict = {}
        self.ended = False

    # -- the session ---------------------------------------------------------------------------
    def start(self) -> str:
        """Pre hook: opens the console session and returns the assembled memory."""
        answer = self.client.pre(user=self.user, session=self.external_ref)
        self.session, self.prompt, self.ended = answer["session"], answer["prompt"], False
        self.answer = answer
        return self.prompt

    @property
    def system_prompt(self) -> str:
        """The preface and the trusted sections: for the system message."""
        return placing.split(self.answer)[0]

    @property
    def records(self) -> str:
        """The untrusted sections, as the text of a user turn ('' when there are none)."""
        return placing.records_message(placing.split(self.answer)[1])

    def _started(self) -> str:
        if self.session is None:
            self.start()
        return self.session

    def end(self, summary: str = "", error: str | None = None, key: str | None = None) -> None:
        """The last post (end=true, no writes): the console shows the session ended. With
        `error`, an error event saying why comes first."""
        if self.session is None or self.ended:
            return
        base = key or f"end-{self.session}"
        if error:
            self.client.error(self.session, error, key=f"{base}-error")
        self.client.post(self.session, [], summary or None, key=base, end=True)
        self.ended = True

    # -- reads ---------------------------------------------------------------------------------
    def files(self) -> list[dict]:
        """Every live file the agent may read, with its revision, size and policy."""
        return self.client.files_list(self._started())["files"]

    def read(self, path: str) -> dict:
        """{exists, revision, content, writable, modes, approval, delete, rename}."""
        try:
            return self.client.files_read(self._started(), path)
        except ApiError as exc:
            if exc.status in (400, 403, 404):
                raise Refused(exc.code, exc.message) from None
            raise

    def existing(self, path: str) -> dict:
        found = self.read(path)
        if not found["exists"]:
            raise Refused("not_found", f"{path} does not exist.")
        return found

    # -- writes (one post each) ----------------------------------------------------------------
    def write(self, writes: list[dict], key: str, summary: str | None = None) -> list[dict]:
        """One post with `writes`; every result that is not written or proposed raises
        Refused (the results before it stand: the console applied them)."""
        results = self.client.post(self._started(), writes, summary, key=key, end=False)["results"]
        for result in results:
            if result["status"] not in ("written", "proposed"):
                raise Refused(
                    result.get("code") or result["status"], result.get("message") or result["status"], result
                )
        return results

    def create(self, path: str, text: str, key: str) -> dict:
        """A new file (an existing one is refused: edit it instead)."""
        found = self.read(path)
        if found["exists"]:
            raise Refused("exists", f"{path} already exists (revision {found['revision']}); edit it instead.")
        mode = "replace" if "replace" in found["modes"] or "append" not in found["modes"] else "append"
        write = {"path": path, "mode": mode, "content": text}
        if mode == "replace" and found["revision"] is not None:
            write["base_revision"] = found["revision"]  # a deleted file's tombstone
        return self.write([write], key)[0]

    def append(self, path: str, text: str, key: str) -> dict:
        return self.write([{"path": path, "mode": "append", "content": text}], key)[0]

    def replace(self, path: str, text: str, base_revision: int | None, key: str) -> dict:
        write = {"path": path, "mode": "replace", "content": text}
        if base_revision is not None:
            write["base_revision"] = base_revision
        return self.write([write], key)[0]

    def edit(self, path: str, change, key: str) -> tuple[dict, str]:
        """Apply `change` (old text -> new text, raising Refused when it does not apply) to
        the file's current text and send it: an append when it only adds at the end, else a
        replace on the revision read. On a conflict the change is applied once more to the
        current text the console sent back. Returns (result, new text)."""
        found = self.existing(path)
        text, base = found["content"], found["revision"]
        for attempt in (1, 2):
            new = change(text)
            if new.startswith(text) and "append" in found["modes"]:
                write = {"path": path, "mode": "append", "content": new[len(text) :]}
            else:
                write = {"path": path, "mode": "replace", "content": new, "base_revision": base}
            try:
                return self.write([write], key if attempt == 1 else f"{key}-again")[0], new
            except Refused as refused:
                if refused.code != "conflict" or attempt == 2:
                    raise
                text = refused.result.get("head_text") or ""
                base = refused.result.get("head_revision")
        raise AssertionError("unreachable")

    def delete(self, paths: list[str], key: str) -> list[dict]:
        """Delete files (each at the revision read now): one post."""
        writes = [{"path": p, "mode": "delete", "base_revision": self.existing(p)["revision"]} for p in paths]
        return self.write(writes, key)

    def rename(self, moves: list[tuple[str, str]], key: str) -> list[dict]:
        """Rename files (old path -> new path, each at the revision read now): one post."""
        writes = [
            {"path": old, "mode": "rename", "new_path": new, "base_revision": self.existing(old)["revision"]}
            for old, new in moves
        ]
        return self.write(writes, key)
