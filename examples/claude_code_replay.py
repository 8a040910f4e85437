"""Replays a Claude Code session's hook events through `mgc-hook`, as Claude Code would run it,
so you can watch an agent's memory change in the console without Claude itself.

    export MGC_URL=http://127.0.0.1:8000 MGC_RUNNER_TOKEN=mgc_... MGC_USER=employee
    .venv/bin/python examples/claude_code_replay.py

For the real thing, install runnerkit (`pip install ./runnerkit`) and copy
examples/claude_code_settings.json into your project's .claude/settings.json.
"""

from __future__ import annotations

import io
import json
import os
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runnerkit.claude import ClaudeHook  # noqa: E402
from runnerkit.claude import main as mgc_hook  # noqa: E402


def send(event: dict) -> str:
    out, err = io.StringIO(), io.StringIO()
    code = mgc_hook(stdin=io.StringIO(json.dumps(event)), stdout=out, stderr=err)
    print(f"{event['hook_event_name']:<20} exit {code}")
    if err.getvalue():
        print(err.getvalue().rstrip())
    if code not in (0, 2):  # 2: feedback to the model (an edit not kept); anything else failed
        raise SystemExit(
            f"mgc-hook failed on {event['hook_event_name']}; see above. Nothing is claimed about the memory."
        )
    return out.getvalue()


def main() -> int:
    session = f"demo-{uuid.uuid4().hex[:8]}"
    base = {"session_id": session, "transcript_path": f"{session}.jsonl", "cwd": "."}
    context = send({**base, "hook_event_name": "SessionStart", "source": "startup"})
    if not context:
        print(
            "mgc-hook gave no context: is the console running, MGC_URL and MGC_RUNNER_TOKEN right?",
            file=sys.stderr,
        )
        return 1
    print(json.loads(context)["hookSpecificOutput"]["additionalContext"][:400], "…\n")
    send(
        {
            **base,
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "grep -c 5xx api.log"},
            "tool_response": {"stdout": "42"},
            "tool_use_id": "toolu_demo_1",
        }
    )
    # This session's own folder, as mgc-hook recorded it (never another run's).
    memory = Path(ClaudeHook(os.environ).state(session)["folder"])
    notes = memory / "workspace" / "notes" / "claude.md"
    notes.parent.mkdir(parents=True, exist_ok=True)
    fact = f"{session}: 42 server errors in api.log"
    with notes.open("a") as handle:
        handle.write(f"- {fact}\n")
    send({**base, "hook_event_name": "Stop", "stop_hook_active": False})
    send({**base, "hook_event_name": "SessionEnd", "reason": "other"})
    again = send(
        {**base, "session_id": session + "-next", "hook_event_name": "SessionStart", "source": "startup"}
    )
    send({**base, "session_id": session + "-next", "hook_event_name": "SessionEnd", "reason": "other"})
    if fact not in again:
        print(
            f"FAILED: the next session's context does NOT have this run's fact ({fact!r}); "
            f"the Stop hook posted nothing the console kept.",
            file=sys.stderr,
        )
        return 1
    print("the next session's context has the new memory")
    return 0


if __name__ == "__main__":
    sys.exit(main())
