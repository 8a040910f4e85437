"""Signing in with a password under a flood, so that nobody who is not attacking is turned away
(OWASP's device-cookie scheme; settings "Sign-in"):

- who a sign-in comes from: the client is the browser's device cookie for that account when it
  holds a valid one (projects.governance.devices), else the client address;
- failures lock the pair (account, client), never the account for everyone: its owner signs in
  from their own device meanwhile;
- an address that fails for many accounts is paused for sign-ins without a device cookie, and
  an account that fails from many addresses is slowed for them (one password check per a delay
  that grows with its failures); trusted devices pass both;
- the password checks themselves are bounded (projects.governance.checkpool), trusted ones
  first.

Each refusal is known twice: in the shared cache, read by the door middleware before
sessions, CSRF or a query (`door_refusal`), and in the database (`SignInFailure`), read by the
authentication backend when the cache does not know yet (`check_refusal`).
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import ipaddress
import logging
import math
import time
import unicodedata
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_login_failed
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.db.models import Max, Sum
from django.dispatch import receiver
from django.utils import timezone

from projects import metrics
from projects.audit import Actor, audit_record
from projects.governance import checkpool, devices, rates
from projects.memory import lookalikes
from projects.models import SignInFailure

logger = logging.getLogger(__name__)

# --- Who signs in --------------------------------------------------------------------------------


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


@functools.lru_cache(maxsize=4096)
def address_key(ip: str | None) -> str:
    """The address failures are counted under: an IPv4 address, or an IPv6 address's /64 (one
    subscriber's network: anyone with one has all of its addresses)."""
    if not ip:
        return "unknown"
    address = ipaddress.ip_address(ip)
    if address.version == 4:
        return str(address)
    if address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(ipaddress.ip_network(f"{address}/64", strict=False))


def account_key(raw: str | None) -> str | None:
    """The name failures are counted under: as the login form reads it (NFKC), then folded the
    way the console tells usernames apart (case and look-alike letters)."""
    if not raw:
        return None
    return lookalikes.name_key(unicodedata.normalize("NFKC", str(raw)))[:255]


@dataclass(frozen=True)
class Client:
    """One sign-in's account name (folded) and client: `device:<id>` or `address:<address>`."""

    account: str
    key: str
    address: str
    device: str | None = None

    @property
    def trusted(self) -> bool:
        return self.device is not None


def client_of(request, username: str | None) -> Client | None:
    """Who this sign-in is, for the account name it gives (None without a name)."""
    account = account_key(username)
    if account is None:
        return None
    cached = getattr(request, "_mgc_signin_client", None)
    if cached is not None and cached.account == account:
        return cached
    address = address_key(client_ip(request))
    device = devices.device_of(request, account)
    client = Client(account, f"device:{device}" if device else f"address:{address}", address, device)
    request._mgc_signin_client = client
    return client


# --- Refusals ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Refusal:
    """Why a sign-in was not checked: `locked` (this account from this client), `address`
    (this address, for sign-ins without a device cookie), `slowed` (this account, for those),
    `busy` (every password check taken). Retry after that many seconds."""

    kind: str
    retry_after: int


# Refusals are kept in the cache for at most this long, then read again from the database: an
# admin's unlock reaches processes without a shared cache (no Redis) within that time.
FLAG_SECONDS = 10


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:32]


def _pair_flag(client: Client) -> str:
    return f"mgc:signin:locked:{_digest(client.account, client.key)}"


def _address_flag(address: str) -> str:
    return f"mgc:signin:address:{_digest(address)}"


def _slow_flag(account: str) -> str:
    return f"mgc:signin:slowed:{_digest(account)}"


def _gate(account: str) -> str:
    return f"mgc:signin:gate:{_digest(account)}"


def _flag(key: str, until: float) -> None:
    cache.set(key, until, timeout=max(1, min(FLAG_SECONDS, math.ceil(until - time.time()))))


def _seconds_until(until: float) -> int:
    return max(1, math.ceil(until - time.time()))


def door_refusal(request) -> Refusal | None:
    """From the cache alone (no query, no session): a sign-in the console already knows to
    refuse. A slowed account's turn is taken here too, once."""
    if not any(name.startswith(devices.COOKIE_PREFIX) for name in request.COOKIES):
        # No device cookie at all: a paused address is refused before the form is even read.
        if until := cache.get(_address_flag(address_key(client_ip(request)))):
            return Refusal("address", _seconds_until(until))
    client = client_of(request, request.POST.get("username"))
    if client is None:
        return None
    if client.trusted:
        until = cache.get(_pair_flag(client))
        return Refusal("locked", _seconds_until(until)) if until else _busy(client)
    flags = cache.get_many([_pair_flag(client), _address_flag(client.address), _slow_flag(client.account)])
    if until := flags.get(_pair_flag(client)):
        return Refusal("locked", _seconds_until(until))
    if until := flags.get(_address_flag(client.address)):
        return Refusal("address", _seconds_until(until))
    if burst := _burst(client):
        return burst
    if busy := _busy(client):
        return busy
    if delay := flags.get(_slow_flag(client.account)):
        return _turn(request, client, delay)
    return None


def _burst(client: Client) -> Refusal | None:
    """One more sign-in attempt from this address (without a device cookie); past
    MGC_LOGIN_ADDRESS_RATE the address is paused as after MGC_LOGIN_ADDRESS_FAILURE_LIMIT
    failures: a flood is paused at once, however few of its passwords could be checked."""
    used, limit = rates.use(f"signin-address:{client.address}", settings.MGC_LOGIN_ADDRESS_RATE)
    if used <= limit:
        return None
    if used == limit + 1:
        _burst_record(client, used)
    return Refusal("address", int(_cooloff().total_seconds()))


def _burst_record(client: Client, attempts: int) -> None:
    """The burst as a row of its own (no account): the address's failures reach its limit, so
    the pause lasts the cool-off, shows on the lockouts page and is lifted there. Audited."""
    now = timezone.now()
    key = f"address:{client.address}"
    known = SignInFailure.objects.filter(account="", client=key, last_failure__gte=now - _cooloff()).exists()
    SignInFailure.objects.update_or_create(
        account="",
        client=key,
        defaults={
            "trusted": False,
            "address": client.address,
            "failures": settings.MGC_LOGIN_ADDRESS_FAILURE_LIMIT,
            "last_failure": now,
        },
    )
    _flag(_address_flag(client.address), (now + _cooloff()).timestamp())
    if not known:
        _audit_lockout(client, kind="address", failures=0, attempts=attempts)


def _busy(client: Client) -> Refusal | None:
    """Every check of this client's lane taken in this process and its queue full: busy, at the
    door (a flood's sign-ins would otherwise each pass sessions, CSRF and the guard's queries
    first)."""
    checks = checkpool.pool()
    if checks.full(trusted=client.trusted):
        return Refusal("busy", checks.retry_after(trusted=client.trusted))
    return None


def _turn(request, client: Client, delay: int) -> Refusal | None:
    """A slowed account takes one password check from clients without a device cookie per
    `delay` seconds (across the deployment with a shared cache): this sign-in's turn, or
    how long until the next."""
    if getattr(request, "_mgc_signin_turn", False):
        return None
    until = time.time() + delay
    if cache.add(_gate(client.account), until, timeout=delay):
        request._mgc_signin_turn = True
        return None
    return Refusal("slowed", _seconds_until(cache.get(_gate(client.account)) or until))


def slowdown_seconds(failures: int) -> int:
    """The delay between a slowed account's checks: 1 s at the failure limit, doubling with
    each failure past it, at most MGC_LOGIN_SLOWDOWN_MAX_SECONDS."""
    past = failures - settings.MGC_LOGIN_FAILURE_LIMIT
    return min(settings.MGC_LOGIN_SLOWDOWN_MAX_SECONDS, 2 ** min(past, 30)) if past >= 0 else 0


def _cooloff() -> dt.timedelta:
    return dt.timedelta(minutes=settings.MGC_LOGIN_LOCKOUT_MINUTES)


def check_refusal(request, client: Client) -> Refusal | None:
    """From the database (three queries at most): what door_refusal would say had this process's cache
    known. Flags the cache for the next sign-ins."""
    since = timezone.now() - _cooloff()
    recent = SignInFailure.objects.filter(last_failure__gte=since)
    pair = recent.filter(account=client.account, client=client.key).values("failures", "last_failure").first()
    if pair and pair["failures"] >= settings.MGC_LOGIN_FAILURE_LIMIT:
        until = (pair["last_failure"] + _cooloff()).timestamp()
        _flag(_pair_flag(client), until)
        return Refusal("locked", _seconds_until(until))
    if client.trusted:
        return None
    untrusted = recent.filter(trusted=False)
    address = untrusted.filter(address=client.address).aggregate(
        total=Sum("failures"), last=Max("last_failure")
    )
    if (address["total"] or 0) >= settings.MGC_LOGIN_ADDRESS_FAILURE_LIMIT:
        until = (address["last"] + _cooloff()).timestamp()
        _flag(_address_flag(client.address), until)
        return Refusal("address", _seconds_until(until))
    account = untrusted.filter(account=client.account).aggregate(total=Sum("failures"))["total"] or 0
    if delay := slowdown_seconds(account):
        cache.set(_slow_flag(client.account), delay, timeout=FLAG_SECONDS)
        return _turn(request, client, delay)
    return None


# --- The backend ---------------------------------------------------------------------------------


class SignInGuardBackend:
    """First in AUTHENTICATION_BACKENDS: a password sign-in the console refuses (above) stops
    here, before any password is hashed; otherwise it goes on to the password backend
    (projects.sso.backend.LocalPasswordBackend), which takes a turn in the pool of checks.

    A sign-in with no request (a management command, the test client's login()) is left to the
    next backend: there is no client to count. Single sign-on has no password: not counted.
    It has no get_user: sessions belong to the backend that checked the password."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None or password is None:
            return None
        client = client_of(request, username)
        if client is None:
            return None
        refusal = check_refusal(request, client)
        if refusal is not None:
            refuse(request, refusal)
        request.mgc_signin_client = client
        return None


def refuse(request, refusal: Refusal):
    """Stop this sign-in without checking its password: the login view answers 429 with
    Retry-After (projects.views.signin), and it is not counted as a failure. Counted by its
    kind in mgc_signin_refusals_total (as the door counts those it refuses)."""
    request.mgc_signin_refusal = refusal
    metrics.signin_refused(refusal.kind)
    raise PermissionDenied(refusal.kind)


# --- What a sign-in leaves -----------------------------------------------------------------------


@receiver(user_login_failed)
def _failure(sender, credentials, request=None, **kwargs):
    """A password checked and found wrong (or an account that does not exist): one more
    failure for the pair (and for the metric, a refusal of reason `password`). Refused
    sign-ins were not checked and do not count (`refuse` counted them by their kind)."""
    if getattr(request, "mgc_signin_refusal", None) is not None:
        return
    metrics.signin_refused("password")
    client = getattr(request, "mgc_signin_client", None)
    if client is None:
        return
    failure_record(client)


def failure_record(client: Client) -> None:
    now = timezone.now()
    since = now - _cooloff()
    for attempt in range(2):  # a second try when another process made the row meanwhile
        try:
            with transaction.atomic():
                row = (
                    SignInFailure.objects.select_for_update()
                    .filter(account=client.account, client=client.key)
                    .first()
                )
                if row is None:
                    row = SignInFailure.objects.create(
                        account=client.account,
                        client=client.key,
                        trusted=client.trusted,
                        address=client.address,
                        failures=1,
                        last_failure=now,
                    )
                    if row.pk % 200 == 0:  # now and then, forget what is long past
                        SignInFailure.objects.filter(last_failure__lt=now - 2 * _cooloff()).delete()
                else:
                    row.failures = (row.failures if row.last_failure >= since else 0) + 1
                    row.last_failure, row.address = now, client.address
                    row.save(update_fields=["failures", "last_failure", "address"])
            break
        except IntegrityError:
            if attempt:
                raise
    if row.failures == settings.MGC_LOGIN_FAILURE_LIMIT:
        _flag(_pair_flag(client), (now + _cooloff()).timestamp())
        _audit_lockout(client, kind="pair", failures=row.failures)
    if not client.trusted:
        address_failures = (
            SignInFailure.objects.filter(
                address=client.address, trusted=False, last_failure__gte=since
            ).aggregate(total=Sum("failures"))["total"]
            or 0
        )
        if address_failures == settings.MGC_LOGIN_ADDRESS_FAILURE_LIMIT:
            _flag(_address_flag(client.address), (now + _cooloff()).timestamp())
            _audit_lockout(client, kind="address", failures=address_failures)


def success_record(client: Client) -> None:
    """A right password: this client's failures for the account are forgotten (others' stay)."""
    SignInFailure.objects.filter(account=client.account, client=client.key).delete()
    cache.delete(_pair_flag(client))


def _audit_lockout(client: Client, *, kind: str, failures: int, attempts: int | None = None) -> None:
    """One audit event when a lockout begins (not for every refused attempt during it)."""
    audit_record(
        actor=Actor.system("sign-in"),
        action="account.locked_out",
        obj=account_named(client.account) if kind == "pair" else None,
        details={
            "username": client.account if kind == "pair" else "",
            "client": "device" if client.trusted else "address",
            "ip_address": client.address,
            "failures": failures,
            "minutes": settings.MGC_LOGIN_LOCKOUT_MINUTES,
            "scope": kind,
        }
        | ({"attempts": attempts, "rate": settings.MGC_LOGIN_ADDRESS_RATE} if attempts else {}),
    )
    logger.warning(
        "Sign-in locked out: %s from %s",
        f"account {client.account!r}" if kind == "pair" else "every account",
        "a device" if client.trusted else client.address,
    )


def account_named(account: str | None):
    """The account whose folded name this is, if any."""
    if not account:
        return None
    User = get_user_model()
    exact = User.objects.filter(**{f"{User.USERNAME_FIELD}__iexact": account}).first()
    if exact is not None and lookalikes.name_key(exact.get_username()) == account:
        return exact
    for user in User.objects.all().iterator():
        if lookalikes.name_key(user.get_username()) == account:
            return user
    return None


def forget(*, account: str | None = None, client: str | None = None, address: str | None = None) -> int:
    """Delete failures (an admin's unlock: projects.governance.lockouts); how many rows went."""
    rows = SignInFailure.objects.all()
    if account is not None:
        rows = rows.filter(account=account)
    if client is not None:
        rows = rows.filter(client=client)
    elif account is not None:  # the account's slowdown: the failures of clients without a device cookie
        rows = rows.filter(trusted=False)
    if address is not None:
        rows = rows.filter(address=address, trusted=False)
    removed, _ = rows.delete()
    if account is not None and client is not None:
        cache.delete(f"mgc:signin:locked:{_digest(account, client)}")
    if address is not None:
        cache.delete(_address_flag(address))
    if account is not None and client is None:
        cache.delete_many([_slow_flag(account), _gate(account)])
    return removed
