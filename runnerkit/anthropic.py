"""A governed backend for Claude's memory tool (`memory_20250818`; `pip install
'runnerkit[anthropic]'`): the `anthropic` SDK's `BetaAbstractMemoryTool`, its files kept by
the Memory Governance Console instead of a local folder.

    from anthropic import Anthropic
    from runnerkit import Client
    from runnerkit.anthropic import GovernedMemoryTool

    with GovernedMemoryTool(Client(url, token), user="maria") as memory:
        runner = Anthropic().beta.messages.tool_runner(
            model="claude-...", max_tokens=2048, tools=[memory], system=memory.prompt,
            messages=[{"role": "user", "content": "Remember that I like coffee"}])
        final = runner.until_done()

- `/memories/<x>` is `workspace/<x>`; `/memories/SOUL.md`, `AGENTS.md`, `TOOLS.md` are the
  agent's own files and `/memories/USER.md` the profile of the person it works for (no
  workspace file may take those names). `view` marks each file read-only, append-only or
  "changes need approval" as the hook policy says.
- Each command is one post hook call (end=false): create, str_replace and insert are sent as
  an append when they only add at the end (all an append-only file allows) and as a replace
  on the revision read otherwise; delete and rename are the console's own delete and rename
  (a folder: one post with a write per file). The policy decides each: written, proposed for
  a person's approval (the result says nothing changed yet), or refused as a `ToolError`,
  which the tool runner hands the model as an `is_error` result.
- The reference local-disk tool's rules hold: paths under /memories, no traversal,
  str_replace needs exactly one match, insert_line in 0..lines, create refuses an existing
  file, rename refuses an existing destination.
- Idempotency-Key: the SDK hands a tool the command's input, not the tool_use id, so the
  key is derived from what identifies the call as closely: the console session, the
  command's position in it and a hash of its input. A retry of the same command (runnerkit
  resends a post whose answer was lost) writes once; a run resumed on the same console
  session (`session=`) that replays the conversation meets the same keys and writes nothing
  twice; two identical commands at different points are two writes, as two tool_use blocks
  would be.
- `with` (or `start()` and `end()`): the pre hook opens one console session, `prompt` is the
  assembled memory for the system prompt; leaving the block ends the session, with an error
  event saying why when it raised.
"""

from __future__ import annotations

import hashlib
import json

from anthropic.lib.tools import ToolError
from anthropic.tools.memory import BetaAbstractMemoryTool

from runnerkit.client import ApiError, Client
from runnerkit.memory import AGENT_FILES, USER_FILE, WORKSPACE, GovernedMemory, Refused

ROOT = "/memories"
LINE_WIDTH = 6  # line numbers as the reference tool prints them


class GovernedMemoryTool(BetaAbstractMemoryTool):
    def __init__(
        self,
        client: Client,
        *,
        user: str | None = None,
        external_ref: str = "claude-memory-tool",
        session: str | None = None,
        cache_control=None,
    ):
        super().__init__(cache_control=cache_control)
        self.memory = GovernedMemory(client, user=user, external_ref=external_ref, session=session)
        self._calls = 0
        self._key = ""

    # -- the session ---------------------------------------------------------------------------
    @property
    def prompt(self) -> str:
        return self.memory.prompt

    @property
    def system_prompt(self) -> str:
        """The preface and the trusted sections, for `system=`; `records` goes in a user turn."""
        return self.memory.system_prompt

    @property
    def records(self) -> str:
        """The untrusted sections, for the first user turn (the Messages API lets them out of
        `system`): `messages=[{"role": "user", "content": [records, question]}]`."""
        return self.memory.records

    def start(self) -> str:
        return self.memory.start()

    def end(self, error: str | None = None) -> None:
        self.memory.end("Claude memory tool run ended", error=error)

    def __enter__(self) -> GovernedMemoryTool:
        if self.memory.session is None:
            self.start()
        return self

    def __exit__(self, kind, value, traceback) -> None:
        self.end(error=f"{kind.__name__}: {value}"[:2000] if kind is not None else None)

    # -- one command, one post -----------------------------------------------------------------
    def execute(self, command):
        self._calls += 1
        body = json.dumps(command.model_dump(mode="json", exclude_none=True), sort_keys=True)
        session = self.memory.session or "-"
        self._key = f"memtool-{session}-{self._calls}-{hashlib.sha256(body.encode('utf-8')).hexdigest()[:24]}"
        try:
            return super().execute(command)
        except Refused as refused:
            raise ToolError(refused.message) from None
        except ApiError as exc:
            unknown = (
                " Whether it was applied is unknown; the same command again is safe."
                if exc.outcome == "unknown"
                else ""
            )
            raise ToolError(f"The memory console did not take it: {exc.message}{unknown}") from None

    def view(self, command) -> str:
        relative = _relative(command.path)
        if relative.endswith(".md"):
            found = self.memory.read(_console_path(relative))
            if found["exists"]:
                return _numbered(command.path, found, command.view_range)
        files = [f for f in self.memory.files() if _under(_shown_path(f["path"]), relative)]
        if not files and relative:
            raise ToolError(f"The path {command.path} does not exist. Please provide a valid path.")
        return _listing(command.path, relative, files)

    def create(self, command) -> str:
        path = _console_path(_file(command.path))
        try:
            result = self.memory.create(path, command.file_text, self._key)
        except Refused as refused:
            if refused.code == "exists":
                raise ToolError(f"File {command.path} already exists") from None
            raise
        return _said(result, f"File created successfully at: {command.path}")

    def str_replace(self, command) -> str:
        path = _console_path(_file(command.path))

        def change(text: str) -> str:
            count = text.count(command.old_str) if command.old_str else 0
            if count == 0:
                raise Refused(
                    "no_match",
                    f"No replacement was performed, old_str "
                    f"`{command.old_str}` did not appear verbatim in "
                    f"{command.path}.",
                )
            if count > 1:
                lines = [text[:at].count("\n") + 1 for at in _occurrences(text, command.old_str)]
                raise Refused(
                    "not_unique",
                    f"No replacement was performed. Multiple "
                    f"occurrences of old_str `{command.old_str}` in lines: "
                    f"{', '.join(map(str, lines))}. Please ensure it is "
                    f"unique",
                )
            return text.replace(command.old_str, command.new_str, 1)

        result, new = self._edit(command.path, path, change)
        line = new[: new.find(command.new_str)].count("\n") if command.new_str in new else 0
        lines = new.split("\n")
        snippet = "\n".join(
            f"{n + 1:>{LINE_WIDTH}}\t{lines[n]}" for n in range(max(0, line - 2), min(len(lines), line + 3))
        )
        return _said(
            result,
            "The memory file has been edited. Here is the snippet showing the "
            "change (with line numbers):\n" + snippet,
        )

    def insert(self, command) -> str:
        path = _console_path(_file(command.path))

        def change(text: str) -> str:
            lines = text.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            if not 0 <= command.insert_line <= len(lines):
                raise Refused(
                    "bad_line",
                    f"Invalid `insert_line` parameter: "
                    f"{command.insert_line}. It should be within the range "
                    f"[0, {len(lines)}].",
                )
            lines.insert(command.insert_line, command.insert_text.rstrip("\n"))
            return "\n".join(lines) + "\n"

        result, _new = self._edit(command.path, path, change)
        return _said(result, f"The file {command.path} has been edited.")

    def delete(self, command) -> str:
        relative = _relative(command.path)
        if not relative:
            raise ToolError("Cannot delete the /memories directory itself")
        results = self.memory.delete(self._paths(command.path, relative), self._key)
        return _said_all(results, f"Successfully deleted {command.path}")

    def rename(self, command) -> str:
        old, new = _relative(command.old_path), _relative(command.new_path)
        if not old:
            raise ToolError("Cannot rename the /memories directory itself")
        if not new:
            raise ToolError(f"The destination {command.new_path} already exists")
        if self._exists(new):
            raise ToolError(f"The destination {command.new_path} already exists")
        moves = [
            (path, _console_path(new + _shown_path(path)[len(old) :]))
            for path in self._paths(command.old_path, old)
        ]
        return _said_all(
            self.memory.rename(moves, self._key),
            f"Successfully renamed {command.old_path} to {command.new_path}",
        )

    # -- helpers -------------------------------------------------------------------------------
    def _edit(self, shown: str, path: str, change):
        try:
            return self.memory.edit(path, change, self._key)
        except Refused as refused:
            if refused.code == "not_found":
                raise ToolError(f"The path {shown} does not exist. Please provide a valid path.") from None
            raise

    def _paths(self, shown: str, relative: str) -> list[str]:
        """The console paths a path names: the file, or every file under the folder."""
        if relative.endswith(".md") and self.memory.read(_console_path(relative))["exists"]:
            return [_console_path(relative)]
        paths = [f["path"] for f in self.memory.files() if _under(_shown_path(f["path"]), relative)]
        if not paths:
            raise ToolError(f"The path {shown} does not exist")
        return paths

    def _exists(self, relative: str) -> bool:
        if relative.endswith(".md") and self.memory.read(_console_path(relative))["exists"]:
            return True
        return any(_under(_shown_path(f["path"]), relative) for f in self.memory.files())


# --- Paths ------------------------------------------------------------------------------------------


def _relative(path: str) -> str:
    """The part of a /memories path after the root ('' for the root itself); ToolError for a
    path outside /memories or one that would climb out of it."""
    if not isinstance(path, str) or not (path == ROOT or path.startswith(ROOT + "/")):
        raise ToolError(f"Path must start with /memories, got: {path}")
    relative = path[len(ROOT) :].strip("/")
    parts = relative.split("/") if relative else []
    if any(part in ("", ".", "..") for part in parts) or "\\" in relative or "\x00" in relative:
        raise ToolError(f"Path {path} would escape /memories directory")
    return relative


def _file(path: str) -> str:
    relative = _relative(path)
    if not relative:
        raise ToolError(f"The path {path} is a directory.")
    return relative


def _console_path(relative: str) -> str:
    """/memories/SOUL.md (and AGENTS.md, TOOLS.md, USER.md) are the agent's and the person's
    own files; anything else is in the workspace."""
    return relative if relative in (*AGENT_FILES, USER_FILE) else WORKSPACE + relative


def _shown_path(path: str) -> str:
    """A console path as it stands under /memories (relative)."""
    return path[len(WORKSPACE) :] if path.startswith(WORKSPACE) else path


def _under(shown: str, folder: str) -> bool:
    return not folder or shown.startswith(folder.rstrip("/") + "/")


def _occurrences(text: str, needle: str):
    start = text.find(needle)
    while start != -1:
        yield start
        start = text.find(needle, start + 1)


# --- What the model reads ---------------------------------------------------------------------------


def _access(entry: dict) -> str:
    if not entry.get("modes") and entry.get("delete") == "never" and entry.get("rename") == "never":
        return " (read-only)"
    if entry.get("modes") == ["append"]:
        return " (append-only" + (", changes need approval)" if entry.get("approval") else ")")
    return " (changes need approval)" if entry.get("approval") else ""


def _size(size: int) -> str:
    if size < 1024:
        return f"{size}B"
    value = size / 1024
    return f"{value:.1f}K" if value != int(value) else f"{int(value)}K"


def _listing(shown: str, relative: str, files: list[dict]) -> str:
    entries: dict[str, str] = {}
    for entry in files:
        rest = _shown_path(entry["path"])[len(relative) + 1 if relative else 0 :]
        parts = rest.split("/")
        if len(parts) > 1:
            entries.setdefault(parts[0] + "/", "")
            if len(parts) > 2:
                continue
        entries[rest] = f"{_size(entry['size'])}\t{shown.rstrip('/')}/{rest}{_access(entry)}"
    lines = [f"{_size(sum(f['size'] for f in files))}\t{shown}"]
    for name in sorted(entries):
        lines.append(entries[name] or f"-\t{shown.rstrip('/')}/{name}")
    return (
        f"Here're the files and directories up to 2 levels deep in {shown}, excluding hidden "
        f"items:\n" + "\n".join(lines)
    )


def _numbered(shown: str, found: dict, view_range) -> str:
    lines = found["content"].split("\n")
    start = 1
    if view_range and len(view_range) == 2:
        first = max(1, view_range[0]) - 1
        last = len(lines) if view_range[1] == -1 else view_range[1]
        lines, start = lines[first:last], first + 1
    numbered = "\n".join(f"{n + start:>{LINE_WIDTH}}\t{line}" for n, line in enumerate(lines))
    return f"Here's the content of {shown} with line numbers{_access(found)}:\n{numbered}"


def _said(result: dict, done: str) -> str:
    if result.get("status") == "proposed":
        return (
            f"Proposed for approval (proposal {result.get('proposal')}): nothing changes "
            f"until a person approves it."
        )
    return done


def _said_all(results: list[dict], done: str) -> str:
    proposed = [r for r in results if r.get("status") == "proposed"]
    if proposed:
        return (
            f"Proposed for approval ({len(proposed)} of {len(results)} file(s)): nothing "
            f"changes until a person approves."
        )
    return done
