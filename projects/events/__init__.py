"""Events out: webhooks (Standard Webhooks, signed) and audit streams for SIEMs, delivered by a
worker from the transactional outbox (projects/outbox.py writes it).

- `targets`: which receiver URLs are allowed (public addresses unless allowlisted), and the
  guarded POST (the address checked is the address connected to; no redirects; timeouts).
- `signing`: secrets and signatures (the `standardwebhooks` library; both secrets during a
  rotation's overlap).
- `delivery`: one attempt under a lease, backoff with jitter, giving up, disabling, the relay
  that puts due events on the queue, redelivery.
- `subscriptions`: make, rotate, enable, disable, remove, test (audited; the console and the
  `webhooks` command call them).
- `tasks`: the worker's task (Django's Tasks framework).

Why Django's Tasks with django-tasks-db's database backend, rather than Celery on Redis: the
queue then lives in the same database as the outbox, so the demo (SQLite) and every
deployment run it with nothing more to operate, and a task is taken by one worker at a time
(`SELECT ... FOR UPDATE SKIP LOCKED` on PostgreSQL). What it does not do itself (a task whose
worker was killed stays "running"; no periodic jobs) the outbox covers: each event's lease
says who delivers it until when, and the worker's relay enqueues events that are due and not
queued, or whose task was lost, so a committed event is always delivered.
"""
