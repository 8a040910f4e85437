"""The demo's incident analyst over many sessions: how its prompt grows when its own tool and
error logs feed back into it (issue 27, "Logs feed themselves"), and what consolidation does
to its memory (issue 40).

    .venv/bin/python bench/hygiene.py [--sessions 200] [--after 10]

Starts its own S3 server (SeaweedFS) and a throwaway SQLite database, seeds the demo (the real
demo data and agents, `seed_demo`), then runs sessions through the hooks the way a Claude Code
run does: the pre hook, three tool calls whose summaries carry what the tools read and wrote
(as mgc-hook sent them before it left contents out), an error, and a post that appends one line
of notes. Prints the prompt's tokens (and the workspace section's) at the first session and
after the last. Run it on two commits to compare; it asserts nothing.

Issue 40: the sessions are spread over the last 100 days (two a day), and the agent's notes
rot as agents' notes do: it writes down again, every few sessions, a fact it already noted
("db-2 pool size is 20 connections", "restart the api after a deploy", a spelling of it
now and then), and late on it notes a new pool size (a contradiction). Then the table: before
consolidation, after `consolidate`'s merge and contradiction proposals are approved (as a
reviewer would, by the admin), and after its fold of stale notes is approved too (the notes
themselves stay until retention expires them, so the fold costs tokens until then). Each row:
the next session's prompt tokens, the health report's duplicate and stale counts, and the
average stable prefix of `--after` sessions run in that state.
"""

from __future__ import annotations

import argparse
import datetime as dt
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
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--after", type=int, default=10, help="Sessions run to measure each state.")
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
        _run(args.sessions, args.after)
    finally:
        seaweed.stop()


# What the agent notes again every few sessions (the rot consolidation is for).
RECURRING = [
    (3, "- db-2 pool size is 20 connections\n"),
    (5, "- restart the api after a deploy\n"),
    (7, "- Restart the API after a deploy.\n"),
    (11, "- the auth p99 alarm fires after every deploy on monday\n"),
    (13, "- the auth p99 alarm fires after every deploy on mondays\n"),
]
SPAN_DAYS = 100


def _run(sessions: int, after: int) -> None:
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from projects.demo.content import PROJECTS
    from projects.models import Agent
    from projects.runners import prehook

    agent = Agent.objects.get(project__slug=PROJECTS[0]["slug"], slug=PROJECTS[0]["agent"]["slug"])
    user = get_user_model().objects.get(username="employee")
    figures = []
    start = timezone.now() - dt.timedelta(days=SPAN_DAYS)
    for n in range(1, sessions + 2):
        session, assembly = prehook.hook_pre(agent=agent, user=user, external_ref=f"bench-{n}")
        workspace = next((s.tokens for s in assembly.sections if s.tag == "workspace_memory"), 0)
        figures.append((n, assembly.total_tokens, workspace, any(s.truncated for s in assembly.sections)))
        if n > sessions:
            break
        _work(session, n, sessions)
        _backdate(session, start + dt.timedelta(days=SPAN_DAYS * n / sessions))
    print("session  prompt tokens  workspace section  truncated")
    for n, total, workspace, truncated in figures:
        if n in (1, 2, 5, 10, 20, 50, 100, 150, sessions, sessions + 1):
            print(f"{n:>7}  {total:>13}  {workspace:>17}  {'yes' if truncated else 'no'}")
    _consolidation(agent, user, sessions, after)


def _work(session, n: int, sessions: int) -> None:
    """What a session does after its prompt: three tool calls, an error, a post with notes."""
    from projects.runners import hooks

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
    note = f"- session {n}: auth p99 {800 + n} ms; pool on db-2 at 20\n"
    note += "".join(line for every, line in RECURRING if n % every == 0)
    if n == sessions - sessions // 5:
        note += "- db-2 pool size is 40 connections\n"  # raised: the old value stays above
    hooks.hook_post(
        session=session,
        summary=f"bench session {n}",
        writes=[hooks.WriteRequest("workspace/notes/auth.md", "append", note)],
    )


def _backdate(session, when) -> None:
    """The session and what it wrote, as if it ran then."""
    from projects.models import AgentSession, Revision, SessionFile

    AgentSession.objects.filter(pk=session.pk).update(created_at=when)
    SessionFile.objects.filter(session=session).update(created_at=when)
    Revision.objects.filter(session_ref=str(session.pk)).update(created_at=when)


def _measure(agent, user, label: str, first: int, after: int, sessions: int, rows: list) -> int:
    """Run `after` sessions in the memory's present state; a row of figures. Returns the next
    session number."""
    from django.utils import timezone

    from projects.memory.health import prompts
    from projects.memory.health.report import project_health
    from projects.runners import prehook

    totals = project_health(agent.project, agent=agent)["totals"]
    since = timezone.now()
    tokens = []
    for n in range(first, first + after):
        session, assembly = prehook.hook_pre(agent=agent, user=user, external_ref=f"bench-{n}")
        tokens.append(assembly.total_tokens)
        _work(session, n, sessions)
    shares = [share for _s, _p, share in prompts.stability_pairs(agent, since=since, limit=after)]
    rows.append(
        (
            label,
            tokens[0],
            totals["exact_duplicates"],
            totals["near_duplicates"],
            totals["contradictions"],
            totals["stale_notes"],
            sum(shares) / len(shares) if shares else 0.0,
        )
    )
    return first + after


def _consolidation(agent, user, sessions: int, after: int) -> None:
    from django.contrib.auth import get_user_model

    from projects.models import Proposal
    from projects.runners import proposals
    from projects.runners.consolidation import FOLD, consolidate

    admin = get_user_model().objects.get(username="admin")
    rows: list = []
    n = _measure(agent, user, "before consolidation", sessions + 2, after, sessions, rows)
    made = []
    for _round in range(3):  # contradictions in a file wait for its merge to be decided
        run = consolidate(project=agent.project, agent=agent)
        made += run.proposals
        for item in run.proposals:
            if item["job"] != FOLD:
                proposals.proposal_approve(
                    proposal=Proposal.objects.get(pk=item["id"]), by=admin, note="bench"
                )
        if not [p for p in run.proposals if p["job"] != FOLD]:
            break
    jobs = sorted({p["job"] for p in made})
    print(f"\nconsolidate proposed: {', '.join(f'{j} {sum(p["job"] == j for p in made)}' for j in jobs)}")
    n = _measure(agent, user, "merges, contradictions approved", n, after, sessions, rows)
    for item in made:
        if item["job"] == FOLD:
            proposals.proposal_approve(proposal=Proposal.objects.get(pk=item["id"]), by=admin, note="bench")
    _measure(agent, user, "fold approved too", n, after, sessions, rows)
    print(
        f"\n{'state':<32}  {'tokens injected':>15}  {'exact dup':>9}  {'near dup':>8}  "
        f"{'contradictions':>14}  {'stale notes':>11}  {'stable prefix':>13}"
    )
    for label, tokens, exact, near, contradictions, stale, share in rows:
        counts = f"{exact:>9}  {near:>8}  {contradictions:>14}  {stale:>11}"
        print(f"{label:<32}  {tokens:>15}  {counts}  {share:>12.1%}")


if __name__ == "__main__":
    main()
