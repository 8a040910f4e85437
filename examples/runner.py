"""A small agent runner that shows the whole memory cycle through the console's hooks.

    python examples/runner.py --url http://127.0.0.1:8000 --token mgc_... --user employee

1. pre: the console assembles the prompt from the agent's memory and opens a session;
2. the files are pulled into a sandbox folder (read-only where the policy forbids writing);
3. a fake "model turn" edits the sandbox: appends to a workspace event, writes a new
   workspace note, proposes a rule for AGENTS.md and a fact for USER.md;
4. tool: a tool call is recorded (and logged per the policy);
5. post: the sandbox pushes its changes; each becomes a revision or a proposal;
6. pre again: the next session's prompt contains the new memory.
Exits 0 when the new memory is seen in the next prompt.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runnerkit import Client, Sandbox  # noqa: E402


def fake_model_turn(folder: Path, stamp: str) -> str:
    """What an LLM might do with its memory: returns the line it wants remembered."""
    note = f"Run {stamp}: p99 latency of /authorize back under 200 ms after the pool change."
    workspace = folder / "workspace"
    events = sorted(workspace.rglob("*.md")) if workspace.exists() else []
    if events:  # append to the first episodic file it was shown
        with events[0].open("a", encoding="utf-8") as handle:
            handle.write(f"\n- {note}\n")
    new = workspace / "runs" / f"{stamp}.md"
    new.parent.mkdir(parents=True, exist_ok=True)
    new.write_text(f"# Run {stamp}\n\n{note}\n", encoding="utf-8")
    for name, line in (
        ("AGENTS.md", "- Check the connection pool before scaling out."),
        ("USER.md", "- Asked for latency figures in milliseconds."),
    ):
        target = folder / name
        if target.exists() and target.stat().st_mode & 0o200:
            with target.open("a", encoding="utf-8") as handle:
                handle.write(f"\n{line}\n")
    return note


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--token", required=True)
    parser.add_argument("--user", default=None)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args(argv)
    client = Client(args.url, args.token)

    first = client.pre(user=args.user, session="example-runner")
    print(f"pre: session {first['session']}, {first['total_tokens']} tokens ({first['tokenizer']})")
    for section in first["sections"]:
        files = ", ".join(f"{f['path']}@r{f['revision']}" for f in section["files"]) or "-"
        print(f"  <{section['tag']}> {section['tokens']} tokens  {files}")

    folder = Path(args.workdir or tempfile.mkdtemp(prefix="mgc-sandbox-"))
    box = Sandbox(client, first["session"], folder)
    state = box.pull()
    print(f"sandbox: {len(state['files'])} file(s) in {folder}")

    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
    note = fake_model_turn(folder, stamp)
    tool = client.tool(first["session"], "grafana_query", summary="p99 /authorize, last hour")
    print(f"tool: recorded, logged to {tool.get('logged_to') or '-'}")

    report = box.push(summary=f"example run {stamp}")
    for item in report:
        extra = item.get("revision") or item.get("proposal") or item.get("message") or ""
        print(f"post: {item['status']:<9} {item['path']} {extra}")

    second = client.pre(user=args.user, session="example-runner-next")
    seen = note in second["prompt"]
    print(f"next pre: {second['total_tokens']} tokens; new memory {'is' if seen else 'is NOT'} in the prompt")
    return 0 if seen else 1


if __name__ == "__main__":
    sys.exit(main())
