"""What a load balancer, Kubernetes and Prometheus ask: /healthz, /readyz and /metrics.

They are answered by `middleware.RequestContextMiddleware` before the rest of the stack: no
session, no CSRF, no sign-in, no host check (a probe comes to the pod's address, which is not
in ALLOWED_HOSTS), no HTTPS redirect (a probe speaks plain HTTP to the process; a redirect
would read as success). Nothing they answer is a secret: the checks' names, timings and the
kind of a failure.

- /healthz: the process answers (200, always).
- /readyz: 200 when every check of `health.readiness` passes, else 503 naming the failing
  ones. Cached for MGC_READY_CACHE_SECONDS.
- /metrics: Prometheus's text format. Off (404) unless MGC_METRICS_TOKEN (a bearer token) or
  MGC_METRICS_NETWORKS (client addresses allowed without one) is set. Under gunicorn every
  worker's counts are summed from PROMETHEUS_MULTIPROC_DIR; what needs the database or the
  network is measured here, at the scrape.
"""

from __future__ import annotations

import hmac
import ipaddress
import os

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from projects import health
from projects.governance import signin

_NO_STORE = {"Cache-Control": "no-store"}


def healthz(request) -> HttpResponse:
    return JsonResponse({"status": "ok"}, headers=_NO_STORE)


def readyz(request) -> HttpResponse:
    found = health.readiness()
    return JsonResponse(found.as_dict(), status=200 if found.ready else 503, headers=_NO_STORE)


class ScrapeCollector:
    """Gauges measured at the scrape: the outbox's backlog and the readiness checks."""

    def collect(self):
        ready = health.readiness()
        checks = GaugeMetricFamily(
            "mgc_ready_check",
            "1 when a readiness check passes (as /readyz answers), else 0.",
            labels=["check"],
        )
        for name, check in ready.checks.items():
            checks.add_metric([name], 1.0 if check.ok else 0.0)
        yield checks
        yield GaugeMetricFamily("mgc_ready", "1 when /readyz answers 200.", value=1.0 if ready.ready else 0.0)
        if not ready.checks["database"].ok:
            return
        backlog = health.outbox_backlog()
        yield GaugeMetricFamily(
            "mgc_outbox_pending_events",
            "Events waiting for delivery to live webhooks and audit streams.",
            value=backlog["pending"],
        )
        yield GaugeMetricFamily(
            "mgc_outbox_oldest_pending_age_seconds",
            "Age of the oldest event waiting for delivery (it may be waiting for its retry).",
            value=backlog["oldest_age"],
        )
        yield GaugeMetricFamily(
            "mgc_outbox_oldest_due_age_seconds",
            "How long the longest-due event has waited for a worker (0 when none is due).",
            value=backlog["due_age"],
        )


def _allowed(request) -> bool | None:
    """True: serve; False: refuse (401); None: metrics are off (404)."""
    token, networks = settings.MGC_METRICS_TOKEN, settings.MGC_METRICS_NETWORKS
    if not token and not networks:
        return None
    if token:
        sent = request.headers.get("Authorization", "")
        scheme, _, value = sent.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode()):
            return True
    if networks:
        address = signin.client_ip(request)
        if address is not None:
            ip = ipaddress.ip_address(address)
            return any(ip in ipaddress.ip_network(net, strict=False) for net in networks) or False
    return False


def metrics(request) -> HttpResponse:
    allowed = _allowed(request)
    if allowed is None:
        return HttpResponse(status=404, headers=_NO_STORE)
    if not allowed:
        return HttpResponse(status=401, headers={**_NO_STORE, "WWW-Authenticate": 'Bearer realm="metrics"'})
    scrape = CollectorRegistry()
    scrape.register(ScrapeCollector())
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        counted = CollectorRegistry()
        multiprocess.MultiProcessCollector(counted)
    else:
        counted = REGISTRY
    body = generate_latest(counted) + generate_latest(scrape)
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST, headers=_NO_STORE)


PROBES = {"/healthz": healthz, "/readyz": readyz, "/metrics": metrics}
