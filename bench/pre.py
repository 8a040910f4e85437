"""The pre hook in process: cold and warm against their floors (with and without a runner's
direct credentials, with the change feed off and on) and what a warm one overlaps, how stale
a prompt can be with the change feed, a direct write the console refuses, and how the hook
grows with workspace files and with earlier sessions."""

from __future__ import annotations

import concurrent.futures
import itertools
import os
import time

from bench.fixtures import (
    PARAGRAPH,
    agent_with_token,
    analyze,
    bulk_files,
    cold_start,
    hook_client,
    project_with_memory,
    settled,
    text_of,
)
from bench.table import Table, interleaved, ms, p50, timed

# --- Pre hook --------------------------------------------------------------------------------------


def bench_pre(table: Table, world: dict, n: int) -> None:
    """Cold and warm pre hooks against their floors: for an agent no runner may write for (no
    LIST at all), and for one whose runner holds credentials that may write the workspace,
    with the change feed off (one LIST a hook) and on (no LIST while nothing changed)."""
    import boto3
    from botocore.config import Config
    from django.conf import settings

    from projects.memory import feed
    from projects.models import Revision

    snapshots = list(
        Revision.objects.filter(file__project=world["project"]).values_list("snapshot_key", flat=True)
    )
    assert len(snapshots) == 6
    s3 = boto3.client(
        "s3",
        endpoint_url=os.environ["MGC_S3_ENDPOINT_URL"],
        region_name="us-east-1",
        aws_access_key_id=os.environ["MGC_S3_ACCESS_KEY_ID"],
        aws_secret_access_key=os.environ["MGC_S3_SECRET_ACCESS_KEY"],
        config=Config(s3={"addressing_style": "path"}, max_pool_connections=16),
    )
    pool = concurrent.futures.ThreadPoolExecutor(6)

    def cold_floor():
        list(pool.map(lambda k: s3.get_object(Bucket="bench", Key=k)["Body"].read(), snapshots))

    pre, floor = hook_client(world["token"])
    direct, _floor = hook_client(world["direct_token"])
    feed_on, feed_off = _feed_switch(settings)

    def direct_cold():
        feed_off()
        direct()

    def forget_kept():  # a revision no hook injected yet: its count and origin are found now
        cold_start()
        Revision.objects.filter(file__project=world["project"]).update(tokens={}, origin=None)

    def direct_listing():
        feed_off()
        direct()

    def direct_fed():
        feed_on()
        direct()

    feed_on()
    _wait_following(feed.feed_for("bench"))
    feed_off()
    cold, raw, cold_direct, cold_new = interleaved(
        [pre, cold_floor, direct_cold, pre],
        n,
        setup={0: cold_start, 1: settled, 2: cold_start, 3: forget_kept},
    )
    keys = (f"bench-{i}" for i in itertools.count())
    warm, floor_times, warm_listing, warm_fed, keyed, no_profile = interleaved(
        [pre, floor, direct_listing, direct_fed, lambda: pre(key=next(keys)), lambda: pre(person=False)], n
    )
    feed_off()
    ratio = p50(cold) / p50(raw)
    table.add(
        "pre hook, 6 files, cold cache, no direct credentials (no LIST)",
        ms(cold),
        "cold floor, the same 6 objects by parallel boto3 GETs: " + ms(raw),
        ratio,
        "<= 1.3x (p50)",
        ratio <= 1.3,
    )
    ratio = p50(cold_direct) / p50(raw)
    table.add(
        "  the same, runner with direct credentials (one LIST beside)",
        ms(cold_direct),
        "cold floor",
        ratio,
        "<= 1.3x (p50)",
        ratio <= 1.3,
    )
    table.add(
        "  the same, the first after a save (the new revisions' token counts and origins found)",
        ms(cold_new),
        "cold floor",
        p50(cold_new) / p50(raw),
        "",
        None,
    )
    ratio = p50(warm) / p50(floor_times)
    table.add(
        "pre hook, warm cache, no direct credentials (no LIST)",
        ms(warm),
        "warm floor, bearer token by hash + one row in one transaction, same middleware: " + ms(floor_times),
        ratio,
        "<= 2x (p50)",
        ratio <= 2,
    )
    table.add(
        "  the same, with an Idempotency-Key (a new one each call): what a retry's safety costs",
        ms(keyed),
        f"without: p50 {p50(warm):.2f} ms",
        p50(keyed) / p50(warm),
        "",
        None,
    )
    table.add(
        "  the same, no person (no profile injected, nothing for an erasure to race)",
        ms(no_profile),
        f"with the profile: p50 {p50(warm):.2f} ms",
        p50(warm) / p50(no_profile),
        "",
        None,
    )
    ratio = p50(warm_listing) / p50(floor_times)
    table.add(
        "pre hook, warm, direct credentials, no change feed (one LIST a hook)",
        ms(warm_listing),
        "warm floor",
        ratio,
        "<= 2x (p50)",
        ratio <= 2,
    )
    ratio = p50(warm_fed) / p50(floor_times)
    table.add(
        "pre hook, warm, direct credentials, SeaweedFS change feed (no LIST when idle)",
        ms(warm_fed),
        "warm floor",
        ratio,
        "<= 2x (p50)",
        ratio <= 2,
    )
    _pre_breakdown(table, world, n)


def _feed_switch(settings):
    """Turn the in-process change feed on or off between calls (the feed's thread, once
    started, keeps following; off, the hook does not ask it and lists)."""
    address = os.environ["BENCH_FILER_ADDRESS"]

    def on():
        settings.MGC_S3_CHANGE_FEED, settings.MGC_S3_FILER_ADDRESS = "seaweedfs", address

    def off():
        settings.MGC_S3_CHANGE_FEED = ""

    return on, off


def _wait_following(follower, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not follower.following and time.monotonic() < deadline:
        time.sleep(0.01)
    assert follower.following, "the change feed did not connect"


def _pre_breakdown(table: Table, world: dict, n: int) -> None:
    """What a warm pre hook overlaps: the bucket's LISTs (in flight while it assembles) and
    the assembly; neither writes a record when nothing changed."""
    from projects.memory import catchup
    from projects.memory.storage import storage_for
    from projects.runners import context as prompt_context

    agent, employee, project = world["direct_agent"], world["employee"], world["direct_project"]
    storage = storage_for(project)
    lists = lambda: catchup.bucket_catch_up(project=project, agent=agent, user=employee)  # noqa: E731
    workspace = f"{project.prefix}workspace/"
    lean = lambda: storage.etags(workspace)  # noqa: E731
    client = lambda: storage.client.list_objects_v2(  # noqa: E731
        Bucket=storage.bucket_name, Prefix=workspace
    )
    assemble = lambda: prompt_context.build_context(agent=agent, user=employee)  # noqa: E731
    catch_up, one_lean, one_client, assembly = interleaved([lists, lean, client, assemble], n)
    table.add(
        "  in it (direct credentials, no feed): the workspace's LIST + records, beside assembly",
        ms(catch_up),
        f"one LIST: {ms(one_lean)}; through boto3's client: {ms(one_client)}",
        p50(catch_up) / p50(one_lean),
        "",
        None,
    )
    table.add("  in it: assembly (records, cached texts, token counts)", ms(assembly), "", None, "", None)


# --- How stale a prompt can be with the change feed -------------------------------------------------


def bench_staleness(table: Table, world: dict, rounds: int) -> None:
    """A runner writes the workspace with its own credentials; (1) how long until this
    process's feed has seen it, and (2) whether a pre hook sent the moment the PUT is answered
    already has it (it does when the feed saw it first; otherwise the next hook does)."""
    import boto3
    from django.conf import settings

    from projects.memory import feed, layout, store

    feed_on, feed_off = _feed_switch(settings)
    feed_on()
    try:
        follower = feed.feed_for("bench")
        _wait_following(follower)
        project = world["direct_project"]
        key_id, secret = world["direct_keys"]
        runner = boto3.client(
            "s3",
            endpoint_url=os.environ["MGC_S3_ENDPOINT_URL"],
            region_name="us-east-1",
            aws_access_key_id=key_id,
            aws_secret_access_key=secret,
        )
        file = store.file_create(
            project=project,
            scope="workspace",
            path="notes/stale.md",
            content="# Stale?\n",
            actor=world["actor"],
        ).file
        prefix = layout.workspace_prefix(project.prefix)
        pre, _floor = hook_client(world["direct_token"])
        latencies, missed, lost = [], 0, 0
        for round_ in range(rounds):
            seen = follower.count(prefix)
            runner.put_object(Bucket="bench", Key=file.key, Body=f"# Stale?\n\nround {round_}\n".encode())
            answered = time.perf_counter()
            if follower.wait_past(prefix, seen, timeout=5):
                latencies.append((time.perf_counter() - answered) * 1000)
            else:
                lost += 1
        for round_ in range(rounds):
            marker = f"again {round_}"
            runner.put_object(Bucket="bench", Key=file.key, Body=f"# Stale?\n\n{marker}\n".encode())
            if marker not in pre(body_of=True):
                missed += 1
                pre()  # the next one
        table.add(
            "change feed: a runner's write seen by this process",
            ms(latencies) + f", max {max(latencies):.2f} ms; {lost} of {rounds} never seen",
            "after the PUT was answered",
            None,
            "stated bound: p95 (docs/ARCHITECTURE.md)",
            None,
        )
        table.add(
            "  a pre hook sent the moment the PUT is answered",
            f"stale in {missed} of {rounds} (missing the write; the next hook had it)",
            "",
            None,
            "",
            None,
        )
        if lost:
            table.wrong.append(f"the change feed never saw {lost} of {rounds} writes")
    finally:
        feed_off()


def bench_hold_gap(table: Table, world: dict, rounds: int) -> None:
    """A runner writes under a standing legal hold with its own credentials: how long until the
    version carries the S3 hold, by the change feed (the events worker's FeedHolder, here in
    this process). docs/DEPLOY.md states the bound ("How long a direct write stays unheld")."""
    import boto3
    from django.conf import settings

    from projects.governance import holds
    from projects.memory import feed, holding, store
    from projects.runners import credentials

    feed_on, feed_off = _feed_switch(settings)
    feed_on()
    project, _agent, _token, row = project_with_memory(world, "held")
    credential, secret = credentials.credentials_issue(token=row, by=world["admin"])
    file = store.file_create(
        project=project, scope="workspace", path="notes/held.md", content="# Held\n", actor=world["actor"]
    ).file
    hold, _sweep = holds.hold_place(by=world["admin"], project=project, reason="bench")
    try:
        holder = holding.FeedHolder()
        holder.refresh()
        _wait_following(feed.feed_for("bench"))
        runner = boto3.client(
            "s3",
            endpoint_url=os.environ["MGC_S3_ENDPOINT_URL"],
            region_name="us-east-1",
            aws_access_key_id=credential.access_key_id,
            aws_secret_access_key=secret,
        )
        gaps, lost = [], 0
        for round_ in range(rounds + 1):
            before = holder.held
            runner.put_object(Bucket="bench", Key=file.key, Body=f"# Held\n\nround {round_}\n".encode())
            answered = time.perf_counter()
            deadline = answered + 5
            while holder.held == before and time.perf_counter() < deadline:
                time.sleep(0.0005)
            if holder.held == before:
                lost += 1
            elif round_:  # the first one also starts the stream and the pool's S3 clients
                gaps.append((time.perf_counter() - answered) * 1000)
        table.add(
            "legal hold: a runner's direct write held (change feed)",
            ms(gaps) + f", max {max(gaps):.1f} ms; {lost} of {rounds + 1} not held within 5 s",
            "after the PUT was answered",
            None,
            "bound 5 s (docs/DEPLOY.md)",
            None,
        )
        if lost:
            table.wrong.append(f"{lost} direct writes under a hold were not held within 5 s")
    finally:
        holds.hold_release(by=world["admin"], hold=hold)
        feed_off()


# --- A direct write the console refuses -------------------------------------------------------------


def bench_refused_write(table: Table, world: dict, n: int) -> None:
    """Warm pre hooks of an agent before and after 20 MiB land in its workspace straight in the
    bucket (as a runner's S3 credentials can write it): the first hook after finds it, reads
    at most a file's worth and records it as refused; later ones list it and skip it."""
    import boto3

    from projects.memory import layout
    from projects.models import RefusedWrite
    from projects.runners import credentials

    project, _agent, token, row = project_with_memory(world, "refused")
    credential, secret = credentials.credentials_issue(token=row, by=world["admin"])
    pre, _ = hook_client(token)
    before = timed(pre, n)
    runner = boto3.client(
        "s3",
        endpoint_url=os.environ["MGC_S3_ENDPOINT_URL"],
        region_name="us-east-1",
        aws_access_key_id=credential.access_key_id,
        aws_secret_access_key=secret,
    )
    runner.put_object(
        Bucket="bench",
        Body=b"x" * (20 * 1024 * 1024),  # the runner's own keys
        Key=layout.workspace_file_key(project.prefix, "huge-20mb.md"),
    )
    first = timed(pre, 1, warmup=0)
    after = timed(pre, n, warmup=0)
    assert RefusedWrite.objects.filter(project=project, reason="too_large").count() == 1
    ratio = p50(after) / p50(before)
    table.add(
        "pre hook (warm) after a 20 MiB direct write to its workspace",
        ms(after) + f"; the first after it (finds and records it): {first[0]:.1f} ms",
        "the same hook before the write: " + ms(before),
        ratio,
        "<= 1.2x",
        ratio <= 1.2,
    )


# --- Growth ----------------------------------------------------------------------------------------


def bench_growth_files(table: Table, world: dict, sizes: tuple[int, ...], n: int) -> None:
    """Warm pre hook with 1 .. 1,000 workspace files matched by the manifest, one project per
    size; the manifest caps nothing, so every file is read, counted and injected. Beside it,
    one LIST of those files: the freshness check lists them all on every hook."""
    from projects.memory.storage import storage_for
    from projects.models import Membership, Project

    calls = []
    for size in sizes:
        project = Project.objects.create(slug=f"files-{size}", name=f"Files {size}")
        Membership.objects.create(user=world["employee"], project=project, role="employee")
        bulk_files(project, [f"notes/{i:04d}.md" for i in range(size)], "# Note\n\n" + PARAGRAPH)
        _, token = agent_with_token(
            world,
            project,
            "reader",
            {"sections": [{"tag": "workspace_memory", "source": "workspace/notes/*.md"}]},
        )
        pre, _ = hook_client(token)
        pre()  # texts into the cache
        storage, prefix = storage_for(project), f"{project.prefix}workspace/"
        calls.append((pre, lambda storage=storage, prefix=prefix: storage.etags(prefix)))
    results = interleaved([fn for pair in calls for fn in pair], n, warmup=1)
    base = p50(results[0])
    for index, size in enumerate(sizes):
        times, listing = results[2 * index], results[2 * index + 1]
        per_file = f"; {(p50(times) - base) / (size - 1):.2f} ms per added file" if size > 1 else ""
        table.add(
            f"pre hook (warm), {size:,} workspace files in the prompt",
            ms(times),
            f"one LIST of the {size:,} files: {ms(listing)}{per_file}",
            p50(times) / base,
            "grows with the files (no goal); ratio to 1 file",
            None,
        )


def bench_growth_sessions(table: Table, world: dict, sizes: tuple[int, ...], n: int) -> None:
    """Warm pre hook of agents with 1 .. 10,000 earlier sessions (receipts and events, bulk
    loaded, and this round's records of them: the carried-files index, a quarantined
    proposal with findings for every tenth), same files and manifest: history must not slow
    it down."""
    from bench.post import sessions_with_records
    from projects.audit import Actor
    from projects.memory import store
    from projects.models import AgentSession, SessionEvent

    project, calls = world["project"], []
    for size in sizes:
        agent, token = agent_with_token(world, project, f"history-{size}")
        files = [
            store.file_create(
                project=project,
                scope="agent",
                agent=agent,
                path=name,
                content=text_of(kb),
                actor=Actor.system("bench"),
            ).file
            for name, kb in (("SOUL.md", 2), ("AGENTS.md", 4), ("TOOLS.md", 3))
        ]
        sessions = AgentSession.objects.bulk_create(
            [
                AgentSession(agent=agent, user=world["employee"], prompt_sha256="0" * 64, receipt=[])
                for _ in range(size - 1)
            ],
            batch_size=2000,
        )
        SessionEvent.objects.bulk_create(
            [SessionEvent(session=s, kind="pre", payload={}) for s in sessions], batch_size=2000
        )
        if size > 1:  # this round's records of those sessions: carried-files rows, held writes
            sessions_with_records(world, agent, files[-1], size - 1)
        pre, _ = hook_client(token)
        calls.append(pre)
    analyze()
    results = interleaved(calls, n)
    base = p50(results[0])
    for size, times in zip(sizes, results, strict=True):
        ratio = p50(times) / base
        goal = size > 1
        table.add(
            f"pre hook (warm), agent with {size:,} earlier sessions",
            ms(times),
            "1 session" if size == 1 else f"1 session: p50 {base:.2f} ms",
            ratio,
            "<= 1.2x" if goal else "",
            ratio <= 1.2 if goal else None,
        )
