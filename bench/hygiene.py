"""The demo's incident analyst after 20 sessions: how its prompt grows when its own tool and
error logs feed back into it (issue 27, "Logs feed themselves").

    .venv/bin/python bench/hygiene.py [--sessions 20]

Starts its own S3 server (SeaweedFS) and a throwaway SQLite database, seeds the demo (the real
demo data and agents, `seed_demo`), then runs sessions through the hooks the way a Claude Code
run does: the pre hook, three tool calls whose summaries carry what the tools read and wrote
(as mgc-hook sent them before it left contents out), an error, and a post that appends one line
of notes. Prints the prompt's tokens (and the workspace section's) at the first session and
after the last. Run it on two commits to compare; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RUNBOOK = (
    "# Runbook: auth latency\n\n1. Check the pool size on db-2 (`SHOW max_connections`).\n"
    "2. Compare p99 with the last deploy.\n3. Page the on-call if p99 > 800 ms for 10 "
    "minutes.\n"
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=20)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mgc-hygiene-"))
    from devtools.seaweed import SeaweedMini

    seaweed = SeaweedMini(tmp / "s3", access_key="bench-key", secret_key="bench-secret").start()
    try:
        os.environ.update(
            {
                "DATABASE_URL": f"sqlite:///{tmp / 'db.sqlite3'}",
                "MGC_S3_ENDPOINT_URL": seaweed.endpoint,
                "MGC_S3_ACCESS_KEY_ID": "bench-key",
                "MGC_S3_SECRET_ACCESS_KEY": "bench-secret",
                "MGC_S3_BUCKET": "bench",
                "MGC_SECRET_KEY": "bench-" + "x" * 50,
                "MGC_LOG_LEVEL": "ERROR",
                "DJANGO_SETTINGS_MODULE": "memoryadmin.settings",
            }
        )
        import django

        django.setup()
        from django.conf import settings
        from django.core.management import call_command

        settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
        call_command("migrate", verbosity=0)
        call_command("ensure_bucket", verbosity=0)
        call_command("seed_demo", verbosity=0, stdout=open(os.devnull, "w"))  # noqa: SIM115
        _run(args.sessions)
    finally:
        seaweed.stop()


def _run(sessions: int) -> None:
    from django.contrib.auth import get_user_model

    from projects.demo.content import PROJECTS
    from projects.models import Agent
    from projects.runners import hooks, prehook

    agent = Agent.objects.get(project__slug=PROJECTS[0]["slug"], slug=PROJECTS[0]["agent"]["slug"])
    user = get_user_model().objects.get(username="employee")
    figures = []
    for n in range(1, sessions + 2):
        session, assembly = prehook.hook_pre(agent=agent, user=user, external_ref=f"bench-{n}")
        workspace = next((s.tokens for s in assembly.sections if s.tag == "workspace_memory"), 0)
        figures.append((n, assembly.total_tokens, workspace, any(s.truncated for s in assembly.sections)))
        if n > sessions:
            break
        for call, (name, tool_input, response) in enumerate(
            [
                ("Read", {"file_path": "/work/runbooks/auth.md"}, {"file": {"content": RUNBOOK}}),
                ("Bash", {"command": "grep -c ' 5.. ' api.log"}, {"stdout": f"{40 + n}"}),
                (
                    "Edit",
                    {
                        "file_path": "/work/.mgc-memory/x/workspace/notes/auth.md",
                        "old_string": "p99",
                        "new_string": f"p99 {800 + n} ms",
                    },
                    {"filePath": "/work/.mgc-memory/x/workspace/notes/auth.md"},
                ),
            ]
        ):
            summary = json.dumps({"input": tool_input, "response": response})[:300]
            hooks.hook_event(
                session=session,
                kind="tool",
                payload={"name": name, "summary": summary, "details": {"tool_use_id": f"toolu_{n}_{call}"}},
            )
        hooks.hook_event(
            session=session,
            kind="error",
            payload={"message": f"psql: connection to db-2 refused (attempt {n})"},
        )
        hooks.hook_post(
            session=session,
            summary=f"bench session {n}",
            writes=[
                hooks.WriteRequest(
                    "workspace/notes/auth.md",
                    "append",
                    f"- session {n}: auth p99 {800 + n} ms; pool on db-2 at 20\n",
                )
            ],
        )
    print("session  prompt tokens  workspace section  truncated")
    for n, total, workspace, truncated in figures:
        if n in (1, 2, 5, 10, 15, 20, sessions + 1):
            print(f"{n:>7}  {total:>13}  {workspace:>17}  {'yes' if truncated else 'no'}")


if __name__ == "__main__":
    main()
