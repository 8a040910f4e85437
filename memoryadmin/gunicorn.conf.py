"""gunicorn settings for the console: `gunicorn -c memoryadmin/gunicorn.conf.py memoryadmin.wsgi`.

Threaded workers (gthread): a pre hook spends most of its time waiting on S3 and the
database, and a waiting thread gives the GIL to the next request, so a few processes with
several threads each serve more hooks than as many sync workers could, with less memory.
docs/DEPLOY.md argues the numbers (bench/run.py measures them). The command line or
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
