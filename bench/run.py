"""Benchmarks of the pre hook against its floors, its growth, memory, saves, history and list
pages, as ratios measured in one run.

    .venv/bin/python bench/run.py            # full run (about six minutes); refreshes docs/PERFORMANCE.md
    .venv/bin/python bench/run.py --quick    # a smoke check (about a minute); writes nothing

Starts its own S3 server (SeaweedFS's `weed mini`, a separate process on loopback) and uses a
throwaway database: PostgreSQL `mgc_bench` when PostgreSQL answers on 127.0.0.1:5432 (set
BENCH_DATABASE_URL to choose another), else SQLite in a temporary folder. Every product
figure is printed beside its floor measured in the same run, calls of the two interleaved so
that a busy machine slows both alike. Prints one Markdown table; a full run also writes it
into docs/PERFORMANCE.md (between its bench markers). Nothing here asserts a time: figures
are reported as measured, goals met or not; `--quick` fails only if something answers wrong.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import http.client
import json
import os
import re
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
DOC = ROOT / "docs" / "PERFORMANCE.md"
QUICK = False  # set by --quick
CLIENTS = 32  # concurrent HTTP clients for the throughput and memory figures
WORKERS, THREADS = 2, 8  # the gunicorn configuration under test (memoryadmin/gunicorn.conf.py)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(port: int, timeout: float = 30) -> None:
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


def p50(values: list[float]) -> float:
    return statistics.median(values)


def timed(fn, n: int, warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def interleaved(fns: list, n: int, warmup: int = 3) -> list[list[float]]:
    """Time several calls round-robin (order rotating each round), so a machine that slows
    down for a while slows every one of them alike: their ratios stay fair."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    out: list[list[float]] = [[] for _ in fns]
    for i in range(n):
        shift = i % len(fns)
        for k in list(range(shift, len(fns))) + list(range(shift)):
            start = time.perf_counter()
            fns[k]()
            out[k].append((time.perf_counter() - start) * 1000)
    return out


class Table:
    def __init__(self):
        self.rows: list[tuple[str, ...]] = []
        self.wrong: list[str] = []  # answers that were not 200: the run fails

    def add(self, what: str, measured: str, baseline: str, ratio: float | None, goal: str,
            met: bool | None) -> None:
        verdict = "n/a" if met is None else ("met" if met else "**missed**")
        self.rows.append((what, measured, baseline, "" if ratio is None else f"{ratio:.2f}x",
                          goal, verdict))
        print(f"  {what}: {measured} | {baseline} -> {verdict}", file=sys.stderr, flush=True)

    def markdown(self) -> str:
        head = ("what", "measured", "floor or baseline", "ratio", "goal", "verdict")
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        return "\n".join(lines)


def ms(values: list[float]) -> str:
    return f"p50 {p50(values):.2f} ms, p95 {pct(values, 0.95):.2f} ms"


def write_doc(text: str) -> None:
    """Put the table between the markers of docs/PERFORMANCE.md."""
    doc = DOC.read_text()
    start, end = "<!-- bench:start -->", "<!-- bench:end -->"
    if start not in doc or end not in doc:
        print(f"{DOC} has no bench markers; not written", file=sys.stderr)
        return
    before, rest = doc.split(start, 1)
    after = rest.split(end, 1)[1]
    DOC.write_text(f"{before}{start}\n{text}\n{end}{after}")
    print(f"wrote the table into {DOC.relative_to(ROOT)}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true",
                        help="fewer iterations and smaller data; checks answers, writes nothing")
    parser.add_argument("--no-docs", action="store_true",
                        help="do not write the table into docs/PERFORMANCE.md")
    args = parser.parse_args()
    global QUICK
    quick = QUICK = args.quick
    n = 12 if quick else 200
    tmp = Path(tempfile.mkdtemp(prefix="mgc-bench-"))
    from devtools.seaweed import SeaweedMini

    started = time.monotonic()
    seaweed = SeaweedMini(tmp / "s3", access_key="bench-key", secret_key="bench-secret").start()
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
            "MGC_WEB_WORKERS": str(WORKERS), "MGC_WEB_THREADS": str(THREADS),
            "BENCH_FILER_ADDRESS": seaweed.filer_address,
            # A smaller local cache than the default 128 MiB, so that the large-texts phase
            # passes several budgets' worth of distinct text in minutes, not half an hour.
            "MGC_LOCAL_CACHE_BYTES": str(32 * 1024 * 1024),
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
        print(f"database: {database.split('@')[-1]}; S3: SeaweedFS on {seaweed.endpoint}",
              file=sys.stderr)
        world = _world()
        phases = [
            ("pre hook and its floors", lambda: _bench_pre(table, world, n)),
            ("gunicorn", lambda: _under_gunicorn(table, world, env, seaweed, quick,
                                                       tmp / "gunicorn.log")),
            ("refused direct write", lambda: _bench_refused_write(table, world, n)),
            ("change feed staleness", lambda: _bench_staleness(table, world, 20 if quick else 300)),
            ("growth with files", lambda: _bench_growth_files(
                table, world, (1, 10) if quick else (1, 10, 100, 1_000), 5 if quick else 20)),
            ("growth with history", lambda: _bench_growth_sessions(
                table, world, (1, 100) if quick else (1, 100, 10_000), max(10, n // 2))),
            ("saves", lambda: _bench_save(table, world, 5 if quick else n // 4)),
            ("history pages", lambda: _bench_history(table, world, 60 if quick else 10_010,
                                                     5 if quick else n // 4)),
            ("list pages", lambda: _bench_lists(table, world, 10 if quick else 10_000,
                                                3 if quick else n // 10)),
            ("search", lambda: _bench_search(table, world, 100 if quick else 10_000,
                                             3 if quick else n // 10)),
        ]
        for name, phase in phases:
            began = time.monotonic()
            phase()
            print(f"[{name}: {time.monotonic() - began:.0f} s]", file=sys.stderr, flush=True)
        header = (f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on "
                  f"{os.cpu_count()} cores in {time.monotonic() - started:.0f} s; database "
                  f"{'PostgreSQL' if 'postgres' in database else 'SQLite'}; S3: SeaweedFS 4.48 "
                  f"(weed mini) on loopback; gunicorn gthread, {WORKERS} workers x {THREADS} "
                  f"threads, {CLIENTS} clients" + ("; --quick" if quick else "") + ".")
        text = f"{header}\n\n{table.markdown()}"
        print("\n" + text)
        if table.wrong:
            sys.exit("wrong answers: " + "; ".join(table.wrong))
        if not quick and not args.no_docs:
            write_doc(text)
    finally:
        seaweed.stop()


# --- Setup ------------------------------------------------------------------------------------------

PARAGRAPH = ("The incident analyst reads alerts, correlates them with deploys and writes a "
             "short, factual timeline. ") * 4 + "\n\n"


def text_of(kb: int) -> str:
    return "# Memory\n\n" + PARAGRAPH * max(1, kb * 1024 // len(PARAGRAPH))


def _world() -> dict:
    """Two projects with the same memory (6 files): in `bench` no runner holds S3 credentials
    (its pre hook lists nothing), in `bench-direct` the runner holds credentials that may write
    the workspace (its pre hook looks at the workspace: a LIST, or the change feed)."""
    from django.contrib.auth import get_user_model

    from projects.audit import Actor
    from projects.runners import credentials

    User = get_user_model()
    admin = User.objects.create_user("bench-admin", password="bench", is_superuser=True)
    employee = User.objects.create_user("bench-employee", password="bench")
    world = {"admin": admin, "employee": employee, "actor": Actor.system("bench")}
    for slug in ("bench", "bench-direct"):
        project, agent, token, token_row = _project_with_memory(world, slug)
        if slug == "bench":
            world.update(project=project, agent=agent, token=token)
        else:
            credential, secret = credentials.credentials_issue(token=token_row, by=admin)
            project.refresh_from_db()
            assert project.runner_writable.get("workspace")
            world.update(direct_project=project, direct_agent=agent, direct_token=token,
                         direct_keys=(credential.access_key_id, secret))
    return world


def _project_with_memory(world: dict, slug: str):
    from projects.audit import Actor
    from projects.memory import store
    from projects.models import Agent, Membership, Project
    from projects.runners import bearer

    project = Project.objects.create(slug=slug, name=slug.title())
    Membership.objects.create(user=world["admin"], project=project, role="admin")
    Membership.objects.create(user=world["employee"], project=project, role="employee")
    agent = Agent.objects.create(project=project, slug="analyst", name="Analyst")
    actor = world["actor"]
    for name, kb in (("SOUL.md", 2), ("AGENTS.md", 4), ("TOOLS.md", 3)):
        store.file_create(project=project, scope="agent", agent=agent, path=name,
                          content=text_of(kb), actor=actor)
    store.file_create(project=project, scope="user", user=world["employee"], path="USER.md",
                      content=text_of(1), actor=Actor.person(world["employee"]))
    for name in ("decisions/a.md", "incidents/b.md"):
        store.file_create(project=project, scope="workspace", path=name, content=text_of(2),
                          actor=actor)
    row, token = bearer.token_create(agent=agent, name="bench", created_by=world["admin"])
    return project, agent, token, row


def _hook_client(token: str):
    """A test client and two calls: the pre hook and the floor view, both checked."""
    from django.test import Client

    client = Client()
    body = json.dumps({"user": "bench-employee"})
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}

    def pre(body_of: bool = False):
        response = client.post("/api/v1/hooks/pre", body, content_type="application/json",
                               **headers)
        assert response.status_code == 200, response.content[:300]
        return response.json()["prompt"] if body_of else None

    def floor():
        response = client.post("/api/bench/floor", body, content_type="application/json",
                               **headers)
        assert response.status_code == 200, response.content[:300]

    return pre, floor


# --- Pre hook --------------------------------------------------------------------------------------


def _bench_pre(table: Table, world: dict, n: int) -> None:
    """Cold and warm pre hooks against their floors: for an agent no runner may write for (no
    LIST at all), and for one whose runner holds credentials that may write the workspace,
    with the change feed off (one LIST a hook) and on (no LIST while nothing changed)."""
    import boto3
    from botocore.config import Config
    from django.conf import settings
    from django.core.cache import cache

    from projects.memory import feed
    from projects.models import Revision

    snapshots = list(Revision.objects.filter(file__project=world["project"])
                     .values_list("snapshot_key", flat=True))
    assert len(snapshots) == 6
    s3 = boto3.client("s3", endpoint_url=os.environ["MGC_S3_ENDPOINT_URL"], region_name="us-east-1",
                      aws_access_key_id=os.environ["MGC_S3_ACCESS_KEY_ID"],
                      aws_secret_access_key=os.environ["MGC_S3_SECRET_ACCESS_KEY"],
                      config=Config(s3={"addressing_style": "path"}, max_pool_connections=16))
    pool = concurrent.futures.ThreadPoolExecutor(6)

    def cold_floor():
        list(pool.map(lambda k: s3.get_object(Bucket="bench", Key=k)["Body"].read(), snapshots))

    pre, floor = _hook_client(world["token"])
    direct, _floor = _hook_client(world["direct_token"])
    feed_on, feed_off = _feed_switch(settings)

    def pre_cold():
        cache.clear()
        pre()

    def direct_cold():
        feed_off()
        cache.clear()
        direct()

    def direct_listing():
        feed_off()
        direct()

    def direct_fed():
        feed_on()
        direct()

    feed_on()
    _wait_following(feed.feed_for("bench"))
    feed_off()
    cold, raw, cold_direct = interleaved([pre_cold, cold_floor, direct_cold], n)
    warm, floor_times, warm_listing, warm_fed = interleaved(
        [pre, floor, direct_listing, direct_fed], n)
    feed_off()
    ratio = p50(cold) / p50(raw)
    table.add("pre hook, 6 files, cold cache, no direct credentials (no LIST)", ms(cold),
              "cold floor, the same 6 objects by parallel boto3 GETs: " + ms(raw), ratio,
              "<= 1.3x (p50)", ratio <= 1.3)
    ratio = p50(cold_direct) / p50(raw)
    table.add("  the same, runner with direct credentials (one LIST beside)", ms(cold_direct),
              "cold floor", ratio, "<= 1.3x (p50)", ratio <= 1.3)
    ratio = p50(warm) / p50(floor_times)
    table.add("pre hook, warm cache, no direct credentials (no LIST)", ms(warm),
              "warm floor, bearer token by hash + one row in one transaction, same middleware: "
              + ms(floor_times), ratio, "<= 2x (p50)", ratio <= 2)
    ratio = p50(warm_listing) / p50(floor_times)
    table.add("pre hook, warm, direct credentials, no change feed (one LIST a hook)",
              ms(warm_listing), "warm floor", ratio, "<= 2x (p50)", ratio <= 2)
    ratio = p50(warm_fed) / p50(floor_times)
    table.add("pre hook, warm, direct credentials, SeaweedFS change feed (no LIST when idle)",
              ms(warm_fed), "warm floor", ratio, "<= 2x (p50)", ratio <= 2)
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
        Bucket=storage.bucket_name, Prefix=workspace)
    assemble = lambda: prompt_context.build_context(agent=agent, user=employee)  # noqa: E731
    catch_up, one_lean, one_client, assembly = interleaved([lists, lean, client, assemble], n)
    table.add("  in it (direct credentials, no feed): the workspace's LIST + records, beside "
              "assembly",
              ms(catch_up), f"one LIST: {ms(one_lean)}; through boto3's client: "
              f"{ms(one_client)}", p50(catch_up) / p50(one_lean), "", None)
    table.add("  in it: assembly (records, cached texts, token counts)", ms(assembly), "", None,
              "", None)


# --- Under gunicorn --------------------------------------------------------------------------------


def _start_gunicorn(env: dict, log: Path):
    port = free_port()
    process = subprocess.Popen(
        [str(BIN / "gunicorn"), "-c", str(ROOT / "memoryadmin" / "gunicorn.conf.py"),
         "bench.wsgi", "--bind", f"127.0.0.1:{port}", "--log-level", "warning"],
        cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.DEVNULL,
        stderr=log.open("w"))  # noqa: SIM115 - the process keeps it
    wait_for(port)
    return process, port


def _under_gunicorn(table: Table, world: dict, env: dict, seaweed, quick: bool,
                    log: Path) -> None:
    env = {**env, "MGC_S3_CHANGE_FEED": "seaweedfs", "MGC_S3_FILER_ADDRESS": seaweed.filer_address}
    gunicorn, port = _start_gunicorn(env, log)
    try:
        done = _bench_throughput(table, world, port, gunicorn, seaweed,
                                 seconds=3 if quick else 15)
        _bench_memory(table, world, port, gunicorn, seaweed, done=done,
                      total=400 if quick else 10_000)
        _bench_large_texts(table, world, port, gunicorn, rounds=20 if quick else 400)
        _bench_login_flood(table, world, port, seconds=3 if quick else 10, throttled=True)
    finally:
        _stop(gunicorn)
    if not quick:  # the reference: the same flood against a console whose sign-in is open
        gunicorn, port = _start_gunicorn({**env, "BENCH_SIGNIN_UNTHROTTLED": "1"}, log)
        try:
            _bench_login_flood(table, world, port, seconds=10, throttled=False)
        finally:
            _stop(gunicorn)


def _stop(process) -> None:
    process.terminate()
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


def _load(port: int, path: str, token: str, *, seconds: float | None = None,
          count: int | None = None, clients: int = CLIENTS) -> dict:
    """`clients` threads POSTing to `path` for `seconds` or until `count` answers, each
    request on a new connection, as a runner's hook does."""
    body = json.dumps({"user": "bench-employee"}).encode()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    result = {"ok": 0, "errors": 0, "latencies": [], "statuses": {}}
    lock = threading.Lock()
    stop = time.monotonic() + (seconds or 3600)

    def client() -> None:
        while time.monotonic() < stop:
            with lock:
                if count is not None and result["ok"] + result["errors"] >= count:
                    return
            start = time.perf_counter()
            status = 0
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                conn.request("POST", path, body, headers)
                response = conn.getresponse()
                response.read()
                status = response.status
                conn.close()
            except OSError:
                pass
            with lock:
                result["ok" if status == 200 else "errors"] += 1
                result["statuses"][status] = result["statuses"].get(status, 0) + 1
                result["latencies"].append((time.perf_counter() - start) * 1000)

    began = time.monotonic()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result["seconds"] = time.monotonic() - began
    result["rps"] = result["ok"] / result["seconds"]
    return result


def _flood(port: int, stop: threading.Event, result: dict, clients: int = CLIENTS) -> None:
    """Anonymous clients posting wrong passwords for random usernames as fast as they are
    answered, each with the login page's CSRF cookie and token, as a scripted attack does."""
    import random

    lock = threading.Lock()

    def one() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("GET", "/accounts/login/")
        page = conn.getresponse()
        html = page.read().decode()
        cookie = page.getheader("Set-Cookie", "").split(";", 1)[0]
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
        while not stop.is_set():
            body = (f"csrfmiddlewaretoken={token}&username=intruder{random.randrange(10**6)}"
                    f"&password=wrong{random.randrange(10**6)}")
            status = 0
            try:
                conn.request("POST", "/accounts/login/", body, {
                    "Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie,
                    "Referer": f"http://127.0.0.1:{port}/accounts/login/"})
                response = conn.getresponse()
                response.read()
                status = response.status
            except OSError:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            with lock:
                result[status] = result.get(status, 0) + 1

    threads = [threading.Thread(target=one, daemon=True) for _ in range(clients)]
    for thread in threads:
        thread.start()
    stop.wait()
    for thread in threads:
        thread.join(70)


def _bench_login_flood(table: Table, world: dict, port: int, *, seconds: float,
                       throttled: bool) -> None:
    """Pre hooks a second while anonymous clients flood the sign-in page with wrong passwords,
    against the same server's pre hooks alone. Sign-in refuses a flooding address before any
    password is hashed (django-axes); the reference run shows the console without that."""
    token = world["token"]
    alone = _load(port, "/api/v1/hooks/pre", token, seconds=seconds, clients=8)
    stop, flood = threading.Event(), {}
    flooder = threading.Thread(target=_flood, args=(port, stop, flood), daemon=True)
    flooder.start()
    time.sleep(1)  # the flood under way (and, throttled, its address locked out)
    began = sum(flood.values())
    during = _load(port, "/api/v1/hooks/pre", token, seconds=seconds, clients=8)
    attempts = sum(flood.values()) - began
    stop.set()
    flooder.join(80)
    ratio = during["rps"] / alone["rps"]
    label = ("sign-in throttled (django-axes)" if throttled
             else "sign-in not throttled (reference: the console before it)")
    table.add(f"pre hook throughput during a wrong-password flood ({CLIENTS} clients), {label}",
              f"{during['rps']:.1f} req/s, {during['errors']} errors; {ms(during['latencies'])}"
              f"; flood {attempts / during['seconds']:.1f} attempts/s, answers "
              f"{dict(sorted(flood.items()))}",
              f"the same server without the flood: {alone['rps']:.1f} req/s",
              ratio, ">= 0.5x" if throttled else "", (ratio >= 0.5) if throttled else None)
    if during["errors"] and throttled:
        table.wrong.append(f"pre hooks during the login flood: answers {during['statuses']}")


def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of processes so far (threads included)."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / os.sysconf("SC_CLK_TCK")


def _bench_throughput(table: Table, world: dict, port: int, gunicorn, seaweed,
                      seconds: float) -> int:
    """Pre hooks a second against the floor view's, same server, same clients, with the CPU
    each request cost the workers and the S3 server: for the agent no runner may write for,
    and for the one with direct credentials (the server follows the change feed). Returns how
    many pre hooks of the first the server answered."""
    token, direct = world["token"], world["direct_token"]
    warmup = WORKERS * THREADS * 4  # every thread warm
    for path, key in (("/api/bench/floor", token), ("/api/v1/hooks/pre", token),
                      ("/api/v1/hooks/pre", direct)):
        _load(port, path, key, count=warmup)
    workers, s3 = _workers(gunicorn.pid), [seaweed.process.pid]
    runs = {}
    for name, path, key in (("floor", "/api/bench/floor", token),
                            ("pre", "/api/v1/hooks/pre", token),
                            ("direct", "/api/v1/hooks/pre", direct)):
        before = _cpu_seconds(workers), _cpu_seconds(s3)
        load = _load(port, path, key, seconds=seconds)
        done = max(1, load["ok"] + load["errors"])
        load["cpu"] = (_cpu_seconds(workers) - before[0]) * 1000 / done
        load["s3_cpu"] = (_cpu_seconds(s3) - before[1]) * 1000 / done
        runs[name] = load
    floor = runs["floor"]

    def figures(load: dict) -> str:
        return (f"{load['rps']:.0f} req/s, {load['errors']} errors of "
                f"{load['ok'] + load['errors']}; {ms(load['latencies'])}; CPU a request: "
                f"workers {load['cpu']:.1f} ms, S3 server {load['s3_cpu']:.1f} ms")

    for name, label in (("pre", "no direct credentials"),
                        ("direct", "direct credentials, change feed")):
        load = runs[name]
        ratio = load["rps"] / floor["rps"]
        table.add(f"pre hook throughput, {CLIENTS} clients, {label}", figures(load),
                  "floor view, same gunicorn: " + figures(floor), ratio, ">= 0.5x, 0 errors",
                  ratio >= 0.5 and load["errors"] == 0)
    for name, load in runs.items():
        if load["errors"]:
            table.wrong.append(f"{name} under gunicorn: answers {load['statuses']}")
    return warmup + runs["pre"]["ok"] + runs["pre"]["errors"]


def _bench_large_texts(table: Table, world: dict, port: int, gunicorn, rounds: int) -> None:
    """Memory under many large, distinct texts: each round saves a new 200 KB revision of a
    workspace file and the workers assemble it (its text enters their caches). The local cache
    is bounded in bytes (MGC_LOCAL_CACHE_BYTES), so RSS stays under a ceiling however many
    distinct megabytes pass."""
    from django.conf import settings

    from projects.memory import store

    project, _agent, token, _row = _project_with_memory(world, "large-texts")
    workers = _workers(gunicorn.pid)
    warm = [_rss_kb(pid) for pid in workers]
    files = [store.file_create(project=project, scope="workspace", path=f"large/{n}.md",
                               content=text_of(1), actor=world["actor"]).file for n in range(4)]
    filler = "x" * (200 * 1024 - 100)
    for round_ in range(rounds):
        file = files[round_ % len(files)]
        revision = store.file_save(file=file, content=f"# Large {round_}\n\n{filler}\n",
                                   actor=world["actor"], base_revision=file.head.number)
        file.head = revision
        _load(port, "/api/v1/hooks/pre", token, count=2, clients=2)
    after = [_rss_kb(pid) for pid in _workers(gunicorn.pid)]
    budget = settings.CACHES["default"].get("OPTIONS", {}).get("MAX_BYTES", 0) // 1024
    ceiling = max(warm) + budget + 96 * 1024  # the cache's budget and some slack, in KB
    table.add(f"worker memory (RSS) after {rounds:,} distinct 200 KB texts "
              f"({rounds * 200 // 1024} MB)",
              ", ".join(f"{kb / 1024:.0f} MB" for kb in after),
              f"after warm-up: {', '.join(f'{kb / 1024:.0f} MB' for kb in warm)}; cache "
              f"budget {budget // 1024} MB", None, f"<= {ceiling / 1024:.0f} MB each",
              max(after) <= ceiling)


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return int(re.search(r"VmRSS:\s+(\d+)", status.read()).group(1))


def _workers(master: int) -> list[int]:
    with open(f"/proc/{master}/task/{master}/children") as children:
        return sorted(int(pid) for pid in children.read().split())


def _bench_memory(table: Table, world: dict, port: int, gunicorn, seaweed, *, done: int,
                  total: int) -> None:
    """Resident memory of each worker after warm-up (the throughput run) and after `total`
    pre hooks in all, and the S3 server's."""
    workers = _workers(gunicorn.pid)
    warm = [_rss_kb(pid) for pid in workers]
    s3_before = _rss_kb(seaweed.process.pid)
    rest = _load(port, "/api/v1/hooks/pre", world["token"], count=max(0, total - done))
    now = _workers(gunicorn.pid)
    after = [_rss_kb(pid) for pid in now]
    hooks = done + rest["ok"] + rest["errors"]
    if rest["errors"]:
        table.wrong.append(f"pre hooks for the memory figure: answers {rest['statuses']}")
    growth = max(a - w for a, w in zip(after, warm, strict=True)) / 1024 \
        if now == workers else None  # a worker replaced: not comparable
    table.add(f"worker memory (RSS) after {hooks:,} pre hooks",
              ", ".join(f"{kb / 1024:.0f} MB" for kb in after)
              + f" ({rest['errors']} errors; {rest['rps']:.0f} req/s)",
              f"after warm-up ({done:,} hooks): "
              + ", ".join(f"{kb / 1024:.0f} MB" for kb in warm),
              None, "no growth after warm-up (< 10 MB)",
              None if growth is None else growth < 10)
    table.add("S3 server memory (RSS, weed mini, GOMEMLIMIT 256MiB)",
              f"{_rss_kb(seaweed.process.pid) / 1024:.0f} MB",
              f"after warm-up: {s3_before / 1024:.0f} MB", None, "", None)


# --- How stale a prompt can be with the change feed -------------------------------------------------


def _bench_staleness(table: Table, world: dict, rounds: int) -> None:
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
        runner = boto3.client("s3", endpoint_url=os.environ["MGC_S3_ENDPOINT_URL"],
                              region_name="us-east-1", aws_access_key_id=key_id,
                              aws_secret_access_key=secret)
        file = store.file_create(project=project, scope="workspace", path="notes/stale.md",
                                 content="# Stale?\n", actor=world["actor"]).file
        prefix = layout.workspace_prefix(project.prefix)
        pre, _floor = _hook_client(world["direct_token"])
        latencies, missed, lost = [], 0, 0
        for round_ in range(rounds):
            seen = follower.count(prefix)
            runner.put_object(Bucket="bench", Key=file.key, Body=f"# Stale?\n\nround {round_}\n"
                              .encode())
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
        table.add("change feed: a runner's write seen by this process", ms(latencies)
                  + f", max {max(latencies):.2f} ms; {lost} of {rounds} never seen",
                  "after the PUT was answered", None,
                  "stated bound: p95 (docs/ARCHITECTURE.md)", None)
        table.add("  a pre hook sent the moment the PUT is answered", f"stale in {missed} of "
                  f"{rounds} (missing the write; the next hook had it)", "", None, "", None)
        if lost:
            table.wrong.append(f"the change feed never saw {lost} of {rounds} writes")
    finally:
        feed_off()


# --- A direct write the console refuses -------------------------------------------------------------


def _bench_refused_write(table: Table, world: dict, n: int) -> None:
    """Warm pre hooks of an agent before and after 20 MiB land in its workspace straight in the
    bucket (as a runner's S3 credentials can write it): the first hook after finds it, reads
    at most a file's worth and records it as refused; later ones list it and skip it."""
    import boto3

    from projects.memory import layout
    from projects.models import RefusedWrite
    from projects.runners import credentials

    project, _agent, token, row = _project_with_memory(world, "refused")
    credential, secret = credentials.credentials_issue(token=row, by=world["admin"])
    pre, _ = _hook_client(token)
    before = timed(pre, n)
    runner = boto3.client("s3", endpoint_url=os.environ["MGC_S3_ENDPOINT_URL"],
                          region_name="us-east-1", aws_access_key_id=credential.access_key_id,
                          aws_secret_access_key=secret)
    runner.put_object(Bucket="bench", Body=b"x" * (20 * 1024 * 1024),  # the runner's own keys
                      Key=layout.workspace_file_key(project.prefix, "huge-20mb.md"))
    first = timed(pre, 1, warmup=0)
    after = timed(pre, n, warmup=0)
    assert RefusedWrite.objects.filter(project=project, reason="too_large").count() == 1
    ratio = p50(after) / p50(before)
    table.add("pre hook (warm) after a 20 MiB direct write to its workspace", ms(after)
              + f"; the first after it (finds and records it): {first[0]:.1f} ms",
              "the same hook before the write: " + ms(before), ratio, "<= 1.2x", ratio <= 1.2)


# --- Growth ----------------------------------------------------------------------------------------


def _agent_with_token(world: dict, project, slug: str, manifest: dict | None = None):
    from projects.models import Agent
    from projects.runners import bearer

    agent = Agent.objects.create(project=project, slug=slug, name=slug,
                                 **({"manifest": manifest} if manifest else {}))
    _, token = bearer.token_create(agent=agent, name="bench", created_by=world["admin"])
    return agent, token


def _bulk_files(project, paths: list[str], content: str) -> None:
    """Workspace files as saves leave them (head object, snapshot, records), written in bulk."""
    from projects.memory import layout
    from projects.memory.content import sha256
    from projects.memory.storage import storage_for
    from projects.models import MemoryFile, Revision

    storage = storage_for(project)
    data = content.encode()
    sha = sha256(data)
    files = MemoryFile.objects.bulk_create([
        MemoryFile(project=project, scope="workspace", path=path,
                   key=layout.workspace_file_key(project.prefix, path)) for path in paths])
    revisions = Revision.objects.bulk_create([
        Revision(file=f, number=1, sha256=sha, size=len(data), author_kind="system",
                 author_label="system:bench", message="bulk",
                 snapshot_key=layout.snapshot_key(project.prefix, f.pk, 1, sha)) for f in files])

    def put(pair):
        file, revision = pair
        storage.client.put_object(Bucket=storage.bucket_name, Key=revision.snapshot_key,
                                  Body=data)
        file.head, file.head_etag = revision, storage.client.put_object(
            Bucket=storage.bucket_name, Key=file.key, Body=data)["ETag"]

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        list(pool.map(put, zip(files, revisions, strict=True)))
    MemoryFile.objects.bulk_update(files, ["head", "head_etag"], batch_size=1000)


def _bench_growth_files(table: Table, world: dict, sizes: tuple[int, ...], n: int) -> None:
    """Warm pre hook with 1 .. 1,000 workspace files matched by the manifest, one project per
    size; the manifest caps nothing, so every file is read, counted and injected. Beside it,
    one LIST of those files: the freshness check lists them all on every hook."""
    from projects.memory.storage import storage_for
    from projects.models import Membership, Project

    calls = []
    for size in sizes:
        project = Project.objects.create(slug=f"files-{size}", name=f"Files {size}")
        Membership.objects.create(user=world["employee"], project=project, role="employee")
        _bulk_files(project, [f"notes/{i:04d}.md" for i in range(size)],
                    "# Note\n\n" + PARAGRAPH)
        _, token = _agent_with_token(world, project, "reader", {"sections": [
            {"tag": "workspace_memory", "source": "workspace/notes/*.md"}]})
        pre, _ = _hook_client(token)
        pre()  # texts into the cache
        storage, prefix = storage_for(project), f"{project.prefix}workspace/"
        calls.append((pre, lambda storage=storage, prefix=prefix: storage.etags(prefix)))
    results = interleaved([fn for pair in calls for fn in pair], n, warmup=1)
    base = p50(results[0])
    for index, size in enumerate(sizes):
        times, listing = results[2 * index], results[2 * index + 1]
        per_file = f"; {(p50(times) - base) / (size - 1):.2f} ms per added file" \
            if size > 1 else ""
        table.add(f"pre hook (warm), {size:,} workspace files in the prompt", ms(times),
                  f"one LIST of the {size:,} files: {ms(listing)}{per_file}",
                  p50(times) / base, "grows with the files (no goal); ratio to 1 file", None)


def _bench_growth_sessions(table: Table, world: dict, sizes: tuple[int, ...], n: int) -> None:
    """Warm pre hook of agents with 1 .. 10,000 earlier sessions (receipts and events, bulk
    loaded), same files and manifest: history must not slow it down."""
    from projects.audit import Actor
    from projects.memory import store
    from projects.models import AgentSession, SessionEvent

    project, calls = world["project"], []
    for size in sizes:
        agent, token = _agent_with_token(world, project, f"history-{size}")
        for name, kb in (("SOUL.md", 2), ("AGENTS.md", 4), ("TOOLS.md", 3)):
            store.file_create(project=project, scope="agent", agent=agent, path=name,
                              content=text_of(kb), actor=Actor.system("bench"))
        sessions = AgentSession.objects.bulk_create([
            AgentSession(agent=agent, user=world["employee"], prompt_sha256="0" * 64,
                         receipt=[]) for _ in range(size - 1)], batch_size=2000)
        SessionEvent.objects.bulk_create([
            SessionEvent(session=s, kind="pre", payload={}) for s in sessions], batch_size=2000)
        pre, _ = _hook_client(token)
        calls.append(pre)
    _analyze()
    results = interleaved(calls, n)
    base = p50(results[0])
    for size, times in zip(sizes, results, strict=True):
        ratio = p50(times) / base
        goal = size > 1
        table.add(f"pre hook (warm), agent with {size:,} earlier sessions", ms(times),
                  "1 session" if size == 1 else f"1 session: p50 {base:.2f} ms", ratio,
                  "<= 1.2x" if goal else "", ratio <= 1.2 if goal else None)


# --- Saves -----------------------------------------------------------------------------------------


def _bench_save(table: Table, world: dict, n: int) -> None:
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
    running system; without them PostgreSQL plans for the empty tables it last saw. A quick
    run's tables are tiny and its figures are not kept: it skips this (seconds each time)."""
    from django.db import connection

    if QUICK:
        return

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # PostgreSQL and SQLite both know it


# --- History ---------------------------------------------------------------------------------------


def _file_with_revisions(world: dict, path: str, count: int):
    """A file with `count` revisions. Rows are bulk-written; only the head's and the one
    before's snapshots are put in S3, the only objects the history and diff pages read."""
    import hashlib

    from projects.memory import layout, records
    from projects.memory.storage import storage_for
    from projects.models import MemoryFile, Revision

    project = world["project"]
    file = records.file_ensure(project=project, scope="workspace", path=path)
    storage = storage_for(project)
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


def _bench_history(table: Table, world: dict, big: int, n: int) -> None:
    """History and diff pages of a long history against a short one, like with like: the same
    number of rows on the page. A history page shows 50 revisions, so `big` is 10,010: its last
    page shows 10 rows, as a 10-revision file's only page does, and its first page 50 rows, as
    a 50-revision file's does. Calls interleaved."""
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    assert big % 50 == 10
    files = {count: _file_with_revisions(world, f"bench/h{count}.md", count)
             for count in (10, 50, big)}
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
    cases = (("history page 1 (50 rows)", "history/", 50, False),
             ("history last page (10 rows)", f"history/?page={last}", 10, False),
             ("diff page, latest two (warm cache)", "diff/", 10, False),
             ("diff page, latest two (cold cache: 2 GETs)", "diff/", 10, True))
    for label, suffix, small, clear in cases:
        calls = [page(big, suffix, clear), page(small, suffix, clear)]
        queries = []
        for call in calls:
            with CaptureQueriesContext(connection) as captured:
                call()
            queries.append(len(captured))
        large_times, small_times = interleaved(calls, n)
        ratio = p50(large_times) / p50(small_times)
        table.add(f"{label}, {big:,} revisions", f"{queries[0]} queries, " + ms(large_times),
                  f"{small} revisions: {queries[1]} queries, " + ms(small_times), ratio,
                  "<= 1.2x", ratio <= 1.2)


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
