"""What the first requests after a start would pay, paid as a worker starts instead.

Measured on the demo (docs/PERFORMANCE.md): the first pre hook of a fresh process spent about
1.9 s of CPU loading the o200k_base tokenizer (tiktoken reads 200,000 merge ranks into a dict
and builds its BPE core), and the first page of each kind a few hundred ms more compiling its
URL patterns and templates and importing what views import lazily; on a busy two-core machine
with two workers booting side by side that made the first request 7.7 s. gunicorn calls
`warm_up()` in each worker before it takes a request (memoryadmin/gunicorn.conf.py,
post_worker_init). Not in AppConfig.ready: tests, migrations and management commands need
none of it, and each would pay for it."""

from __future__ import annotations

import logging
import time

from django.core.files.storage import storages
from django.db import connections
from django.template.loader import get_template
from django.urls import get_resolver, reverse

logger = logging.getLogger(__name__)

# The pages a person opens first and the parts they share; compiled templates are cached by
# Django's cached loader (on whenever DEBUG is off, and in the demo too).
TEMPLATES = (
    "base.html",
    "registration/login.html",
    "projects/dashboard.html",
    "projects/project_detail.html",
    "projects/file_detail.html",
)


def warm_up() -> dict[str, float]:
    """Load the tokenizer, the URL patterns, the first templates and a database connection;
    seconds per step. A step that fails is logged and skipped: the request that needs it
    pays for it as before."""
    from projects.runners.tokenizer import get_tokenizer

    steps = {
        "tokenizer": lambda: get_tokenizer().count("warm"),
        "urls": lambda: (get_resolver().url_patterns, reverse("projects:dashboard")),
        "templates": lambda: [get_template(name) for name in TEMPLATES],
        "database": _database,
        "storage": lambda: storages["memory"].client,  # S3's model files, into the shared loader
        "runner API": _runner_api,
    }
    spent = {}
    for name, step in steps.items():
        started = time.perf_counter()
        try:
            step()
        except Exception:  # noqa: BLE001 - warming is never a reason not to serve
            logger.warning("warm-up step %s failed; the first request does it", name, exc_info=True)
        spent[name] = round(time.perf_counter() - started, 3)
    return spent


def _runner_api() -> None:
    """What a first pre hook does once a process: the bearer token's SQL made
    (projects/prepared.py) and one signed S3 request of the lean reader (its signer's code, a
    kept-alive connection for the request threads), here on a key nobody writes."""
    from projects.memory import lean
    from projects.runners import bearer

    bearer.token_authenticate(bearer.TOKEN_PREFIX + "warm-up")
    memory = storages["memory"]
    if lean.usable(memory):
        memory.body("_warm-up/nothing")
    connections.close_all()


def _database() -> None:
    """Connect once (the driver's first connection loads its code), then let go: request
    threads open their own."""
    for alias in connections:
        connections[alias].ensure_connection()
    connections.close_all()
