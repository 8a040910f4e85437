"""Rates counted in the shared cache: the set-password link's form, and sign-in attempts per
address (projects.governance.signin).

django-ratelimit would do this, but its system check refuses Django's local-memory cache (the
demo's) and does not know Django's own Redis backend; two counters over Django's cache API are
all it takes here."""

from __future__ import annotations

import hashlib
import time

from django.conf import settings
from django.core.cache import cache

from projects.audit import Actor, audit_record

_PERIOD_SECONDS = {"s": 1, "m": 60, "h": 3600}


def parse_rate(rate: str) -> tuple[int, int]:
    """'20/10m' -> (20, 600): at most 20 per 10 minutes."""
    count, _, period = rate.partition("/")
    unit = period[-1:] if period[-1:] in _PERIOD_SECONDS else "s"
    number = period[:-1] if period[-1:] in _PERIOD_SECONDS else period
    return int(count), int(number or 1) * _PERIOD_SECONDS[unit]


def _now() -> float:
    return time.time()


def use(name: str, rate: str) -> tuple[int, int]:
    """Count one more use of `name` in the current window: (uses so far, the limit)."""
    limit, seconds = parse_rate(rate)
    window = int(_now() // seconds)
    key = f"mgc:rate:{hashlib.sha256(name.encode()).hexdigest()[:32]}:{window}"
    cache.add(key, 0, timeout=seconds + 1)
    try:
        used = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=seconds + 1)
        used = 1
    return used, limit


def over_rate(name: str, rate: str) -> bool:
    """Count one more use of `name` in the current window; True once it is over the rate."""
    used, limit = use(name, rate)
    return used > limit


def throttle_note(request, over: list[str], ip_address: str | None) -> None:
    """Audit the first refusal of a window for these counters (not every one of a flood)."""
    _limit, seconds = parse_rate(settings.MGC_SET_PASSWORD_RATE)
    if cache.add(f"mgc:throttled:{'|'.join(over)}:{int(time.time() // seconds)}", 1, seconds + 1):
        audit_record(
            actor=Actor.system("sign-in"),
            action="account.throttled",
            details={
                "path": request.path[:200],
                "ip_address": ip_address,
                "over": [name.split(":", 1)[0] for name in over],
            },
        )
