"""Device cookies, as OWASP describes them ("Slow down online guessing attacks with device
cookies"): a successful password sign-in leaves in that browser a cookie, signed with the
secret key, naming the account. A later sign-in for that account from that browser is from a
trusted client: it is counted, locked and queued apart from everyone else's, so a flood
against the account or the machine cannot keep its owner out.

One cookie per account (its name carries a hash of the account name), so people who share a
browser each keep theirs. Sent only to the sign-in page (its path), never readable by scripts.
"""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.core import signing
from django.shortcuts import resolve_url

COOKIE_PREFIX = "mgc_device_"
_SALT = "projects.governance.devices"


def _account_tag(account: str) -> str:
    return hashlib.sha256(account.encode()).hexdigest()[:16]


def cookie_name(account: str) -> str:
    return COOKIE_PREFIX + _account_tag(account)[:12]


def _signer() -> signing.TimestampSigner:
    return signing.TimestampSigner(salt=_SALT)


def device_of(request, account: str) -> str | None:
    """The device id of a valid device cookie for this account (folded name), else None."""
    value = request.COOKIES.get(cookie_name(account))
    if not value:
        return None
    try:
        device, _, tag = (
            _signer().unsign(value, max_age=settings.MGC_LOGIN_DEVICE_DAYS * 86400).partition(".")
        )
    except signing.BadSignature:  # forged, for another account's cookie name, or expired
        return None
    return device if tag == _account_tag(account) and device else None


def device_issue(response, *, account: str, device: str | None = None) -> str:
    """Set the device cookie after a successful sign-in: the same device id again (its expiry
    renewed) when the browser presented a valid one, else a new one."""
    device = device or secrets.token_urlsafe(12)
    response.set_cookie(
        cookie_name(account),
        _signer().sign(f"{device}.{_account_tag(account)}"),
        max_age=settings.MGC_LOGIN_DEVICE_DAYS * 86400,
        path=resolve_url(settings.LOGIN_URL),
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Lax",
    )
    return device
