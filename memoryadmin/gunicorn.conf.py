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
