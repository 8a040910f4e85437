"""Benchmarks of the pre hook against its floors, its growth, memory, saves, history and list
pages, as ratios measured in one run.

    .venv/bin/python bench/run.py            # full run (about six minutes); refreshes docs/PERFORMANCE.md
    .venv/bin/python bench/run.py --quick    # a smoke check (about a minute); writes nothing
    .venv/bin/python bench/run.py --only flood   # one phase (by a word of its name); writes nothing
    .venv/bin/python bench/run.py --only gunicorn --profile out.txt   # where the workers' CPU goes

Starts its own S3 server (SeaweedFS's `weed mini`, a separate process on loopback) and uses a
throwaway database: PostgreSQL `mgc_bench` when PostgreSQL answers on 127.0.0.1:5432 (set
BENCH_DATABASE_URL to choose another), else SQLite in a temporary folder. Every product
figure is printed beside its floor measured in the same run, calls of the two interleaved so
that a busy machine slows both alike. Prints one Markdown table; a full run also writes it
into docs/PERFORMANCE.md (between its bench markers). Nothing here asserts a time: figures
are reported as measured, goals met or not; `--quick` fails only if something answers wrong.

This module is the entry point: its arguments, the S3 server, the database and Django, the
list of phases and the table's place in docs/PERFORMANCE.md. The phases live beside it:
bench/pre.py (the pre hook in process), bench/server.py (under gunicorn), bench/signin.py
(sign-in under a flood; bench/flood.py is the flood), bench/pages.py (saves and the console's
pages), bench/provenance.py (blame of a long history), bench/scanner.py (the poisoning
scanner on a 64 KB post) and bench/post.py (the post hook at its floor, and its growth),
on the data bench/fixtures.py makes; bench/table.py times the calls
and keeps the table.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DOC = ROOT / "docs" / "PERFORMANCE.md"


def choose_database(tmp: Path) -> str:
    if os.environ.get("BENCH_DATABASE_URL"):
        return os.environ["BENCH_DATABASE_URL"]
    try:
        import psycopg

        with psycopg.connect(
            "postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True, connect_timeout=2
        ) as conn:
            conn.execute("DROP DATABASE IF EXISTS mgc_bench WITH (FORCE)")
            conn.execute("CREATE DATABASE mgc_bench")
        return "postgres://postgres@127.0.0.1:5432/mgc_bench"
    except Exception:  # noqa: BLE001 - no PostgreSQL here: SQLite it is
        return f"sqlite:///{tmp / 'bench.sqlite3'}"


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
    parser.add_argument(
        "--quick",
        action="store_true",
        help="fewer iterations and smaller data; checks answers, writes nothing",
    )
    parser.add_argument(
        "--no-docs", action="store_true", help="do not write the table into docs/PERFORMANCE.md"
    )
    parser.add_argument(
        "--only",
        metavar="WORD",
        help="run only the phases whose name holds WORD (e.g. flood, gunicorn, saves); writes nothing",
    )
    parser.add_argument(
        "--profile",
        metavar="FILE",
        type=Path,
        help="the gunicorn phase also samples its workers with py-spy under the floor view's and "
        "the pre hook's load, and writes the top frames to FILE (bench/profile.py)",
    )
    args = parser.parse_args()
    from bench import fixtures, pages, post, pre, provenance, scanner, server, signin
    from bench.table import Table
    from devtools.seaweed import SeaweedMini

    quick = fixtures.QUICK = args.quick
    n = 12 if quick else 200
    tmp = Path(tempfile.mkdtemp(prefix="mgc-bench-"))

    started = time.monotonic()
    seaweed = SeaweedMini(tmp / "s3", access_key="bench-key", secret_key="bench-secret").start()
    try:
        database = choose_database(tmp)
        env = {
            "DATABASE_URL": database,
            "MGC_S3_ENDPOINT_URL": seaweed.endpoint,
            "MGC_S3_ACCESS_KEY_ID": "bench-key",
            "MGC_S3_SECRET_ACCESS_KEY": "bench-secret",
            "MGC_S3_BUCKET": "bench",
            "MGC_SECRET_KEY": "bench-" + "x" * 50,
            "MGC_LOG_LEVEL": "ERROR",
            "MGC_ALLOWED_HOSTS": "127.0.0.1,localhost,testserver",
            "MGC_S3_MAX_ATTEMPTS": "1",
            "DJANGO_SETTINGS_MODULE": "memoryadmin.settings",
            # Persistent connections, as docs/DEPLOY.md advises for production.
            "MGC_DB_CONN_MAX_AGE": "60",
            "MGC_WEB_WORKERS": str(server.WORKERS),
            "MGC_WEB_THREADS": str(server.THREADS),
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
        print(f"database: {database.split('@')[-1]}; S3: SeaweedFS on {seaweed.endpoint}", file=sys.stderr)
        world = fixtures.world_create()
        phases = [
            ("pre hook and its floors", lambda: pre.bench_pre(table, world, n)),
            (
                "gunicorn",
                lambda: server.under_gunicorn(
                    table, world, env, seaweed, quick, tmp / "gunicorn.log", profile=args.profile
                ),
            ),
            (
                "sign-in flood",
                lambda: signin.bench_signin_flood(
                    table, world, env, seaweed, quick, tmp / "gunicorn-signin.log"
                ),
            ),
            ("refused direct write", lambda: pre.bench_refused_write(table, world, n)),
            (
                "post hook and its floor",
                lambda: post.bench_post(table, world, 5 if quick else n // 2, 50 if quick else 1_000),
            ),
            (
                "poisoning scanner on the post hook",
                lambda: scanner.bench_post_scanner(table, world, 5 if quick else n // 4),
            ),
            ("change feed staleness", lambda: pre.bench_staleness(table, world, 20 if quick else 300)),
            ("legal hold gap", lambda: pre.bench_hold_gap(table, world, 5 if quick else 100)),
            (
                "growth with files",
                lambda: pre.bench_growth_files(
                    table, world, (1, 10) if quick else (1, 10, 100, 1_000), 5 if quick else 20
                ),
            ),
            (
                "growth with history",
                lambda: pre.bench_growth_sessions(
                    table, world, (1, 100) if quick else (1, 100, 10_000), max(10, n // 2)
                ),
            ),
            (
                "growth of the post hook",
                lambda: post.bench_post_growth(
                    table,
                    world,
                    5 if quick else n // 4,
                    100 if quick else 10_000,
                    10 if quick else 1_000,
                    100 if quick else 10_000,
                ),
            ),
            ("saves", lambda: pages.bench_save(table, world, 5 if quick else n // 4)),
            (
                "history pages",
                lambda: pages.bench_history(table, world, 60 if quick else 10_010, 5 if quick else n // 4),
            ),
            (
                "list pages",
                lambda: pages.bench_lists(table, world, 10 if quick else 10_000, 3 if quick else n // 10),
            ),
            (
                "search",
                lambda: pages.bench_search(table, world, 100 if quick else 10_000, 3 if quick else n // 10),
            ),
            (
                "blame of a long history",
                lambda: provenance.bench_blame(
                    table, world, 100 if quick else 10_000, 2 if quick else n // 4
                ),
            ),
        ]
        if args.only:
            phases = [(name, phase) for name, phase in phases if args.only in name]
            if not phases:
                sys.exit(f"no phase's name holds {args.only!r}")
        for name, phase in phases:
            began = time.monotonic()
            phase()
            print(f"[{name}: {time.monotonic() - began:.0f} s]", file=sys.stderr, flush=True)
        header = (
            f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on "
            f"{os.cpu_count()} cores in {time.monotonic() - started:.0f} s; database "
            f"{'PostgreSQL' if 'postgres' in database else 'SQLite'}; S3: SeaweedFS 4.48 "
            f"(weed mini) on loopback; gunicorn gthread, {server.WORKERS} workers x "
            f"{server.THREADS} threads, {server.CLIENTS} clients" + ("; --quick" if quick else "") + "."
        )
        text = f"{header}\n\n{table.markdown()}"
        print("\n" + text)
        if table.wrong:
            sys.exit("wrong answers: " + "; ".join(table.wrong))
        if not quick and not args.no_docs and not args.only:
            write_doc(text)
    finally:
        seaweed.stop()


if __name__ == "__main__":
    main()
