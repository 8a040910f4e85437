"""One agent run under governance, whatever runtime drives it: the adapters (claude, openai_agents,
langchain) all go through MemoryRun.

    run = MemoryRun(Client(url, token), user="maria")
    run.start()                 # pre hook: the prompt, and the files in a sandbox folder
    run.prompt                  # what to put in the system prompt
    run.tool("grep", "3 hits", key="call-1")      # tool hook
    run.error("timeout", key="call-2-error")       # error hook
    run.remember("Paged on-call at 09:14")         # a line for the workspace, sent at finish
    run.finish(summary="triaged INC-42")           # post hook: every changed file

Every call that writes carries an Idempotency-Key: the caller's (derived from the runtime's
own event ids, so a replayed event writes nothing twice) or one derived from the content.
"""

from __future__ import annotations

import datetime as dt
import shutil
import tempfile
from pathlib import Path

from runnerkit import placing
from runnerkit.client import Client
from runnerkit.sandbox import Sandbox

NOTES_PATH = "workspace/notes/{date}.md"


class MemoryRun:
    def __init__(
        self,
        client: Client,
        *,
        user: str | None = None,
        folder: str | Path | None = None,
        direct=None,
        external_ref: str | None = None,
        session: str | None = None,
        prompt: str = "",
    ):
        self.client = client
        self.user = user
        self.folder = Path(folder) if folder else None
        self.direct = direct
        self.external_ref = external_ref
        self.session = session
        self.prompt = prompt
        self.answer: dict = {}  # the pre hook's answer: sections with their trust
        self._sandbox: Sandbox | None = None
        self._temporary = False  # the folder is a temporary one this run made
        self.finished = False  # the session was ended (the post hook's last call)

    @property
    def started(self) -> bool:
        return self.session is not None

    def start(self) -> str:
        """Pre hook, then the session's files pulled into the sandbox folder; the prompt."""
        answer = self.client.pre(user=self.user, session=self.external_ref)
        self.session, self.prompt, self.answer = answer["session"], answer["prompt"], answer
        if self.folder is None:
            self.folder = Path(tempfile.mkdtemp(prefix="mgc-run-"))
            self._temporary = True
        self.sandbox.pull()
        return self.prompt

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = Sandbox(self.client, self.session, self.folder, direct=self.direct)
        return self._sandbox

    def instructions(self, base: str = "", *, outside: bool = False) -> str:
        """The runtime's own instructions followed by the memory, as one system prompt. With
        `outside`, the untrusted sections are left out: the caller puts `records()` in a user
        turn (docs/RUNNERS.md says which adapters do)."""
        memory = (placing.split(self.answer)[0] if outside and self.answer else self.prompt).strip()
        if memory and self.folder is not None:
            memory += (
                f"\n\nYour memory files are in {self.folder}; what you change there is "
                f"kept when the run ends."
            )
        return "\n\n".join(part for part in (base.strip(), memory) if part)

    def records(self) -> str:
        """The untrusted sections, as the text of a user turn ('' when there are none)."""
        return placing.records_message(placing.split(self.answer)[1]) if self.answer else ""

    def tool(self, name: str, summary: str = "", details: dict | None = None, key: str | None = None) -> dict:
        return self.client.tool(self.session, name, summary, details, key=key)

    def error(self, message: str, details: dict | None = None, key: str | None = None) -> dict:
        return self.client.error(self.session, message, details, key=key)

    def remember(self, note: str, path: str | None = None) -> Path:
        """Add a line to a workspace file in the sandbox; sent by finish()."""
        relative = path or NOTES_PATH.format(date=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"))
        target = self.folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        text = target.read_text(encoding="utf-8") if target.exists() else ""
        if text and not text.endswith("\n"):
            text += "\n"
        target.write_text(f"{text}- {note.strip()}\n", encoding="utf-8")
        return target

    def finish(
        self,
        summary: str | None = None,
        key: str | None = None,
        error: BaseException | str | None = None,
        end: bool = True,
    ) -> list[dict]:
        """Post hook: every file changed in the sandbox since the last finish, and the end of
        the session (sent even when nothing changed). With `error` (the run raised), an error
        event saying why comes first: what the agent wrote is kept all the same. A temporary
        folder this run made (it holds a copy of the person's USER.md) is removed once its
        changes are in the console; one that was not sent is kept."""
        if self.finished:
            return []  # ended already (on_agent_end, then the finally path): nothing twice
        if error is not None:
            why = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
            self.error(
                f"The run failed: {why}"[:2000], details={"phase": "run"}, key=f"run-error-{self.session}"
            )
        results = self.sandbox.push(summary=summary, key=key, end=end)
        if end:
            self.finished = True
            self.cleanup()
        return results

    def cleanup(self) -> None:
        """Remove the sandbox folder if this run made it as a temporary one."""
        if self._temporary and self.folder is not None and self.folder.exists():
            shutil.rmtree(self.folder, ignore_errors=True)
            self._sandbox = None
