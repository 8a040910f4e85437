"""What superusers see on the Sign-in lockouts page, and their unlock (audited): accounts locked
for one client, addresses paused for sign-ins without a device cookie, accounts slowed for
them. projects.governance.signin counts the failures."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Max, Sum
from django.utils import timezone

from projects.audit import Actor, audit_record
from projects.governance import signin
from projects.models import SignInFailure

LIMIT_ROWS = 200  # each list shows the most failures first, at most this many


@dataclass(frozen=True)
class Lockout:
    """`pair`: an account from one client (locked); `address`: sign-ins without a device
    cookie from an address (paused); `account`: those sign-ins for an account (slowed)."""

    kind: str
    account: str  # folded name; "" for an address
    client: str  # device:<id> | address:<address>; "" for an address or an account
    address: str
    failures: int
    last_failure: dt.datetime

    @property
    def until(self) -> dt.datetime:
        return self.last_failure + dt.timedelta(minutes=settings.MGC_LOGIN_LOCKOUT_MINUTES)

    @property
    def device(self) -> bool:
        return self.client.startswith("device:")

    @property
    def delay(self) -> int:
        return signin.slowdown_seconds(self.failures) if self.kind == "account" else 0


def lockouts() -> list[Lockout]:
    """Locked pairs, paused addresses and slowed accounts within the cool-off, most failures
    first."""
    since = timezone.now() - dt.timedelta(minutes=settings.MGC_LOGIN_LOCKOUT_MINUTES)
    recent = SignInFailure.objects.filter(last_failure__gte=since)
    # Rows without an account are an address's burst of attempts (signin._burst_record).
    locked = recent.filter(failures__gte=settings.MGC_LOGIN_FAILURE_LIMIT).exclude(account="")
    found = [
        Lockout("pair", row.account, row.client, row.address, row.failures, row.last_failure)
        for row in locked.order_by("-failures")[:LIMIT_ROWS]
    ]
    untrusted = recent.filter(trusted=False)
    found += [
        Lockout("address", "", "", row["address"], row["total"], row["last"])
        for row in untrusted.values("address")
        .annotate(total=Sum("failures"), last=Max("last_failure"))
        .filter(total__gte=settings.MGC_LOGIN_ADDRESS_FAILURE_LIMIT)
        .order_by("-total")[:LIMIT_ROWS]
    ]
    found += [
        Lockout("account", row["account"], "", "", row["total"], row["last"])
        for row in untrusted.exclude(account="")
        .values("account")
        .annotate(total=Sum("failures"), last=Max("last_failure"))
        .filter(total__gte=settings.MGC_LOGIN_FAILURE_LIMIT)
        .order_by("-total")[:LIMIT_ROWS]
    ]
    return found


def failures_counting() -> int:
    """Failed sign-ins within the cool-off that lock nothing yet."""
    since = timezone.now() - dt.timedelta(minutes=settings.MGC_LOGIN_LOCKOUT_MINUTES)
    recent = SignInFailure.objects.filter(last_failure__gte=since).exclude(account="")
    return recent.aggregate(total=Sum("failures"))["total"] or 0


def lockout_lift(*, by, kind: str, account: str = "", client: str = "", address: str = "") -> int:
    """Forget the failures behind one lockout (an admin's unlock); how many records went.
    Audited."""
    if kind == "pair" and account and client:
        removed = signin.forget(account=account, client=client)
    elif kind == "address" and address:
        removed = signin.forget(address=address)
    elif kind == "account" and account:
        removed = signin.forget(account=account)
    else:
        raise ValueError(kind)
    details = {"kind": kind, "records": removed}
    if account:
        details["username"] = account
    if client:
        details["client"] = "device" if client.startswith("device:") else client
    if address:
        details["ip_address"] = address
    audit_record(
        actor=Actor.person(by),
        action="account.unlock",
        obj=signin.account_named(account) if account else None,
        details=details,
    )
    return removed
