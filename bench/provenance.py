"""Blame of a long history (issue 36): the Blame tab of the head of a 10,000-revision file
against its Read tab, interleaved. The history is a log people and agents keep writing: each
revision adds a line (every tenth by an agent, in a session with two tool calls) and drops the
oldest past 300 lines. Its revisions and line maps are bulk-written, the maps computed by the
save path's own function (memory.linemaps) over the real texts; only the head's snapshot and
object are put in S3, the only ones either page reads."""

from __future__ import annotations

import time

from bench.fixtures import analyze
from bench.table import Table, interleaved, ms, p50

KEEP = 300  # lines the log keeps


def _line(number: int) -> str:
    return f"- {number:05d} {'agent' if number % 10 == 0 else 'person'} noted incident {number % 97}"


def _lines(number: int) -> list[str]:
    """The log at revision `number`: its last KEEP entries."""
    return [_line(k) for k in range(max(1, number - KEEP + 1), number + 1)]


def _text(number: int) -> bytes:
    return "".join(f"{line}\n" for line in _lines(number)).encode()


def file_with_lineage(world: dict, path: str, count: int):
    import hashlib
    import uuid

    from django.utils import timezone

    from projects.memory import layout, linemaps, records
    from projects.memory.storage import storage_for
    from projects.models import AgentSession, LineMap, MemoryFile, Revision, SearchText, SessionEvent

    project, agent, admin = world["project"], world["agent"], world["admin"]
    file = records.file_ensure(project=project, scope="workspace", path=path)
    storage = storage_for(project)
    revisions, sessions, events = [], [], []
    for number in range(1, count + 1):
        by_agent = number % 10 == 0
        content = _text(number)
        sha = hashlib.sha256(content).hexdigest()
        session = ""
        if by_agent:
            sid = uuid.uuid4()
            session = str(sid)
            sessions.append(AgentSession(id=sid, agent=agent, user=world["employee"], prompt_sha256=sha))
            events += [
                SessionEvent(
                    session_id=sid,
                    kind="tool",
                    payload={"name": "grafana", "details": {"url": f"https://g/{number}"}},
                ),
                SessionEvent(
                    session_id=sid, kind="tool", payload={"name": "search", "details": {"query": "p99"}}
                ),
            ]
        revisions.append(
            Revision(
                file=file,
                number=number,
                sha256=sha,
                size=len(content),
                author_kind="agent" if by_agent else "person",
                author_user=None if by_agent else admin,
                author_agent=agent if by_agent else None,
                author_label=f"agent:{agent.slug}" if by_agent else admin.username,
                session_ref=session,
                message=f"entry {number}",
                snapshot_key=layout.snapshot_key(project.prefix, file.pk, number, sha),
            )
        )
    AgentSession.objects.bulk_create(sessions, batch_size=2000)
    SessionEvent.objects.bulk_create(events, batch_size=2000)
    Revision.objects.bulk_create(revisions, batch_size=2000)
    pks = dict(Revision.objects.filter(file=file).values_list("number", "pk"))
    # The maps, as the save path computes them; a map is kept in memory only while a later
    # revision's skip-delta base may be it.
    maps, rows, previous = {0: []}, [], []
    for number in range(1, count + 1):
        lines = _lines(number)
        idents = linemaps.derive(lines, [(previous, maps[number - 1])], pks[number])
        base = linemaps.skip_base(number)
        rows.append(
            LineMap(
                revision_id=pks[number],
                file=file,
                number=number,
                base=base,
                lines=len(idents),
                data=linemaps.encode(idents, maps[base]),
            )
        )
        maps[number], previous = idents, lines
        for old in [m for m in maps if 0 < m < number and m + (m & -m) <= number + 1]:
            del maps[old]
    LineMap.objects.bulk_create(rows, batch_size=1000)
    head_text = _text(count)
    head = Revision.objects.get(file=file, number=count)
    storage.client.put_object(Bucket=storage.bucket_name, Key=head.snapshot_key, Body=head_text)
    etag = storage.client.put_object(Bucket=storage.bucket_name, Key=file.key, Body=head_text)["ETag"]
    SearchText.objects.create(file=file, number=count, text=head_text.decode(), created_at=timezone.now())
    MemoryFile.objects.filter(pk=file.pk).update(head=head, head_etag=etag)
    analyze()
    return MemoryFile.objects.select_related("head", "project").get(pk=file.pk)


def bench_blame(table: Table, world: dict, count: int, n: int) -> None:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from projects.models import LineMap

    file = file_with_lineage(world, "bench/blame.md", count)
    client = Client()
    client.force_login(world["admin"])
    base = f"/p/{world['project'].slug}/f/{file.pk}/"

    def get(url: str, expect: str):
        def call():
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)
            assert expect in response.content.decode(), (url, expect)

        return call

    last = f"- {count:05d} "
    calls = [get(f"{base}blame/", last), get(base, last[2:])]
    queries = []
    for call in calls:
        with CaptureQueriesContext(connection) as captured:
            call()
        queries.append(len(captured))
    blame_times, read_times = interleaved(calls, n)
    # The console's own CPU for each page, alternating: on a busy machine wall times also carry
    # the wait for the database and S3 under everything else running.
    cpu: list[list[float]] = [[], []]
    for i in range(n):
        for k in (0, 1) if i % 2 == 0 else (1, 0):
            began = time.process_time()
            calls[k]()
            cpu[k].append((time.process_time() - began) * 1000)
    stored = LineMap.objects.filter(file=file)
    rows = stored.count()
    entries = sum(len(bytes(d)) for d in stored.values_list("data", flat=True))
    ratio = p50(blame_times) / p50(read_times)
    table.add(
        f"blame of the head, {count:,} revisions ({KEEP} lines, 1 in 10 by an agent in a session)",
        f"{queries[0]} queries, " + ms(blame_times),
        f"Read tab of the same head: {queries[1]} queries, " + ms(read_times),
        ratio,
        "about the Read tab's time (<= 1.5x)",
        ratio <= 1.5,
    )
    table.add(
        "  the same two pages, CPU of the console's process",
        f"blame: p50 {p50(cpu[0]):.2f} ms",
        f"Read tab: p50 {p50(cpu[1]):.2f} ms",
        p50(cpu[0]) / p50(cpu[1]),
        "",
        None,
    )
    table.add(
        f"  line maps of that history: {rows:,} rows",
        f"{entries / 1024:,.0f} KiB stored in all, {entries / rows:,.0f} bytes a revision",
        "",
        None,
        "",
        None,
    )
