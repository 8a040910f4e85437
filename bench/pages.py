"""What people do in the console, measured in process: an editor save (its S3 requests and
latency), history and diff pages of a long history, list pages with many rows, and search."""

from __future__ import annotations

import statistics

from bench.fixtures import analyze, file_with_revisions
from bench.table import Table, interleaved, ms, p50, timed

# --- Saves -----------------------------------------------------------------------------------------


def bench_save(table: Table, world: dict, n: int) -> None:
    from projects.memory import records, store
    from projects.memory.storage import storage_for
    from projects.models import MemoryFile

    project, actor = world["project"], world["actor"]
    file = records.file_ensure(project=project, scope="workspace", path="bench/save.md")
    storage = storage_for(project)
    requests: list[str] = []

    def count(event_name, **kwargs):
        requests.append(event_name)

    storage.client.meta.events.register("before-send.s3", count)
    text = "x" * 2048
    counter = iter(range(1_000_000))

    def save():
        record = MemoryFile.objects.select_related("head", "project").get(pk=file.pk)
        store.file_save(
            file=record,
            content=f"{text}{next(counter)}\n",
            actor=actor,
            base_revision=record.head.number if record.head else None,
        )

    save()
    requests.clear()
    save()
    per_save = len(requests)
    latencies = timed(save, n)
    storage.client.meta.events.unregister("before-send.s3", count)
    raw = timed(
        lambda: storage.client.put_object(Bucket=storage.bucket_name, Key="bench/raw.md", Body=text.encode()),
        n,
    )
    table.add("editor save: S3 requests per save", str(per_save), "", None, "<= 3", per_save <= 3)
    table.add(
        "editor save latency (p50)",
        ms(latencies),
        "raw put_object: " + ms(raw),
        statistics.median(latencies) / statistics.median(raw),
        "",
        None,
    )


# --- History ---------------------------------------------------------------------------------------


def bench_history(table: Table, world: dict, big: int, n: int) -> None:
    """History and diff pages of a long history against a short one, like with like: the same
    number of rows on the page. A history page shows 50 revisions, so `big` is 10,010: its last
    page shows 10 rows, as a 10-revision file's only page does, and its first page 50 rows, as
    a 50-revision file's does. Calls interleaved."""
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    assert big % 50 == 10
    files = {count: file_with_revisions(world, f"bench/h{count}.md", count) for count in (10, 50, big)}
    client = Client()
    client.force_login(world["admin"])
    slug = world["project"].slug

    def page(count: int, suffix: str, clear: bool = False):
        url = f"/p/{slug}/f/{files[count].pk}/{suffix}"

        def get():
            if clear:
                cache.clear()
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)

        return get

    last = (big + 49) // 50  # the paginator takes numbers only ("last" would be page 1)
    cases = (
        ("history page 1 (50 rows)", "history/", 50, False),
        ("history last page (10 rows)", f"history/?page={last}", 10, False),
        ("diff page, latest two (warm cache)", "diff/", 10, False),
        ("diff page, latest two (cold cache: 2 GETs)", "diff/", 10, True),
    )
    for label, suffix, small, clear in cases:
        calls = [page(big, suffix, clear), page(small, suffix, clear)]
        queries = []
        for call in calls:
            with CaptureQueriesContext(connection) as captured:
                call()
            queries.append(len(captured))
        large_times, small_times = interleaved(calls, n)
        ratio = p50(large_times) / p50(small_times)
        table.add(
            f"{label}, {big:,} revisions",
            f"{queries[0]} queries, " + ms(large_times),
            f"{small} revisions: {queries[1]} queries, " + ms(small_times),
            ratio,
            "<= 1.2x",
            ratio <= 1.2,
        )


# --- Lists -----------------------------------------------------------------------------------------


def bench_lists(table: Table, world: dict, rows: int, n: int) -> None:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from projects.audit import event_hash
    from projects.models import Agent, AuditChain, AuditEvent, Membership, Project

    User = get_user_model()

    def fill(size: int, tag: str):
        """A user who is admin of `size` projects; a project with `size` agents and members
        and `size` audit events."""
        viewer = User.objects.create_user(f"viewer-{tag}", password="bench")
        projects = Project.objects.bulk_create(
            [Project(slug=f"p-{tag}-{i}", name=f"Project {tag} {i:05d}") for i in range(size)]
        )
        Membership.objects.bulk_create([Membership(user=viewer, project=p, role="admin") for p in projects])
        target = projects[0]
        Agent.objects.bulk_create(
            [Agent(project=target, slug=f"a-{i}", name=f"Agent {i:05d}") for i in range(size)]
        )
        people = User.objects.bulk_create([User(username=f"u-{tag}-{i}", password="!") for i in range(size)])
        Membership.objects.bulk_create(
            [Membership(user=u, project=target, role="employee") for u in people[1:]]
        )
        chain = AuditChain.objects.get_or_create(pk=1)[0]
        seq, last, events = chain.last_seq, chain.last_hash, []
        for i in range(size):
            seq += 1
            event = AuditEvent(
                created_at=timezone.now(),
                actor_label=viewer.username,
                actor_user=viewer,
                action="file.save",
                project=target,
                object_type="memoryfile",
                object_id=str(i),
                object_repr=f"f{i}",
                details={"revision": i},
                seq=seq,
                prev_hash=last,
            )
            event.hash = last = event_hash(event)
            events.append(event)
        AuditEvent.objects.bulk_create(events, batch_size=2000)
        AuditChain.objects.filter(pk=1).update(last_seq=seq, last_hash=last)
        analyze()
        return viewer, target

    small_viewer, small_project = fill(10, "s")
    large_viewer, large_project = fill(rows, "l")
    pages = [
        ("dashboard", lambda p: "/"),
        ("projects", lambda p: "/projects/"),
        ("agents (project page)", lambda p: f"/p/{p.slug}/"),
        ("people", lambda p: f"/p/{p.slug}/people/"),
        ("members", lambda p: f"/p/{p.slug}/members/"),
        ("audit", lambda p: f"/audit/?project={p.slug}"),
    ]
    for label, url_of in pages:
        figures = []
        for viewer, project in ((small_viewer, small_project), (large_viewer, large_project)):
            client = Client()
            client.force_login(viewer)
            url = url_of(project)
            with CaptureQueriesContext(connection) as queries:
                response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)
            figures.append((len(queries), timed(lambda c=client, u=url: c.get(u), n)))
        (q_small, t_small), (q_large, t_large) = figures
        table.add(
            f"list: {label}, {rows:,} rows",
            f"{q_large} queries, " + ms(t_large),
            f"10 rows: {q_small} queries, " + ms(t_small),
            statistics.median(t_large) / statistics.median(t_small),
            "same query count",
            q_large == q_small,
        )


# --- Search ----------------------------------------------------------------------------------------


def bench_search(table: Table, world: dict, files: int, n: int) -> None:
    """The search page over a project with 10 files vs one with 10,000 (search copies bulk
    loaded; one word in 1% of the files)."""
    from django.test import Client

    from projects.memory import layout
    from projects.models import Membership, MemoryFile, Project, SearchText

    words = (
        "incident deploy rollback latency queue tender deadline budget owner report timeline alert"
    ).split()
    client = Client()
    client.force_login(world["admin"])
    results = []
    for size in (10, files):
        project = Project.objects.create(slug=f"search-{size}", name=f"Search {size}")
        Membership.objects.create(user=world["admin"], project=project, role="admin")
        records = MemoryFile.objects.bulk_create(
            [
                MemoryFile(
                    project=project,
                    scope="workspace",
                    path=f"notes/{i}.md",
                    key=layout.workspace_file_key(project.prefix, f"notes/{i}.md"),
                )
                for i in range(size)
            ]
        )
        SearchText.objects.bulk_create(
            [
                SearchText(
                    file=f,
                    number=1,
                    text=" ".join(words[(i + k) % len(words)] for k in range(300))
                    + (" needle-word" if i % 100 == 0 else ""),
                )
                for i, f in enumerate(records)
            ],
            batch_size=2000,
        )
        analyze()
        url = f"/p/{project.slug}/search/?q=needle-word"

        def get(url=url):
            response = client.get(url)
            assert response.status_code == 200

        results.append(timed(get, n))
    ratio = statistics.median(results[1]) / statistics.median(results[0])
    table.add(
        f"search page, {files:,} files (1% match)",
        ms(results[1]),
        "10 files: " + ms(results[0]),
        ratio,
        "fast (no goal ratio)",
        None,
    )
