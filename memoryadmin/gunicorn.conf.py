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
