"""Signing in under a flood: who a request comes from, lockouts (django-axes) audited and
lifted by admins, and the set-password link's form held to a rate (django-ratelimit).

django-axes does the counting: its backend runs before Django's password check and refuses a
locked account or address at once, so a flood of wrong passwords never reaches the hasher
(settings "Sign-in"). This module gives it the two keys it counts by, the way the console
reads them: the client address behind the configured number of proxies, and the username as
the login form reads it, folded so that `Admin`, `ＡＤＭＩＮ` and `admin` share one count.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import ipaddress
import logging
import time
import unicodedata
from dataclasses import dataclass

from axes.backends import AxesStandaloneBackend
from axes.handlers.proxy import AxesProxyHandler
from axes.models import AccessAttempt
from axes.signals import user_locked_out
from django.conf import settings
from django.contrib.auth import get_user_model, user_login_failed
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.db.models import Max, Sum
from django.dispatch import receiver
from django.utils import timezone

from projects import metrics
from projects.audit import Actor, audit_record
from projects.memory import lookalikes

logger = logging.getLogger(__name__)


class LockoutBackend(AxesStandaloneBackend):
    """First in AUTHENTICATION_BACKENDS, before Django's password check runs:

    - django-axes' check: a locked account or address is refused;
    - then a budget of password checks (MGC_LOGIN_CHECK_RATE, counted in the shared cache):
      past it, a sign-in is refused as "busy" without hashing and without counting as a
      failure. Lockouts stop a flood from one address after a few attempts, but
      the attempts of many addresses (or of one address's first burst, which all pass the
      lockout check before any failure is recorded) would each cost a PBKDF2 run: this keeps
      their sum from starving the runner API of CPU.

    A sign-in with no request (a management command, the test client's login()) has no
    address to count and is left to the next backend, where axes' own backend would raise.
    Only password sign-ins are counted: the identity provider's answer (single sign-on) has
    its own checks and costs no hash."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None or password is None:
            return None
        super().authenticate(request, username=username, password=password, **kwargs)
        if over_rate("signin-checks", settings.MGC_LOGIN_CHECK_RATE):
            # Refused like a lockout (django-axes records no failure for it, and its
            # middleware answers 429), but the page says "busy", not "locked".
            request.axes_locked_out = True
            request.mgc_signin_busy = True
            raise PermissionDenied("Too many sign-ins at once.")
        return None


def client_ip(request) -> str | None:
    """The client's address: REMOTE_ADDR, or with MGC_TRUSTED_PROXIES = N the N-th address
    from the right of X-Forwarded-For (each trusted proxy appends the address it saw; what
    the client itself wrote stays to the left and is ignored)."""
    remote = request.META.get("REMOTE_ADDR", "") or ""
    hops = settings.MGC_TRUSTED_PROXIES
    if hops > 0:
        chain = [
            part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()
        ]
        if len(chain) >= hops:
            remote = chain[-hops]
    try:
        return str(ipaddress.ip_address(remote))
    except ValueError:
        return None


def attempt_username(request, credentials: dict | None) -> str | None:
    """The name failed attempts are counted under: as the login form reads it (NFKC), then
    folded the way the console tells usernames apart (case and look-alike letters)."""
    raw = (credentials or {}).get("username")
    if raw is None:
        raw = request.POST.get("username") if request is not None else None
    if not raw:
        return None
    return lookalikes.name_key(unicodedata.normalize("NFKC", str(raw)))[:255]


# While an address is locked out, the sign-in page's POSTs from it are refused at the door
# (projects.middleware.SigninShortcutMiddleware), before sessions, CSRF or a query: a flood
# from one address then costs a cache lookup a request. The flag lives a few seconds and is
# set again by each refusal, so an admin's unlock reaches every process (without Redis each
# has its own cache) within that time.
ADDRESS_FLAG_SECONDS = 10


def address_locked(ip: str | None) -> bool:
    return bool(ip) and cache.get(f"mgc:signin-locked:{ip}") is not None


def _flag_address(ip: str | None) -> None:
    """Flag the address if its own failures locked it (not an account tried from it)."""
    if not ip:
        return
    since = timezone.now() - settings.AXES_COOLOFF_TIME
    failures = (
        AccessAttempt.objects.filter(ip_address=ip, attempt_time__gte=since).aggregate(
            total=Sum("failures_since_start")
        )["total"]
        or 0
    )
    if failures >= settings.AXES_FAILURE_LIMIT:
        cache.set(f"mgc:signin-locked:{ip}", 1, timeout=ADDRESS_FLAG_SECONDS)


@receiver(user_login_failed)
def _count_refusal(sender, credentials, request=None, **kwargs):
    """Every refused password sign-in, by why (the metric mgc_signin_refusals_total)."""
    if request is not None and getattr(request, "mgc_signin_busy", False):
        reason = "busy"
    elif request is not None and getattr(request, "axes_locked_out", False):
        reason = "locked_out"
    else:
        reason = "password"
    metrics.signin_refusals.labels(reason).inc()


@receiver(user_locked_out)
def _audit_lockout(sender, request, username, ip_address, **kwargs):
    """One audit event when a lockout begins. axes also signals every attempt refused during
    a lockout; those carry no failure count (they are not recorded either) and are left out."""
    if getattr(request, "mgc_signin_busy", False):
        return  # refused for the budget of checks a second, not locked
    _flag_address(ip_address)
    if getattr(request, "axes_failures_since_start", None) is None:
        return
    account = _account(username)
    audit_record(
        actor=Actor.system("sign-in"),
        action="account.locked_out",
        obj=account,
        details={
            "username": username or "",
            "ip_address": ip_address,
            "failures": request.axes_failures_since_start,
            "minutes": int(settings.AXES_COOLOFF_TIME.total_seconds() // 60),
        },
    )
    logger.warning("Sign-in locked out: username %r from %s", username, ip_address)


def _account(username: str | None):
    if not username:
        return None
    for user in get_user_model().objects.all().iterator():
        if lookalikes.name_key(user.get_username()) == username:
            return user
    return None


@dataclass(frozen=True)
class Lockout:
    """Failed sign-ins counted under one account name or one address."""

    kind: str  # "username" | "ip_address"
    value: str
    failures: int
    last_attempt: dt.datetime

    @property
    def until(self) -> dt.datetime:
        return self.last_attempt + settings.AXES_COOLOFF_TIME

    @property
    def locked(self) -> bool:
        return self.failures >= settings.AXES_FAILURE_LIMIT


def lockouts() -> list[Lockout]:
    """Accounts and addresses with failed sign-ins within the cool-off, most failures first;
    `locked` says which of them are refused now."""
    since = timezone.now() - settings.AXES_COOLOFF_TIME
    recent = AccessAttempt.objects.filter(attempt_time__gte=since)
    found: list[Lockout] = []
    for kind in ("username", "ip_address"):
        rows = (
            recent.exclude(**{f"{kind}__isnull": True})
            .values(kind)
            .annotate(total=Sum("failures_since_start"), last=Max("attempt_time"))
        )
        found += [Lockout(kind, row[kind], row["total"], row["last"]) for row in rows if row[kind]]
    return sorted(found, key=lambda lock: (-lock.failures, lock.kind, lock.value))


def lockout_lift(*, by, kind: str, value: str) -> int:
    """Forget the failed sign-ins counted under an account name or an address (an admin's
    unlock); how many records went. Audited."""
    if kind not in ("username", "ip_address"):
        raise ValueError(kind)
    removed = AxesProxyHandler.reset_attempts(**{kind: value})
    if kind == "ip_address":
        cache.delete(f"mgc:signin-locked:{value}")
    audit_record(
        actor=Actor.person(by),
        action="account.unlock",
        obj=_account(value) if kind == "username" else None,
        details={kind: value, "records": removed},
    )
    return removed


# --- A rate for forms that are not a sign-in ------------------------------------------------------
# django-ratelimit would do this, but its system check refuses Django's local-memory cache
# (the demo's) and does not know Django's own Redis backend; two counters over Django's cache
# API are all it takes here.

_PERIOD_SECONDS = {"s": 1, "m": 60, "h": 3600}


def parse_rate(rate: str) -> tuple[int, int]:
    """'20/10m' -> (20, 600): at most 20 per 10 minutes."""
    count, _, period = rate.partition("/")
    unit = period[-1:] if period[-1:] in _PERIOD_SECONDS else "s"
    number = period[:-1] if period[-1:] in _PERIOD_SECONDS else period
    return int(count), int(number or 1) * _PERIOD_SECONDS[unit]


def over_rate(name: str, rate: str) -> bool:
    """Count one more use of `name` in the current window; True once it is over the rate."""
    limit, seconds = parse_rate(rate)
    window = int(time.time() // seconds)
    key = f"mgc:rate:{hashlib.sha256(name.encode()).hexdigest()[:32]}:{window}"
    cache.add(key, 0, timeout=seconds + 1)
    try:
        used = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=seconds + 1)
        used = 1
    return used > limit


def throttle_note(request, over: list[str]) -> None:
    """Audit the first refusal of a window for these counters (not every one of a flood)."""
    _limit, seconds = parse_rate(settings.MGC_SET_PASSWORD_RATE)
    if cache.add(f"mgc:throttled:{'|'.join(over)}:{int(time.time() // seconds)}", 1, seconds + 1):
        audit_record(
            actor=Actor.system("sign-in"),
            action="account.throttled",
            details={
                "path": request.path[:200],
                "ip_address": client_ip(request),
                "over": [name.split(":", 1)[0] for name in over],
            },
        )
