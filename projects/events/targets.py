"""Receiver URLs: which ones the console may call, and the guarded POST.

A receiver on a loopback, private, link-local or otherwise non-public address is refused
unless MGC_WEBHOOK_ALLOWED_NETWORKS names it: a webhook must not become a way to reach the
console's own network (cloud metadata at 169.254.169.254, an admin port on localhost). The
host is resolved at every attempt, every address it resolves to is checked, and the request
goes to the address that was checked (the Host header and TLS name stay the URL's): a DNS
answer that changes between the check and the connection (rebinding) cannot slip through.
Redirects are never followed (a 3xx is a failed attempt) and timeouts are short."""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from functools import cache
from urllib.parse import urlsplit

import urllib3
from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

EXCERPT_BYTES = 500  # of the receiver's answer, kept in the delivery log
MAX_URL = 2000


class TargetRefused(Exception):
    """The URL may not be called (its address is not public, it does not resolve...)."""


class TransportError(Exception):
    """The request did not get an answer: connection refused, timeout, TLS failure."""


@dataclass(frozen=True)
class Answer:
    status: int
    excerpt: str


@dataclass(frozen=True)
class _Parts:
    scheme: str
    host: str
    port: int
    path: str


@cache
def _allowlist(raw: tuple[str, ...]) -> tuple:
    return tuple(ipaddress.ip_network(item.strip(), strict=False) for item in raw if item.strip())


def allowlist() -> tuple:
    return _allowlist(tuple(settings.MGC_WEBHOOK_ALLOWED_NETWORKS))


def address_allowed(address: str) -> bool:
    """Public unicast addresses, and whatever the allowlist names."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
    if any(ip.version == net.version and ip in net for net in allowlist()):
        return True
    return ip.is_global and not ip.is_multicast


def _parts(url: str) -> _Parts:
    if len(url) > MAX_URL or any(ord(c) < 33 for c in url):
        raise TargetRefused(_("The URL is too long or holds spaces or control characters."))
    split = urlsplit(url)
    if split.scheme not in ("http", "https"):
        raise TargetRefused(_("The URL must start with https:// or http://."))
    if split.username or split.password:
        raise TargetRefused(
            _(
                "The URL may not hold a user name or password: put credentials "
                "in a header (Authorization) instead."
            )
        )
    if not split.hostname:
        raise TargetRefused(_("The URL has no host."))
    try:
        port = split.port or (443 if split.scheme == "https" else 80)
    except ValueError:
        raise TargetRefused(_("The URL's port is not a number from 1 to 65535.")) from None
    path = split.path or "/"
    if split.query:
        path += "?" + split.query
    return _Parts(split.scheme, split.hostname, port, path)


def _resolve(parts: _Parts) -> list[str]:
    try:
        return [str(ipaddress.ip_address(parts.host))]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(parts.host, parts.port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise TargetRefused(_("The host %(host)s does not resolve.") % {"host": parts.host}) from None
    return list(dict.fromkeys(info[4][0] for info in infos))


def checked(url: str) -> tuple[_Parts, list[str]]:
    """The URL's parts and its addresses, every one of them allowed; TargetRefused otherwise."""
    parts = _parts(url)
    addresses = _resolve(parts)
    refused = [a for a in addresses if not address_allowed(a)]
    if refused or not addresses:
        raise TargetRefused(
            _(
                "%(host)s is at %(address)s, a loopback, private, link-local or otherwise "
                "non-public address: receivers there are refused unless MGC_WEBHOOK_ALLOWED_NETWORKS "
                "names it."
            )
            % {"host": parts.host, "address": ", ".join(refused) or "?"}
        )
    return parts, addresses


def validate_url(url: str) -> str:
    """For forms and the command: the URL, or a ValidationError saying why it is refused."""
    url = (url or "").strip()
    try:
        checked(url)
    except TargetRefused as exc:
        raise ValidationError(str(exc), code="webhook_url") from None
    return url


def post(url: str, body: bytes, headers: dict[str, str]) -> Answer:
    """POST `body` to `url` at an address that was just checked. TargetRefused before any
    connection; TransportError when no answer came; else the status and an excerpt."""
    parts, addresses = checked(url)
    address = addresses[0]
    timeout = urllib3.Timeout(
        connect=settings.MGC_WEBHOOK_CONNECT_TIMEOUT, read=settings.MGC_WEBHOOK_READ_TIMEOUT
    )
    if parts.scheme == "https":
        pool = urllib3.HTTPSConnectionPool(
            address,
            parts.port,
            timeout=timeout,
            retries=False,
            maxsize=1,
            server_hostname=parts.host,
            assert_hostname=parts.host,
            cert_reqs="CERT_REQUIRED",
        )
    else:
        pool = urllib3.HTTPConnectionPool(address, parts.port, timeout=timeout, retries=False, maxsize=1)
    host = f"[{parts.host}]" if ":" in parts.host else parts.host
    default_port = 443 if parts.scheme == "https" else 80
    headers = {**headers, "Host": host if parts.port == default_port else f"{host}:{parts.port}"}
    try:
        response = pool.urlopen(
            "POST",
            parts.path,
            body=body,
            headers=headers,
            redirect=False,
            retries=False,
            preload_content=False,
            assert_same_host=False,
        )
        try:
            excerpt = response.read(EXCERPT_BYTES * 4, decode_content=True)
        finally:
            response.release_conn()
    except urllib3.exceptions.HTTPError as exc:
        raise TransportError(_describe(exc)) from None
    finally:
        pool.close()
    return Answer(status=response.status, excerpt=excerpt.decode("utf-8", "replace")[:EXCERPT_BYTES])


def _describe(exc: Exception) -> str:
    # urllib3's NewConnectionError (refused, unreachable) derives from ConnectTimeoutError:
    # asked first, a closed port reads as what it is, not as a timeout.
    if isinstance(exc, urllib3.exceptions.NewConnectionError):
        return f"could not connect: {getattr(exc, 'reason', None) or exc}"[:300]
    if isinstance(exc, urllib3.exceptions.ConnectTimeoutError):
        return "connect timeout"
    if isinstance(exc, urllib3.exceptions.ReadTimeoutError):
        return "no answer in time (read timeout)"
    if isinstance(exc, urllib3.exceptions.SSLError):
        return f"TLS: {exc}"[:300]
    reason = getattr(exc, "reason", None) or exc
    return str(reason)[:300]
