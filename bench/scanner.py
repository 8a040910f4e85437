"""The poisoning scanner on the post hook (issue 37): a 64 KB replace through the runner API,
with the scanner on the save path (memory/quarantine.py) and with it switched off, the two
interleaved so that a busy machine slows both alike."""

from __future__ import annotations

import json
from itertools import count
from unittest import mock

from bench.fixtures import project_with_memory
from bench.table import Table, interleaved, ms, p50

# Memory as runbooks and notes read: notes, with imperatives, commands and addresses among them.
_LINES = (
    "- {n}.{i}: the deploy of checkout went out at 14:02; error rate stayed under 0.1%.\n",
    "- {n}.{i}: db-2 failover drill passed; replication caught up in 40 s.\n",
    "- {n}.{i}: Maria asked for incident summaries before 10:00, in short bullet points.\n",
    "- {n}.{i}: Always run the tests before you commit; never push to main on a Friday.\n",
    "- {n}.{i}: Never reveal the API key; rotate it with `vault write secret/ci key=...` if it leaks.\n",
    "- {n}.{i}: When the pager fires for db-2, check disk pressure first, then the replication lag.\n",
    "- {n}.{i}: Send the weekly incident digest to sre-team@example.com on Mondays.\n",
    "- {n}.{i}: Decision 2026-11-04: keep the pool size at 40 until the migration is done.\n",
)


def sixty_four_kb(n: int) -> str:
    """64 KB of which every line is new (numbered by the call): the scanner reads it all."""
    text, size, i = [f"# Runbook {n}\n\n"], 0, 0
    while size < 64 * 1024 - 200:
        line = _LINES[i % len(_LINES)].format(n=n, i=i)
        text.append(line)
        size += len(line)
        i += 1
    return "".join(text)


def runner_session(world: dict, slug: str):
    """A project with memory, a test client with its agent's bearer token, and a session its
    pre hook opened: what a runner holds before it posts. (project, agent, post) where
    post(write, key) sends one write with an Idempotency-Key (none when key is empty) and
    returns its result."""
    from django.test import Client

    project, agent, token, _row = project_with_memory(world, slug)
    client = Client()
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    pre = client.post(
        "/api/v1/hooks/pre",
        json.dumps({"user": "bench-employee"}),
        content_type="application/json",
        **headers,
    )
    session = pre.json()["session"]

    def post(write: dict, key: str) -> dict:
        answer = client.post(
            "/api/v1/hooks/post",
            json.dumps({"session": session, "end": False, "writes": [write]}),
            content_type="application/json",
            **({"HTTP_IDEMPOTENCY_KEY": key} if key else {}),
            **headers,
        )
        (result,) = answer.json()["results"]
        return result

    def floor(body: dict) -> None:
        answer = client.post(
            "/api/bench/post-floor", json.dumps(body), content_type="application/json", **headers
        )
        assert answer.status_code == 200, answer.content[:300]

    post.floor = floor
    return project, agent, post


def scanner_off():
    """The poisoning scanner switched off on the save path, in this process only (for the
    bench's with/without rows): every write screens clean."""
    from projects.memory import quarantine

    return mock.patch.object(quarantine, "screen", lambda *args, **kwargs: quarantine.Screening())


def bench_post_scanner(table: Table, world: dict, n: int) -> None:
    _project, _agent, send = runner_session(world, "scanner")
    numbers = count(1)
    bases = {}

    def post(path: str):
        number = next(numbers)
        write = {
            "path": path,
            "mode": "replace",
            "content": sixty_four_kb(number),
            "base_revision": bases.get(path),
        }
        result = send(write, f"bench-scan-{number}")
        if result["status"] != "written":
            table.wrong.append(f"64 KB post: {result}")
        bases[path] = result.get("revision")

    def scanned():
        post("workspace/bench/scanned.md")

    def unscanned():
        with scanner_off():
            post("workspace/bench/unscanned.md")

    with_scanner, without = interleaved([scanned, unscanned], n)
    ratio = p50(with_scanner) / p50(without)
    table.add(
        "post hook: a 64 KB replace, with the poisoning scanner on the save path",
        ms(with_scanner),
        "the same post without the scanner: " + ms(without),
        ratio,
        "<= 1.5x",
        ratio <= 1.5,
    )
