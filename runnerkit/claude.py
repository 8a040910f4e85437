"""`mgc-hook`: Claude Code (and Claude Agent SDK) command hooks for governed memory.

`mgc-hook --settings > .claude/settings.json` writes the settings for the events below, with
this install's absolute command (a hook command missing from Claude Code's PATH only logs
"not found") and an allow rule for edits under .mgc-memory/ (Claude Code applies it once the
folder is trusted; `claude -p --permission-mode acceptEdits` is the other way: docs/RUNNERS.md).
Claude Code runs it with one JSON event on stdin; it answers on stdout:

- SessionStart, UserPromptSubmit: the pre hook, once per session (again after /clear or a
  compaction); the prompt goes back as `hookSpecificOutput.additionalContext` and the memory
  files into a folder the agent can edit, <MGC_MEMORY_DIR>/<16 hex of sha256(session_id)>/;
- PostToolUse: the tool hook (tool name and a short summary, file contents left out); an
  Edit or Write of a memory file the policy does not let the agent change is put back, sent
  as an error event, and told to the model (stderr, exit 2);
- PostToolUseFailure, StopFailure: the error hook (StopFailure with its error_details);
- Stop, SessionEnd: the post hook with every memory file the agent changed in that folder,
  sent even when nothing changed so that the session shows ended (the console ends a session
  once: SessionEnd after Stop changes nothing); a file the console did not write is an error
  event and a line on stderr. SessionEnd removes the folder (it holds a copy of USER.md) and
  the session's state whatever the console answered, except what it did not take: a post it
  never answered stays as .mgc-unsent.json (its writes only), sent first by the next session
  in the same memory folder; a file that met a newer revision (a conflict) stays as the agent
  wrote it, to merge. stderr says what stayed and where.

Claude's session id maps to one console session (kept in MGC_STATE_DIR). Each call's
Idempotency-Key comes from the event (tool_use_id, the changes sent), so an event delivered
twice writes nothing twice. The console being down never blocks the agent: a message on
stderr and exit code 1, which Claude Code treats as a non-blocking error.

Environment: MGC_URL (the console), MGC_RUNNER_TOKEN, MGC_USER (the employee, optional),
MGC_MEMORY_DIR (default <cwd>/.mgc-memory), MGC_STATE_DIR (default ~/.cache/mgc-hook),
MGC_TIMEOUT (seconds, default 10), MGC_RUNNER_S3_* for the direct sandbox (optional).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import sys
from pathlib import Path

from runnerkit.client import ApiError, Client
from runnerkit.run import MemoryRun

START_EVENTS = {"SessionStart", "UserPromptSubmit"}
UNSENT = ".mgc-unsent.json"  # a post the console never answered, kept to send again
NOT_BLOCKING = 1  # Claude Code: exit 2 blocks the agent, any other non-zero code does not


def _summary(value, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _key(*parts: str) -> str:
    return "claude-" + hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:40]


class ClaudeHook:
    def __init__(self, env=os.environ):
        self.env = env
        url, token = env.get("MGC_URL", ""), env.get("MGC_RUNNER_TOKEN", "")
        if not url or not token:
            raise ValueError("set MGC_URL and MGC_RUNNER_TOKEN")
        self.client = Client(url, token, timeout=float(env.get("MGC_TIMEOUT", "10")), attempts=3)
        self.state_dir = Path(env.get("MGC_STATE_DIR") or Path.home() / ".cache" / "mgc-hook")
        self.direct = None
        if env.get("MGC_RUNNER_S3_ACCESS_KEY_ID"):
            from runnerkit.direct import DirectStorage  # only with the s3 extra installed

            self.direct = DirectStorage.from_environment()

    def _state_path(self, claude_session: str) -> Path:
        return self.state_dir / f"{hashlib.sha256(claude_session.encode()).hexdigest()[:32]}.json"

    def _load(self, claude_session: str) -> dict | None:
        path = self._state_path(claude_session)
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None

    def state(self, claude_session: str) -> dict | None:
        """What mgc-hook keeps for a Claude session: its console session and memory folder."""
        return self._load(claude_session)

    def _save(self, claude_session: str, state: dict) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self._state_path(claude_session).write_text(json.dumps(state), encoding="utf-8")

    def _memory_dir(self, event: dict) -> Path:
        return Path(self.env.get("MGC_MEMORY_DIR") or Path(event.get("cwd") or ".") / ".mgc-memory")

    def _run(self, event: dict, state: dict | None) -> MemoryRun:
        folder = (
            Path(state["folder"])
            if state
            else self._memory_dir(event) / hashlib.sha256(event["session_id"].encode()).hexdigest()[:16]
        )
        return MemoryRun(
            self.client,
            user=self.env.get("MGC_USER") or None,
            folder=folder,
            direct=self.direct,
            external_ref=event["session_id"],
            session=state["session"] if state else None,
            prompt=state.get("prompt", "") if state else "",
        )

    def _started(self, event: dict) -> tuple[MemoryRun, dict]:
        """The console session of this Claude session, opened (pre hook) if there is none."""
        claude_session = event["session_id"]
        state = self._load(claude_session)
        run = self._run(event, state)
        if state is None:
            self._send_unsent(self._memory_dir(event))  # an earlier session's last changes first
            run.start()
            state = {
                "session": run.session,
                "folder": str(run.folder),
                "injected": False,
                "prompt": run.prompt,
            }
            self._save(claude_session, state)
        return run, state

    def handle(self, event: dict) -> dict | None:
        """The JSON to print for this event, or None. What the agent should hear about (an
        edit that is not kept, a write the console refused) is left in `problems`, for stderr,
        with `exit_code`."""
        self.problems: list[str] = []
        self.exit_code = 0
        name = event.get("hook_event_name", "")
        claude_session = event.get("session_id", "")
        if not claude_session:
            raise ValueError("the event has no session_id")
        if name in START_EVENTS:
            if name == "SessionStart" and event.get("source") in ("clear", "compact"):
                state = self._load(claude_session)
                if state:  # the context was cleared or compacted: tell the memory again
                    state["injected"] = False
                    self._save(claude_session, state)
            run, state = self._started(event)
            if state["injected"]:
                return None
            state["injected"] = True
            self._save(claude_session, state)
            return {"hookSpecificOutput": {"hookEventName": name, "additionalContext": run.instructions()}}
        if name == "SessionEnd" and self._load(claude_session) is None:
            return None  # ended and cleaned up already (a replayed SessionEnd): nothing to open
        run, _state = self._started(event)
        if name == "PostToolUse":
            use = event.get("tool_use_id") or _key(json.dumps(event, sort_keys=True))
            run.tool(
                event.get("tool_name") or "tool",
                _summary(
                    {
                        "input": _without_contents(event.get("tool_input")),
                        "response": _without_contents(event.get("tool_response")),
                    }
                ),
                details={"tool_use_id": use},
                key=_key(claude_session, "tool", use),
            )
            self._check_edit(run, event, use)
        elif name in ("PostToolUseFailure", "StopFailure"):
            use = event.get("tool_use_id") or ""
            error = event.get("error") or f"{name} without a message"
            message = _summary(error, 2000)
            if event.get("error_details"):  # StopFailure: the API's own words on what failed
                message = _summary(f"{error}: {_summary(event['error_details'], 1800)}", 2000)
            details = {
                "event": name,
                "tool_name": event.get("tool_name"),
                "tool_use_id": use,
                "error_details": event.get("error_details"),
            }
            run.error(
                message,
                details={k: v for k, v in details.items() if v},
                key=_key(claude_session, name, use, message),
            )
        elif name == "Stop":
            results = run.finish(summary=f"Claude Code stop ({event.get('reason') or 'turn'})")
            self._report(run, results, claude_session, name)
        elif name == "SessionEnd":
            self._end(run, claude_session, f"Claude Code sessionend ({event.get('reason') or 'other'})")
        return None

    def _end(self, run: MemoryRun, claude_session: str, summary: str) -> None:
        """The last post, then the folder goes whatever the console answered: only what it
        did not take stays (_forget)."""
        results, unsent = [], None
        try:
            results = run.finish(summary=summary)
        except ApiError as exc:
            unsent = run.sandbox.sending
            self.problems.append(f"mgc-hook: the memory console did not take the session's end ({exc}).")
            self.exit_code = NOT_BLOCKING
        else:
            try:
                self._report(run, results, claude_session, "SessionEnd")
            except ApiError as exc:  # the error events themselves: stderr has said it all
                self.problems.append(f"mgc-hook: the console did not record what it refused ({exc}).")
        self._forget(run, claude_session, results, unsent)

    def _check_edit(self, run: MemoryRun, event: dict, use: str) -> None:
        """An Edit or Write of a memory file the policy does not let the agent change succeeds
        on disk (as root nothing stops it), and would be dropped at Stop: put the file back,
        record an error event, and tell the model now (exit 2 on PostToolUse: stderr reaches
        Claude)."""
        if event.get("tool_name") not in EDIT_TOOLS:
            return
        target = (event.get("tool_input") or {}).get("file_path") or ""
        try:
            path = Path(target).resolve().relative_to(run.folder.resolve()).as_posix()
        except (ValueError, OSError):
            return
        refusal = run.sandbox.refused_edit(path)
        if refusal is None:
            return
        run.sandbox.put_back(path)
        message = (
            f"{path}: this edit is not kept ({refusal}); the file was put back as it "
            f"was. Change your memory only where the policy allows."
        )
        run.error(
            message,
            details={"tool_use_id": use, "path": path, "code": "not_kept"},
            key=_key(event["session_id"], "not-kept", use),
        )
        self.problems.append(f"mgc-hook: {message}")
        self.exit_code = BLOCKING

    def _report(self, run: MemoryRun, results: list[dict], claude_session: str, name: str) -> None:
        """Every file the post did not write or propose: an error event, and stderr."""
        for result in results:
            if result.get("status") in ("written", "proposed"):
                continue
            message = (
                f"{result['path']}: {result.get('status')} "
                f"({result.get('code') or '-'}): {result.get('message') or ''}"
            ).strip()
            run.error(
                message,
                details={"event": name, "path": result["path"], "code": result.get("code")},
                key=_key(claude_session, name, "not-written", message),
            )
            self.problems.append(f"mgc-hook: {message}")
            self.exit_code = NOT_BLOCKING

    def _forget(self, run: MemoryRun, claude_session: str, results: list[dict], unsent: dict | None) -> None:
        """At SessionEnd: remove the memory folder (it holds a copy of the person's USER.md)
        and the session's state (it holds the prompt), whatever the console answered. What it
        did not take stays, and only that: a post it never answered, as .mgc-unsent.json (the
        writes, sent first by the next session), and a file that met a newer revision, as the
        agent wrote it (to merge; sending it again would only meet that revision again)."""
        self._state_path(claude_session).unlink(missing_ok=True)
        folder = run.folder
        if unsent is not None and unsent.get("writes"):
            _write_private(folder / UNSENT, json.dumps(unsent, ensure_ascii=False))
        else:
            unsent = None
        conflicts = sorted({r["path"] for r in results if r.get("status") == "conflict" and r.get("path")})
        kept = {UNSENT} if unsent else set()
        kept |= set(conflicts)
        _remove_all_but(folder, kept)
        if unsent:
            paths = ", ".join(w["path"] for w in unsent["writes"])
            self.problems.append(
                f"mgc-hook: {len(unsent['writes'])} change(s) ({paths}) were not sent; they are kept "
                f"in {folder / UNSENT} and the next session in this folder sends them first. "
                f"Everything else of this session was removed."
            )
        for path in conflicts:
            self.problems.append(
                f"mgc-hook: {path} met a newer revision and was not written; your text stays in "
                f"{folder / path} to merge (remove it when done). Everything else was removed."
            )

    def _send_unsent(self, memory_dir: Path) -> None:
        """Posts earlier sessions could not send (the console did not answer), sent again with
        their own Idempotency-Key, so a post that did land the first time is answered, not
        applied twice. Before this session's pre hook: its prompt has them."""
        for path in sorted(memory_dir.glob(f"*/{UNSENT}")):
            try:
                post = json.loads(path.read_text(encoding="utf-8"))
                session, writes, key = post["session"], post["writes"], post["key"]
            except (OSError, ValueError, KeyError, TypeError):
                continue
            try:
                answer = self.client.post(
                    session, writes, post.get("summary"), key=key, end=post.get("end", True)
                )
            except ApiError as exc:
                if exc.status in (0, 409) or exc.status >= 500:
                    self.problems.append(
                        f"mgc-hook: {path} is still not sent ({exc}); the next session tries again."
                    )
                else:
                    self.problems.append(
                        f"mgc-hook: the console refuses the changes kept in {path} ({exc}); "
                        f"copy what you need from it and remove it."
                    )
                continue
            path.unlink(missing_ok=True)
            for result in answer.get("results", []):
                what = result.get("status")
                if result.get("revision"):
                    what = f"{what}, revision {result['revision']}"
                elif result.get("message"):
                    what = f"{what}: {result['message']}"
                where = result.get("path")
                self.problems.append(f"mgc-hook: sent what an earlier session left: {where}: {what}")
            if not any(path.parent.iterdir()):  # nothing else stayed (no conflict to merge)
                path.parent.rmdir()


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(text)


def _remove_all_but(folder: Path, kept: set[str]) -> None:
    """Remove everything in `folder` but the files named (relative paths), and the folder
    itself when nothing is kept."""
    if not kept:
        shutil.rmtree(folder, ignore_errors=True)
        return
    for item in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        relative = item.relative_to(folder).as_posix()
        if item.is_dir():
            if not any(item.iterdir()):
                item.rmdir()
        elif relative not in kept:
            item.unlink(missing_ok=True)
    if folder.exists() and not any(folder.iterdir()):
        folder.rmdir()


EDIT_TOOLS = {"Edit", "Write", "MultiEdit", "NotebookEdit"}
BLOCKING = 2  # PostToolUse: the tool ran already; exit 2 hands stderr to Claude


def _without_contents(value):
    """A tool's input or response for the tool event, without file contents (a Write's
    content, an Edit's strings, a Read's file): the event says what was done, the memory
    files say what they hold."""
    if isinstance(value, dict):
        return {k: ("…" if k in CONTENT_KEYS and v else _without_contents(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_contents(item) for item in value]
    return value


CONTENT_KEYS = {
    "content",
    "old_string",
    "new_string",
    "file_text",
    "new_source",
    "edits",
    "originalFile",
    "structuredPatch",
    "file",
}


def settings(command: str | None = None) -> dict:
    """`.claude/settings.json` for these hooks. The command is this Python's absolute path
    running runnerkit.claude, so it works whatever PATH Claude Code gives its hooks; Edit of
    the memory folder is allowed, as `claude -p` otherwise refuses it."""
    command = command or f"{shlex.quote(sys.executable)} -m runnerkit.claude"
    hook = [{"type": "command", "command": command}]
    every = {"matcher": "*", "hooks": hook}
    return {
        "permissions": {"allow": ["Edit(./.mgc-memory/**)", "Write(./.mgc-memory/**)"]},
        "hooks": {
            "SessionStart": [{"hooks": hook}],
            "UserPromptSubmit": [{"hooks": hook}],
            "PostToolUse": [every],
            "PostToolUseFailure": [every],
            "Stop": [{"hooks": hook}],
            "StopFailure": [{"hooks": hook}],
            "SessionEnd": [{"hooks": hook}],
        },
    }


def main(argv: list[str] | None = None, stdin=None, stdout=None, stderr=None, env=None) -> int:
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--settings"]:  # print .claude/settings.json with this install's command
        stdout.write(json.dumps(settings(), indent=2) + "\n")
        return 0
    event: dict = {}
    try:
        event = json.loads(stdin.read() or "{}")
        hook = ClaudeHook(os.environ if env is None else env)
        answer = hook.handle(event)
    except ApiError as exc:
        print(
            f"mgc-hook: the memory console did not take the {event.get('hook_event_name')} "
            f"event ({exc}); the agent goes on without it.",
            file=stderr,
        )
        return NOT_BLOCKING
    except (ValueError, OSError) as exc:
        print(f"mgc-hook: {exc}; the agent goes on without governed memory.", file=stderr)
        return NOT_BLOCKING
    for problem in hook.problems:
        print(problem, file=stderr)
    if answer is not None:
        stdout.write(json.dumps(answer, ensure_ascii=False))
    return hook.exit_code


if __name__ == "__main__":
    sys.exit(main())
