"""gunicorn settings for the console: `gunicorn -c memoryadmin/gunicorn.conf.py memoryadmin.wsgi`.

Threaded workers (gthread): a pre hook spends much of its time waiting on S3 and the
database, and a waiting thread gives the GIL to the next request. On the 2-core CI box,
which is CPU-bound, 2 gthread workers served about as many hooks as 4 sync workers (50
against 56 req/s, within the run-to-run noise) with half the memory; against a remote S3,
where a request waits tens of milliseconds, threads keep the cores busy where a sync worker
would idle. docs/DEPLOY.md has the side-by-side figures (bench/run.py measures them). The command line or
GUNICORN_CMD_ARGS can still override any of these.
"""

import os

worker_class = "gthread"
workers = int(os.environ.get("MGC_WEB_WORKERS") or os.cpu_count() or 2)
threads = int(os.environ.get("MGC_WEB_THREADS") or 8)
bind = os.environ.get("MGC_WEB_BIND") or "127.0.0.1:8000"
# Above MGC_S3_CONNECT_TIMEOUT + MGC_S3_READ_TIMEOUT times MGC_S3_MAX_ATTEMPTS (39 s by
# default), so a slow S3 answers "storage unavailable" instead of a killed worker.
timeout = int(os.environ.get("MGC_WEB_TIMEOUT") or 60)
keepalive = 5
# gunicorn 25+ opens a control socket at ~/.gunicorn/gunicorn.ctl, one path shared by every
# gunicorn of the same user (the demo, the tests' two consoles); the console needs none.
# MGC_WEB_CONTROL_SOCKET names a path to have one.
if os.environ.get("MGC_WEB_CONTROL_SOCKET"):
    control_socket = os.environ["MGC_WEB_CONTROL_SOCKET"]
else:
    control_socket_disable = True
graceful_timeout = int(os.environ.get("MGC_WEB_GRACEFUL_TIMEOUT") or 30)

# --- Metrics from every worker (prometheus-client's multiprocess mode) ----------------------
# Each worker writes its counts into memory-mapped files in PROMETHEUS_MULTIPROC_DIR and
# /metrics sums them, whichever worker answers the scrape. Set before any worker imports the
# console (the workers inherit it). Unset: a fresh folder of this server's own. The events
# worker and commands run with the same folder in their environment add their counts too.
if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    import tempfile

    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="mgc-metrics-")


def on_starting(server):
    """Files of processes that are gone (an earlier run's) are removed; live processes' files
    (an events worker started before this server) are kept."""
    folder = os.environ["PROMETHEUS_MULTIPROC_DIR"]
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(folder):
        pid = name.rpartition("_")[2].removesuffix(".db")
        if not (name.endswith(".db") and pid.isdigit()):
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            os.remove(os.path.join(folder, name))
        except PermissionError:
            pass  # alive, another user's


def child_exit(server, worker):
    """A worker that ended no longer counts in the live gauges (its counters are kept)."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


# --- gunicorn's own lines in the console's log format ------------------------------------------
# MGC_LOG_FORMAT=json (production's default) makes "Booting worker..." a JSON line like the
# console's own; no access log: the console logs one line per request itself (mgc.request,
# with its request id), without query strings.
_production = os.environ.get("MGC_ENV") == "production"
if os.environ.get("MGC_LOG_FORMAT", "json" if _production else "text") == "json":
    logconfig_dict = {  # replaces gunicorn's defaults section by section: all of them here
        "version": 1,
        "disable_existing_loggers": False,
        "root": {"level": "INFO", "handlers": []},
        "formatters": {"json": {"()": "projects.logs.JsonFormatter"}},
        "handlers": {
            "console": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stdout"},
            "error_console": {
                "class": "logging.StreamHandler",
                "formatter": "json",
                "stream": "ext://sys.stderr",
            },
        },
        "loggers": {
            "gunicorn.error": {"level": "INFO", "handlers": ["error_console"], "propagate": False},
            # gunicorn writes access lines whenever a logging configuration is given: silenced
            # (they would carry query strings; the console's mgc.request lines replace them).
            "gunicorn.access": {"level": "WARNING", "handlers": ["console"], "propagate": False},
        },
    }


def post_fork(server, worker):
    """At most MGC_WEB_MALLOC_ARENAS (2) glibc malloc arenas in each worker. glibc gives threads
    that allocate at once arenas of their own, up to eight a core; a worker's request threads,
    its S3 reading pool and its prompt writer pass large texts through memory, and what one
    arena freed is not reused by another, so a worker's resident memory grew past what its
    caches hold (bench/run.py: 400 distinct 200 KB texts). Set here, in the worker, before its
    threads start; MALLOC_ARENA_MAX in the environment does the same where it is set before
    gunicorn starts. 0 leaves glibc's default."""
    arenas = int(os.environ.get("MGC_WEB_MALLOC_ARENAS", "2") or 0)
    if arenas <= 0 or "MALLOC_ARENA_MAX" in os.environ:
        return
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(-8, arenas)  # M_ARENA_MAX
    except (OSError, AttributeError):  # not glibc: nothing to set
        pass


def post_worker_init(worker):
    """Pay the first request's costs before taking one: the tokenizer, URL patterns, the
    first templates, S3's model files (projects/warmup.py says what each costs).
    MGC_WEB_WARM_UP=0 skips it. And first, a quick stop that takes no lock (`_quick_stop`)."""
    _quick_stop(worker)
    if os.environ.get("MGC_WEB_WARM_UP", "1") == "0":
        return
    from projects.warmup import warm_up

    spent = warm_up()
    worker.log.info("Warmed up in %.1f s: %s", sum(spent.values()), spent)


def _quick_stop(worker):
    """The quick stop (SIGINT, SIGQUIT) without shutting the thread pool down in the handler.

    gthread's handler calls the pool's shutdown, which takes the pool's lock; a signal that
    lands while the main thread holds that lock (submitting a connection it accepted) waits
    for itself until the arbiter's SIGKILL ("was sent SIGKILL!" after a Ctrl+C of `make
    demo` under load). Nothing needs the pool after a quick stop: the worker ends in
    worker_exit, in os._exit. The base worker's handler is kept: worker_int, then exit."""
    import signal

    from gunicorn.workers.base import Worker

    def quit_now(sig, frame):
        Worker.handle_quit(worker, sig, frame)

    for sig in (signal.SIGINT, signal.SIGQUIT):
        signal.signal(sig, quit_now)
        signal.siginterrupt(sig, False)


def worker_int(worker):
    """Ctrl+C (SIGINT, the quick stop) reaches the worker's whole process group, the change
    feed's `weed` child too: the feed is stopped at once, so it does not start another child
    while the worker ends."""
    from projects.memory import feed

    feed.stop_all_now()


def worker_exit(server, worker):
    """A worker that stopped cleanly ends here, without the interpreter's teardown.

    That teardown (module by module, with full garbage collections over everything the
    console loaded: Django, botocore's models, the tokenizer's 200,000 ranks) took 1 to 3 s of
    CPU a worker; on a busy two-core machine two workers doing it at once outlasted the
    demo's 5 s graceful timeout, and gunicorn killed them ("was sent SIGKILL! Perhaps out of
    memory?"). Requests in flight are done by now (SIGTERM waits for them; SIGINT and SIGQUIT
    are the quick stops). What the teardown did that matters is done first: the change feed's
    `weed` child is stopped (it was left running after a SIGTERM), the prompts the last
    requests kept are stored (memory/receipts.py; the atexit hook would not run), database
    connections closed, logs flushed. A worker that failed (to boot, to load the app) exits the usual way,
    with its exit code, which the arbiter reads."""
    import sys

    stopping = sys.exc_info()[1]
    if not isinstance(stopping, SystemExit) or stopping.code not in (0, None):
        return
    import logging

    try:
        from django.db import connections

        from projects.memory import feed, receipts

        feed.stop_all()
        receipts.settle(timeout=5)  # prompts kept by the last requests, to S3 (else the sweep does)
        connections.close_all()
    finally:
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
