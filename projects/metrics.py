"""Prometheus metrics the console counts as it works (prometheus-client; /metrics serves them).

Only counters and histograms are touched on request paths: each is a few arithmetic
operations in memory (under gunicorn, a write into a memory-mapped file of this process's
own: prometheus-client's multiprocess mode, PROMETHEUS_MULTIPROC_DIR, set by
memoryadmin/gunicorn.conf.py). No query, no lock shared with another request. What needs the
database (the outbox's backlog) or the network (readiness) is measured when Prometheus
scrapes (`views/probes.py`), never on the way of a request.

Label values are fixed sets, so a series count cannot grow with the data: a hook's name, a
write's outcome, an S3 operation's name, a refusal's reason from the lists below.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

# The runner API's hooks and reads, by path below the API root: the label of their histogram.
HOOK_PATHS = {
    "/api/v1/hooks/pre": "pre",
    "/api/v1/hooks/post": "post",
    "/api/v1/hooks/tool": "tool",
    "/api/v1/hooks/error": "error",
    "/api/v1/files/list": "files_list",
    "/api/v1/files/read": "files_read",
    "/api/v1/sandbox/files": "sandbox_files",
}

hook_seconds = Histogram(
    "mgc_hook_duration_seconds",
    "Time the console took to answer a runner hook, from the request reaching it to the answer.",
    ["hook"],
    buckets=(0.002, 0.005, 0.01, 0.02, 0.035, 0.05, 0.075, 0.1, 0.2, 0.5, 1.0, 2.5, 5.0, 10.0),
)
hook_answers = Counter(
    "mgc_hook_answers_total", "Runner hook answers by hook and HTTP status class.", ["hook", "status"]
)

# What happened to each write an agent asked for (a post hook's write, or an object a runner
# put in the bucket that the console refused). `quarantined` is reserved for the poisoning
# scanner's outcome: the label set is fixed now, so dashboards and alerts need no change.
WRITE_OUTCOMES = ("written", "proposed", "quarantined", "refused", "conflict")
_STATUS_OUTCOME = {
    "written": "written",
    "proposed": "proposed",
    "quarantined": "quarantined",
    "rejected": "refused",
    "refused": "refused",
    "conflict": "conflict",
}
writes = Counter("mgc_memory_writes_total", "Agents' memory writes by outcome.", ["outcome"])

s3_errors = Counter(
    "mgc_s3_errors_total",
    "S3 requests that failed (no answer, a 5xx, or an error the console could not act on), by operation.",
    ["operation"],
)

deliveries = Counter(
    "mgc_webhook_deliveries_total",
    "Webhook and audit-stream delivery attempts by outcome: delivered, retry (failed, tried again "
    "later), failed (given up).",
    ["outcome"],
)

feed_lag = Histogram(
    "mgc_change_feed_lag_seconds",
    "Delay between a change in the bucket and this process's change feed seeing it.",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
feed_reconnects = Counter(
    "mgc_change_feed_reconnects_total", "Times the change feed's stream dropped and was started again."
)
feed_following = Gauge(
    "mgc_change_feed_following",
    "1 while every live process that started a change feed follows it; 0 while one does not (its "
    "pre hooks list the bucket instead).",
    multiprocess_mode="livemin",
)

# Why a sign-in was refused: a wrong password (or no such account); the sign-in guard's kinds
# (projects.governance.signin.Refusal: `locked`, this account from this client; `address`, a
# paused address; `slowed`, a slowed account's turn taken; `busy`, every password check
# taken), counted where they refuse (the door middleware, the guard and password backends);
# and single sign-on's refusals (projects.sso.errors).
SIGNIN_REASONS = (
    "password",
    "locked",
    "address",
    "slowed",
    "busy",
    "inactive",
    "provider",
    "provider_unavailable",
)
signin_refusals = Counter(
    "mgc_signin_refusals_total",
    "Sign-ins refused, by reason: password (wrong credentials), locked (this account from this "
    "client), address (a paused address), slowed (an account's sign-ins spaced out), busy (every "
    "password check taken), inactive (a deactivated or ended account), provider (the identity "
    "provider's answer was refused), provider_unavailable.",
    ["reason"],
)
_signin_children: dict = {}


def signin_refused(reason: str) -> None:
    """Count one refused sign-in (a flood's refusals at the door: no label lookup's lock)."""
    child = _signin_children.get(reason)
    if child is None:
        child = _signin_children[reason] = signin_refusals.labels(reason)
    child.inc()


sessions_ended = Counter(
    "mgc_sessions_ended_total",
    "Signed-in sessions ended by the console: recheck (the identity provider no longer vouches), "
    "deprovisioned (SCIM deactivated or deleted the person).",
    ["reason"],
)

sweeps = Counter(
    "mgc_sweeps_total",
    "Retention runs and legal-hold sweeps by kind (retention; hold_place, hold_refresh: versions "
    "written since a placed hold's last sweep, hold_release) and outcome (done; held: something a "
    "hold covers was skipped; unenforced: the bucket has no Object Lock; stopped: a sweep's share "
    "done, the rest to come; failed).",
    ["kind", "outcome"],
)
swept = Counter(
    "mgc_swept_total",
    "What retention runs and hold sweeps changed: expired files, purged revisions, sessions, prompts "
    "and answers; versions held or released in storage.",
    ["kind"],
)


def _ready_labels() -> None:
    """Every fixed label value shows from the start (a 0 is a fact; a missing series is not)."""
    for outcome in WRITE_OUTCOMES:
        writes.labels(outcome)
    for reason in SIGNIN_REASONS:
        signin_refusals.labels(reason)
    for outcome in ("delivered", "retry", "failed"):
        deliveries.labels(outcome)


_ready_labels()


def write_counted(status: str) -> None:
    """Count a write by its outcome, from the status a post hook answers with (`rejected` is
    counted as refused); an unknown status is not counted."""
    outcome = _STATUS_OUTCOME.get(status)
    if outcome is not None:
        writes.labels(outcome).inc()
