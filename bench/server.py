"""The console under gunicorn with its production configuration: starting and stopping it,
the load generator (pre hooks on new connections), and the figures taken against it:
throughput and CPU per request beside the floor view's, worker and S3 server memory, memory
under many large texts. Sign-in under a flood is bench/signin.py's."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench.fixtures import project_with_memory, text_of
from bench.table import Table, ms

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
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


def _start_gunicorn(env: dict, log: Path):
    port = free_port()
    process = subprocess.Popen(
        [
            str(BIN / "gunicorn"),
            "-c",
            str(ROOT / "memoryadmin" / "gunicorn.conf.py"),
            "bench.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
    )  # noqa: SIM115 - the process keeps it
    wait_for(port)
    return process, port


def under_gunicorn(
    table: Table, world: dict, env: dict, seaweed, quick: bool, log: Path, profile: Path | None = None
) -> None:
    """`profile`: after the throughput figures, where the workers' CPU goes under the same
    loads (bench/profile.py), written there; the memory figures are not taken then."""
    env = {**env, "MGC_S3_CHANGE_FEED": "seaweedfs", "MGC_S3_FILER_ADDRESS": seaweed.filer_address}
    gunicorn, port = _start_gunicorn(env, log)
    try:
        # --quick runs beside the test suite in CI: each load phase just long enough to see
        # every answer right (it asserts no time), so that it takes little CPU from the tests.
        done = _bench_throughput(table, world, port, gunicorn, seaweed, seconds=1 if quick else 15)
        if profile is not None:
            _profile(world, port, gunicorn, profile, seconds=2 if quick else 15)
            return
        _bench_memory(table, world, port, gunicorn, seaweed, done=done, total=100 if quick else 10_000)
        _bench_large_texts(table, world, port, gunicorn, rounds=5 if quick else 400)
    finally:
        _stop(gunicorn)
    if not quick:
        _bench_first_request(table, world, env, log)


def _bench_first_request(table: Table, world: dict, env: dict, log: Path) -> None:
    """The first pre hook a freshly started console answers, once it answers HTTP at all
    (what the demo waits for before it prints its URL), with each worker's warm-up
    (projects/warmup.py, gunicorn's post_worker_init) and without it (MGC_WEB_WARM_UP=0)."""
    first = {}
    for warm in ("1", "0"):
        gunicorn, port = _start_gunicorn({**env, "MGC_WEB_WARM_UP": warm}, log)
        try:
            deadline = time.monotonic() + 120
            while True:  # any answer: the worker that gives it has started
                try:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                    conn.request("HEAD", "/")
                    conn.getresponse().read()
                    conn.close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            result = _load(port, "/api/v1/hooks/pre", world["token"], count=1, clients=1)
            assert result["ok"] == 1, result["statuses"]
            first[warm] = result["latencies"][0]
        finally:
            _stop(gunicorn)
    ratio = first["1"] / first["0"]
    table.add(
        "first pre hook after a start, with each worker's warm-up",
        f"{first['1']:.0f} ms",
        f"without the warm-up: {first['0']:.0f} ms",
        ratio,
        "<= 0.3x",
        ratio <= 0.3,
    )


def _stop(process) -> None:
    process.terminate()
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


def _load(
    port: int,
    path: str,
    token: str,
    *,
    seconds: float | None = None,
    count: int | None = None,
    clients: int = CLIENTS,
) -> dict:
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


def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of processes so far (threads included)."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / os.sysconf("SC_CLK_TCK")


def _bench_throughput(table: Table, world: dict, port: int, gunicorn, seaweed, seconds: float) -> int:
    """Pre hooks a second against the floor view's, same server, same clients, with the CPU
    each request cost the workers and the S3 server: for the agent no runner may write for,
    and for the one with direct credentials (the server follows the change feed). Returns how
    many pre hooks of the first the server answered."""
    token, direct = world["token"], world["direct_token"]
    warmup = WORKERS * THREADS * 4  # every thread warm
    for path, key in (
        ("/api/bench/floor", token),
        ("/api/v1/hooks/pre", token),
        ("/api/v1/hooks/pre", direct),
    ):
        _load(port, path, key, count=warmup)
    workers, s3 = _workers(gunicorn.pid), [seaweed.process.pid]
    runs = {}
    for name, path, key in (
        ("floor", "/api/bench/floor", token),
        ("pre", "/api/v1/hooks/pre", token),
        ("direct", "/api/v1/hooks/pre", direct),
    ):
        before = _cpu_seconds(workers), _cpu_seconds(s3)
        load = _load(port, path, key, seconds=seconds)
        done = max(1, load["ok"] + load["errors"])
        load["cpu"] = (_cpu_seconds(workers) - before[0]) * 1000 / done
        load["s3_cpu"] = (_cpu_seconds(s3) - before[1]) * 1000 / done
        runs[name] = load
    floor = runs["floor"]

    def figures(load: dict) -> str:
        return (
            f"{load['rps']:.0f} req/s, {load['errors']} errors of "
            f"{load['ok'] + load['errors']}; {ms(load['latencies'])}; CPU a request: "
            f"workers {load['cpu']:.1f} ms, S3 server {load['s3_cpu']:.1f} ms"
        )

    for name, label in (("pre", "no direct credentials"), ("direct", "direct credentials, change feed")):
        load = runs[name]
        ratio = load["rps"] / floor["rps"]
        table.add(
            f"pre hook throughput, {CLIENTS} clients, {label}",
            figures(load),
            "floor view, same gunicorn: " + figures(floor),
            ratio,
            ">= 0.5x, 0 errors",
            ratio >= 0.5 and load["errors"] == 0,
        )
    for name, load in runs.items():
        if load["errors"]:
            table.wrong.append(f"{name} under gunicorn: answers {load['statuses']}")
    return warmup + runs["pre"]["ok"] + runs["pre"]["errors"]


def _profile(world: dict, port: int, gunicorn, out: Path, seconds: float) -> None:
    """The floor view and the pre hook under the throughput load again, each with py-spy on
    the workers; both reports in `out`, and the samples beside it (`out`-floor.raw and
    -pre.raw: py-spy's folded stacks, which flamegraph.pl and speedscope read)."""
    import tempfile

    from bench import profile

    texts = []
    for name, title, path in (
        ("floor", "floor view", "/api/bench/floor"),
        ("pre", "pre hook", "/api/v1/hooks/pre"),
    ):
        with tempfile.TemporaryDirectory() as folder:
            with profile.sampled(_workers(gunicorn.pid), Path(folder)) as raw:
                load = _load(port, path, world["token"], seconds=seconds)
            if load["errors"]:
                raise RuntimeError(f"{title} under py-spy: answers {load['statuses']}")
            texts.append(profile.report(f"{title}, {path}", raw, load["ok"], load["seconds"]))
            out.with_name(f"{out.stem}-{name}.raw").write_text("".join(part.read_text() for part in raw))
    out.write_text("\n".join(texts))
    print(f"\n{out.read_text()}", file=sys.stderr)


def _bench_large_texts(table: Table, world: dict, port: int, gunicorn, rounds: int) -> None:
    """Memory under many large, distinct texts: each round saves a new 200 KB revision of a
    workspace file and the workers assemble it (its text enters their caches). The local cache
    is bounded in bytes (MGC_LOCAL_CACHE_BYTES), so RSS stays under a ceiling however many
    distinct megabytes pass."""
    from django.conf import settings

    from projects.memory import store

    project, _agent, token, _row = project_with_memory(world, "large-texts")
    workers = _workers(gunicorn.pid)
    warm = [_rss_kb(pid) for pid in workers]
    files = [
        store.file_create(
            project=project, scope="workspace", path=f"large/{n}.md", content=text_of(1), actor=world["actor"]
        ).file
        for n in range(4)
    ]
    filler = "x" * (200 * 1024 - 100)
    for round_ in range(rounds):
        file = files[round_ % len(files)]
        revision = store.file_save(
            file=file,
            content=f"# Large {round_}\n\n{filler}\n",
            actor=world["actor"],
            base_revision=file.head.number,
        )
        file.head = revision
        _load(port, "/api/v1/hooks/pre", token, count=2, clients=2)
    after = [_rss_kb(pid) for pid in _workers(gunicorn.pid)]
    # The local cache's budget and the remembered answers' (runners/context.py), in KB.
    budget = (
        settings.CACHES["default"].get("OPTIONS", {}).get("MAX_BYTES", 0) + settings.MGC_PROMPT_MEMO_BYTES
    ) // 1024
    ceiling = max(warm) + budget + 96 * 1024  # and some slack
    table.add(
        f"worker memory (RSS) after {rounds:,} distinct 200 KB texts ({rounds * 200 // 1024} MB)",
        ", ".join(f"{kb / 1024:.0f} MB" for kb in after),
        f"after warm-up: {', '.join(f'{kb / 1024:.0f} MB' for kb in warm)}; "
        f"budget (cache and remembered answers) {budget // 1024} MB",
        None,
        f"<= {ceiling / 1024:.0f} MB each",
        max(after) <= ceiling,
    )


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return int(re.search(r"VmRSS:\s+(\d+)", status.read()).group(1))


def _workers(master: int) -> list[int]:
    with open(f"/proc/{master}/task/{master}/children") as children:
        return sorted(int(pid) for pid in children.read().split())


def _bench_memory(table: Table, world: dict, port: int, gunicorn, seaweed, *, done: int, total: int) -> None:
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
    growth = (
        max(a - w for a, w in zip(after, warm, strict=True)) / 1024 if now == workers else None
    )  # a worker replaced: not comparable
    table.add(
        f"worker memory (RSS) after {hooks:,} pre hooks",
        ", ".join(f"{kb / 1024:.0f} MB" for kb in after)
        + f" ({rest['errors']} errors; {rest['rps']:.0f} req/s)",
        f"after warm-up ({done:,} hooks): " + ", ".join(f"{kb / 1024:.0f} MB" for kb in warm),
        None,
        "no growth after warm-up (< 10 MB)",
        None if growth is None else growth < 10,
    )
    table.add(
        "S3 server memory (RSS, weed mini, GOMEMLIMIT 256MiB)",
        f"{_rss_kb(seaweed.process.pid) / 1024:.0f} MB",
        f"after warm-up: {s3_before / 1024:.0f} MB",
        None,
        "",
        None,
    )
