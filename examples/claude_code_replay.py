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
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runnerkit.claude import main as mgc_hook  # noqa: E402


def send(event: dict) -> str:
    out = io.StringIO()
    code = mgc_hook(stdin=io.StringIO(json.dumps(event)), stdout=out)
    print(f"{event['hook_event_name']:<20} exit {code}")
    return out.getvalue()


def main() -> int:
    session = f"demo-{uuid.uuid4().hex[:8]}"
    base = {"session_id": session, "transcript_path": f"{session}.jsonl", "cwd": "."}
    context = send({**base, "hook_event_name": "SessionStart", "source": "startup"})
    if not context:
        return 1
    print(json.loads(context)["hookSpecificOutput"]["additionalContext"][:400], "…\n")
    send({**base, "hook_event_name": "PostToolUse", "tool_name": "Bash",
          "tool_input": {"command": "grep -c 5xx api.log"}, "tool_response": {"stdout": "42"},
          "tool_use_id": "toolu_demo_1"})
    memory = next(Path(".mgc-memory").glob("*"))  # what the agent would edit with its tools
    notes = memory / "workspace" / "notes" / "claude.md"
    notes.parent.mkdir(parents=True, exist_ok=True)
    with notes.open("a") as handle:
        handle.write(f"- {session}: 42 server errors in api.log\n")
    send({**base, "hook_event_name": "Stop", "stop_hook_active": False})
    again = send({**base, "session_id": session + "-next", "hook_event_name": "SessionStart",
                  "source": "startup"})
    seen = "42 server errors" in again
    print("the next session's context", "has" if seen else "does NOT have", "the new memory")
    return 0 if seen else 1


if __name__ == "__main__":
    sys.exit(main())
