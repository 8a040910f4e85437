"""Benchmarks of the pre hook, saves, history and list pages, as ratios measured in one run.

    .venv/bin/python bench/run.py            # full run (about two minutes)
    .venv/bin/python bench/run.py --quick    # fewer iterations, for a smoke check

Starts its own S3 server (SeaweedFS's `weed mini`, a separate process on loopback) and uses a throwaway
database: PostgreSQL `mgc_bench` when PostgreSQL answers on 127.0.0.1:5432 (set
BENCH_DATABASE_URL to choose another), else SQLite in a temporary folder. Prints one Markdown
table; docs/PERFORMANCE.md keeps the latest one. Nothing here asserts a time: the figures are
reported as measured, goals met or not.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(port: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


def choose_database(tmp: Path) -> str:
    if os.environ.get("BENCH_DATABASE_URL"):
        return os.environ["BENCH_DATABASE_URL"]
    try:
        import psycopg

        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True,
                             connect_timeout=2) as conn:
            conn.execute("DROP DATABASE IF EXISTS mgc_bench WITH (FORCE)")
            conn.execute("CREATE DATABASE mgc_bench")
        return "postgres://postgres@127.0.0.1:5432/mgc_bench"
    except Exception:  # noqa: BLE001 - no PostgreSQL here: SQLite it is
        return f"sqlite:///{tmp / 'bench.sqlite3'}"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def timed(fn, n: int, warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


class Table:
    def __init__(self):
        self.rows: list[tuple[str, ...]] = []

    def add(self, what: str, measured: str, baseline: str, ratio: float | None, goal: str,
            met: bool | None) -> None:
        verdict = "n/a" if met is None else ("met" if met else "**missed**")
        self.rows.append((what, measured, baseline, "" if ratio is None else f"{ratio:.2f}x",
                          goal, verdict))
        print(f"  {what}: {measured} vs {baseline} -> {verdict}", file=sys.stderr, flush=True)

    def markdown(self) -> str:
        head = ("what", "measured", "baseline", "ratio", "goal", "verdict")
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        return "\n".join(lines)


def ms(values: list[float]) -> str:
    return f"p50 {statistics.median(values):.2f} ms, p95 {pct(values, 0.95):.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n = 40 if args.quick else 200
    tmp = Path(tempfile.mkdtemp(prefix="mgc-bench-"))
    from devtools.seaweed import SeaweedMini

    seaweed = SeaweedMini(tmp / "s3", access_key="bench-key", secret_key="bench-secret").start()
    s3_port = seaweed.s3_port
    gunicorn = None
    try:
        database = choose_database(tmp)
        env = {
            "DATABASE_URL": database, "MGC_S3_ENDPOINT_URL": seaweed.endpoint,
            "MGC_S3_ACCESS_KEY_ID": "bench-key", "MGC_S3_SECRET_ACCESS_KEY": "bench-secret",
            "MGC_S3_BUCKET": "bench", "MGC_SECRET_KEY": "bench-" + "x" * 50,
            "MGC_LOG_LEVEL": "ERROR", "MGC_ALLOWED_HOSTS": "127.0.0.1,localhost,testserver",
            "MGC_S3_MAX_ATTEMPTS": "1", "DJANGO_SETTINGS_MODULE": "memoryadmin.settings",
            # Persistent connections, as docs/DEPLOY.md advises for production.
            "MGC_DB_CONN_MAX_AGE": "60",
        }
        os.environ.update(env)
        import django

        django.setup()
        from django.conf import settings
        from django.core.management import call_command

        settings.ROOT_URLCONF = "bench.urls"
        settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
        call_command("migrate", verbosity=0)
        call_command("ensure_bucket", verbosity=0)
        table = Table()
        print(f"database: {database.split('@')[-1]}; S3: SeaweedFS on 127.0.0.1:{s3_port}",
              file=sys.stderr)
        world = _world()
        _bench_pre(table, world, n)
        gunicorn, port = _start_gunicorn(env)
        _bench_throughput(table, world, port, seconds=4 if args.quick else 10)
        _bench_save(table, world, max(20, n // 4))
        _bench_history(table, world, max(20, n // 4))
        _bench_lists(table, world, 10 if args.quick else 10_000, max(10, n // 10))
        _bench_search(table, world, 1_000 if args.quick else 10_000, max(10, n // 10))
        print(f"\nMeasured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on "
              f"{os.cpu_count()} cores; database {'PostgreSQL' if 'postgres' in database else 'SQLite'}; "
              f"S3: SeaweedFS 4.48 (weed mini) on loopback.\n")
        print(table.markdown())
    finally:
        if gunicorn is not None:
            gunicorn.terminate()
            gunicorn.wait(10)
        seaweed.stop()


# --- Setup ------------------------------------------------------------------------------------------


def _world() -> dict:
    from django.contrib.auth import get_user_model

    from projects.audit import Actor
    from projects.memory import store
    from projects.models import Agent, Membership, Project
    from projects.runners import bearer

    User = get_user_model()
    admin = User.objects.create_user("bench-admin", password="bench", is_superuser=True)
    employee = User.objects.create_user("bench-employee", password="bench")
    project = Project.objects.create(slug="bench", name="Bench")
    Membership.objects.create(user=admin, project=project, role="admin")
    Membership.objects.create(user=employee, project=project, role="employee")
    agent = Agent.objects.create(project=project, slug="analyst", name="Analyst")
    actor = Actor.system("bench")
    paragraph = ("The incident analyst reads alerts, correlates them with deploys and writes a "
                 "short, factual timeline. ") * 4 + "\n\n"

    def text(kb: int) -> str:
        return "# Memory\n\n" + paragraph * max(1, kb * 1024 // len(paragraph))

    for name, kb in (("SOUL.md", 2), ("AGENTS.md", 4), ("TOOLS.md", 3)):
        store.file_create(project=project, scope="agent", agent=agent, path=name,
                          content=text(kb), actor=actor)
    store.file_create(project=project, scope="user", user=employee, path="USER.md",
                      content=text(1), actor=Actor.person(employee))
    for name in ("decisions/a.md", "incidents/b.md"):
        store.file_create(project=project, scope="workspace", path=name, content=text(2),
                          actor=actor)
    _, token = bearer.token_create(agent=agent, name="bench", created_by=admin)
    return {"admin": admin, "employee": employee, "project": project, "agent": agent,
            "token": token, "actor": actor}


# --- Pre hook --------------------------------------------------------------------------------------


def _bench_pre(table: Table, world: dict, n: int) -> None:
    import boto3
    from botocore.config import Config
    from django.core.cache import cache
    from django.test import Client

    from projects.models import Revision

    snapshots = list(Revision.objects.filter(file__project=world["project"])
                     .values_list("snapshot_key", flat=True))
    assert len(snapshots) == 6
    s3 = boto3.client("s3", endpoint_url=os.environ["MGC_S3_ENDPOINT_URL"], region_name="us-east-1",
                      aws_access_key_id=os.environ["MGC_S3_ACCESS_KEY_ID"],
                      aws_secret_access_key=os.environ["MGC_S3_SECRET_ACCESS_KEY"],
                      config=Config(s3={"addressing_style": "path"}, max_pool_connections=16))
    pool = concurrent.futures.ThreadPoolExecutor(6)

    def floor():
        list(pool.map(lambda k: s3.get_object(Bucket="bench", Key=k)["Body"].read(), snapshots))

    raw = timed(floor, n)
    client = Client()
    body = json.dumps({"user": "bench-employee"})
    headers = {"HTTP_AUTHORIZATION": f"Bearer {world['token']}"}

    def pre():
        response = client.post("/api/v1/hooks/pre", body, content_type="application/json",
                               **headers)
        assert response.status_code == 200, response.content[:300]

    def pre_cold():
        cache.clear()
        pre()

    cold = timed(pre_cold, n)
    warm = timed(pre, n)
    bare = timed(lambda: client.get("/bench/ping/"), n)
    table.add("pre hook, 6 files, cold cache (p50)", ms(cold), "6 GETs in parallel, boto3: "
              + ms(raw), statistics.median(cold) / statistics.median(raw), "<= 1.3x",
              statistics.median(cold) / statistics.median(raw) <= 1.3)
    table.add("pre hook, 6 files, cold cache (p95)", f"{pct(cold, .95):.2f} ms",
              f"{pct(raw, .95):.2f} ms", pct(cold, .95) / pct(raw, .95), "<= 1.3x",
              pct(cold, .95) / pct(raw, .95) <= 1.3)
    table.add("pre hook, warm cache (p50)", ms(warm), "bare Django JSON view: " + ms(bare),
              statistics.median(warm) / statistics.median(bare), "<= 2x",
              statistics.median(warm) / statistics.median(bare) <= 2)
    _pre_breakdown(table, world, n)


def _pre_breakdown(table: Table, world: dict, n: int) -> None:
    """Where a warm pre hook's time goes: catching up with the bucket, and assembly (no
    records written by either when nothing changed)."""
    from projects.memory import store
    from projects.runners import context as prompt_context

    agent, employee, project = world["agent"], world["employee"], world["project"]
    storage = store.storage_for(project)
    one_list = timed(lambda: storage.client.list_objects_v2(
        Bucket=storage.bucket_name, Prefix=f"{project.prefix}workspace/"), n)
    catch_up = timed(lambda: store.bucket_catch_up(project=project, agent=agent, user=employee),
                     n)
    table.add("  of which: bucket catch-up (3 LISTs in parallel, nothing new)", ms(catch_up),
              "one LIST: " + ms(one_list), statistics.median(catch_up) / statistics.median(
                  one_list), "", None)
    assembly = timed(lambda: prompt_context.build_context(agent=agent, user=employee), n)
    table.add("  of which: assembly (read records, cached texts, tokens)", ms(assembly), "",
              None, "", None)


def _start_gunicorn(env: dict):
    port = free_port()
    process = subprocess.Popen(
        [str(BIN / "gunicorn"), "memoryadmin.wsgi", "--workers", "2", "--bind",
         f"127.0.0.1:{port}", "--log-level", "warning"],
        cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_for(port)
    return process, port


def _bench_throughput(table: Table, world: dict, port: int, seconds: float) -> None:
    body = json.dumps({"user": "bench-employee"}).encode()
    headers = {"Authorization": f"Bearer {world['token']}", "Content-Type": "application/json"}
    counts = {"ok": 0, "errors": 0}
    latencies: list[float] = []
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client() -> None:
        while time.monotonic() < stop:
            start = time.perf_counter()
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                conn.request("POST", "/api/v1/hooks/pre", body, headers)
                response = conn.getresponse()
                response.read()
                ok = response.status == 200
                conn.close()
            except OSError:
                ok = False
            with lock:
                counts["ok" if ok else "errors"] += 1
                latencies.append((time.perf_counter() - start) * 1000)

    started = time.monotonic()
    threads = [threading.Thread(target=client) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    rps = counts["ok"] / elapsed
    table.add("pre hook throughput, gunicorn 2 sync workers, 16 clients",
              f"{rps:.0f} req/s, {counts['errors']} errors of {counts['ok'] + counts['errors']}; "
              + ms(latencies), "", None, "zero errors", counts["errors"] == 0)


# --- Saves -----------------------------------------------------------------------------------------


def _bench_save(table: Table, world: dict, n: int) -> None:
    from projects.memory import store
    from projects.models import MemoryFile

    project, actor = world["project"], world["actor"]
    file = store.file_ensure(project=project, scope="workspace", path="bench/save.md")
    storage = store.storage_for(project)
    requests: list[str] = []

    def count(event_name, **kwargs):
        requests.append(event_name)

    storage.client.meta.events.register("before-send.s3", count)
    text = "x" * 2048
    counter = iter(range(1_000_000))

    def save():
        record = MemoryFile.objects.select_related("head", "project").get(pk=file.pk)
        store.file_save(file=record, content=f"{text}{next(counter)}\n", actor=actor,
                        base_revision=record.head.number if record.head else None)

    save()
    requests.clear()
    save()
    per_save = len(requests)
    latencies = timed(save, n)
    storage.client.meta.events.unregister("before-send.s3", count)
    raw = timed(lambda: storage.client.put_object(Bucket=storage.bucket_name, Key="bench/raw.md",
                                                  Body=text.encode()), n)
    table.add("editor save: S3 requests per save", str(per_save), "", None, "<= 3",
              per_save <= 3)
    table.add("editor save latency (p50)", ms(latencies), "raw put_object: " + ms(raw),
              statistics.median(latencies) / statistics.median(raw), "", None)


def _analyze() -> None:
    """Fresh planner statistics after a bulk load, as autovacuum would have them in a
    running system; without them PostgreSQL plans for the empty tables it last saw."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # PostgreSQL and SQLite both know it


# --- History ---------------------------------------------------------------------------------------


def _file_with_revisions(world: dict, path: str, count: int):
    """A file with `count` revisions. Rows are bulk-written; only the head's and the one
    before's snapshots are put in S3, the only objects the history and diff pages read."""
    import hashlib

    from projects.memory import layout, store
    from projects.models import MemoryFile, Revision

    project = world["project"]
    file = store.file_ensure(project=project, scope="workspace", path=path)
    storage = store.storage_for(project)
    rows = []
    for number in range(1, count + 1):
        content = f"# Log\n\nentry {number}\n".encode()
        sha = hashlib.sha256(content).hexdigest()
        rows.append(Revision(file=file, number=number, sha256=sha, size=len(content),
                             author_kind="system", author_label="system:bench",
                             message=f"entry {number}",
                             snapshot_key=layout.snapshot_key(project.prefix, file.pk, number, sha)))
    Revision.objects.bulk_create(rows, batch_size=2000)
    for revision in rows[-2:]:
        content = f"# Log\n\nentry {revision.number}\n".encode()
        storage.client.put_object(Bucket=storage.bucket_name, Key=revision.snapshot_key,
                                  Body=content)
    head = Revision.objects.get(file=file, number=count)
    etag = storage.client.put_object(Bucket=storage.bucket_name, Key=file.key,
                                     Body=f"# Log\n\nentry {count}\n".encode())["ETag"]
    MemoryFile.objects.filter(pk=file.pk).update(head=head, head_etag=etag)
    _analyze()
    return MemoryFile.objects.get(pk=file.pk)


def _bench_history(table: Table, world: dict, n: int) -> None:
    from django.core.cache import cache
    from django.test import Client

    files = {count: _file_with_revisions(world, f"bench/h{count}.md", count)
             for count in (10, 50, 10_000)}
    client = Client()
    client.force_login(world["admin"])
    slug = world["project"].slug
    pages = (("history page", "history/", False),
             ("history page, last page", "history/?page=last", False),
             ("diff page (latest two, cold cache)", "diff/", True))
    for label, suffix, clear in pages:
        results = {}
        for count, file in files.items():
            url = f"/p/{slug}/f/{file.pk}/{suffix}"

            def get(url=url, clear=clear):
                if clear:
                    cache.clear()
                response = client.get(url)
                assert response.status_code == 200, (url, response.status_code)

            results[count] = timed(get, n)
        large = statistics.median(results[10_000])
        for base in (10, 50):
            ratio = large / statistics.median(results[base])
            table.add(f"{label}, 10,000 revisions vs {base}", ms(results[10_000]),
                      f"{base} revisions: " + ms(results[base]), ratio, "<= 1.2x", ratio <= 1.2)


# --- Lists -----------------------------------------------------------------------------------------


def _bench_lists(table: Table, world: dict, rows: int, n: int) -> None:
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
            [Project(slug=f"p-{tag}-{i}", name=f"Project {tag} {i:05d}") for i in range(size)])
        Membership.objects.bulk_create([Membership(user=viewer, project=p, role="admin")
                                        for p in projects])
        target = projects[0]
        Agent.objects.bulk_create([Agent(project=target, slug=f"a-{i}", name=f"Agent {i:05d}")
                                   for i in range(size)])
        people = User.objects.bulk_create([User(username=f"u-{tag}-{i}", password="!")
                                           for i in range(size)])
        Membership.objects.bulk_create([Membership(user=u, project=target, role="employee")
                                        for u in people[1:]])
        chain = AuditChain.objects.get_or_create(pk=1)[0]
        seq, last, events = chain.last_seq, chain.last_hash, []
        for i in range(size):
            seq += 1
            event = AuditEvent(created_at=timezone.now(), actor_label=viewer.username,
                               actor_user=viewer, action="file.save", project=target,
                               object_type="memoryfile", object_id=str(i), object_repr=f"f{i}",
                               details={"revision": i}, seq=seq, prev_hash=last)
            event.hash = last = event_hash(event)
            events.append(event)
        AuditEvent.objects.bulk_create(events, batch_size=2000)
        AuditChain.objects.filter(pk=1).update(last_seq=seq, last_hash=last)
        _analyze()
        return viewer, target

    small_viewer, small_project = fill(10, "s")
    large_viewer, large_project = fill(rows, "l")
    pages = [("dashboard", lambda p: "/"), ("projects", lambda p: "/projects/"),
             ("agents (project page)", lambda p: f"/p/{p.slug}/"),
             ("people", lambda p: f"/p/{p.slug}/people/"),
             ("members", lambda p: f"/p/{p.slug}/members/"),
             ("audit", lambda p: f"/audit/?project={p.slug}")]
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
        table.add(f"list: {label}, {rows:,} rows", f"{q_large} queries, " + ms(t_large),
                  f"10 rows: {q_small} queries, " + ms(t_small),
                  statistics.median(t_large) / statistics.median(t_small),
                  "same query count", q_large == q_small)


# --- Search ----------------------------------------------------------------------------------------


def _bench_search(table: Table, world: dict, files: int, n: int) -> None:
    """The search page over a project with 10 files vs one with 10,000 (search copies bulk
    loaded; one word in 1% of the files)."""
    from django.test import Client

    from projects.memory import layout
    from projects.models import Membership, MemoryFile, Project, SearchText

    words = ("incident deploy rollback latency queue tender deadline budget owner report "
             "timeline alert").split()
    client = Client()
    client.force_login(world["admin"])
    results = []
    for size in (10, files):
        project = Project.objects.create(slug=f"search-{size}", name=f"Search {size}")
        Membership.objects.create(user=world["admin"], project=project, role="admin")
        records = MemoryFile.objects.bulk_create([
            MemoryFile(project=project, scope="workspace", path=f"notes/{i}.md",
                       key=layout.workspace_file_key(project.prefix, f"notes/{i}.md"))
            for i in range(size)])
        SearchText.objects.bulk_create([
            SearchText(file=f, number=1, text=" ".join(words[(i + k) % len(words)]
                                                        for k in range(300))
                       + (" needle-word" if i % 100 == 0 else ""))
            for i, f in enumerate(records)], batch_size=2000)
        _analyze()
        url = f"/p/{project.slug}/search/?q=needle-word"

        def get(url=url):
            response = client.get(url)
            assert response.status_code == 200

        results.append(timed(get, n))
    ratio = statistics.median(results[1]) / statistics.median(results[0])
    table.add(f"search page, {files:,} files (1% match)", ms(results[1]),
              "10 files: " + ms(results[0]), ratio, "fast (no goal ratio)", None)


if __name__ == "__main__":
    main()
