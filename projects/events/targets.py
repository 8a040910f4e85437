"""Receiver URLs: which ones the console may call, and the guarded POST.

A receiver on a loopback, private, link-local or otherwise non-public address is refused
unless MGC_WEBHOOK_ALLOWED_NETWORKS names it: a webhook must not become a way to reach the
console's own network (cloud metadata at 169.254.169.254, an admin port on localhost).
Which addresses are non-public, IPv4 inside IPv6 included, is `addresses.judge`'s table; a
host written as a number in another form (2130706433, 0x7f.1) or with an IPv6 zone id is
refused as written. The host is resolved at every attempt, every address it resolves to is
checked, and the request goes to the address that was checked (the Host header and TLS name
stay the URL's): a DNS answer that changes between the check and the connection (rebinding)
cannot slip through. Redirects are never followed (a 3xx is a failed attempt) and timeouts
are short. `manage.py webhooks check-url URL` shows the verdict without sending anything."""

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
from django.utils.translation import gettext_lazy

from projects.events import addresses

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


def allowlisted(address: str) -> bool:
    """MGC_WEBHOOK_ALLOWED_NETWORKS names the address (an IPv4-mapped one as its IPv4
    address). Only the address connected to counts: naming 127.0.0.1 does not let
    64:ff9b::7f00:1 through, that is another host (a NAT64 gateway)."""
    ip = addresses.unmapped(addresses.parse(address))
    return any(ip.version == net.version and ip in net for net in allowlist())


def address_allowed(address: str) -> bool:
    """Public unicast addresses (addresses.judge), and whatever the allowlist names."""
    return allowlisted(address) or not addresses.judge(addresses.parse(address))


_KINDS = {
    addresses.UNSPECIFIED: gettext_lazy("unspecified"),
    addresses.LOOPBACK: gettext_lazy("loopback"),
    addresses.PRIVATE: gettext_lazy("private"),
    addresses.SHARED: gettext_lazy("shared address space (carrier-grade NAT)"),
    addresses.LINK_LOCAL: gettext_lazy("link-local"),
    addresses.SITE_LOCAL: gettext_lazy("site-local"),
    addresses.UNIQUE_LOCAL: gettext_lazy("unique local"),
    addresses.MULTICAST: gettext_lazy("multicast"),
    addresses.DOCUMENTATION: gettext_lazy("documentation"),
    addresses.BENCHMARKING: gettext_lazy("benchmarking"),
    addresses.RESERVED: gettext_lazy("reserved"),
    addresses.PROTOCOL: gettext_lazy("IETF protocol assignments"),
    addresses.TUNNEL: gettext_lazy("an IPv4 address wrapped in IPv6"),
}


def describe(finding: addresses.Finding) -> str:
    """One reason, in words: "loopback, 127.0.0.0/8", or for an IPv4 address found inside an
    IPv6 one, "169.254.169.254 inside it (NAT64 64:ff9b::/96): link-local, 169.254.0.0/16"."""
    what = f"{_KINDS[finding.kind]}, {finding.network}"
    if not finding.via:
        return what
    return _("%(inner)s inside it (%(via)s): %(what)s") % {
        "inner": finding.address,
        "via": finding.via,
        "what": what,
    }


@dataclass(frozen=True)
class Judged:
    """One address a URL's host resolved to, and what the guard makes of it."""

    address: str
    findings: tuple[addresses.Finding, ...]
    allowlisted: bool

    @property
    def allowed(self) -> bool:
        return self.allowlisted or not self.findings

    def reasons(self) -> str:
        return "; ".join(describe(f) for f in self.findings)


def _parts(url: str) -> _Parts:
    if len(url) > MAX_URL or any(ord(c) < 33 for c in url):
        raise TargetRefused(_("The URL is too long or holds spaces or control characters."))
    try:
        split = urlsplit(url)
    except ValueError:  # an unclosed or malformed [IPv6] host
        raise TargetRefused(_("This is not a valid URL.")) from None
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


def _literal(host: str) -> str | None:
    """The address a host names by itself (an IPv6 literal, an IPv4 address in any numeric
    spelling), None for a name to resolve. TargetRefused for spellings we do not take."""
    if ":" in host:  # urlsplit took it from [brackets]
        if "%" in host:
            raise TargetRefused(
                _(
                    "%(host)s carries a zone id (after %%): it names a network interface of "
                    "this machine, never a receiver's address."
                )
                % {"host": host}
            )
        try:
            return str(ipaddress.IPv6Address(host))
        except ValueError:
            raise TargetRefused(_("%(host)s is not a valid IPv6 address.") % {"host": host}) from None
    try:
        spelled = addresses.numeric_host(host)
    except ValueError:
        raise TargetRefused(
            _("%(host)s ends in a number but is not a valid IPv4 address.") % {"host": host}
        ) from None
    if spelled is not None:
        # Resolvers and browsers read 2130706433, 0x7f.1 or 0177.0.0.1 as 127.0.0.1; whatever
        # the address, a URL that hides it is refused: write the address plainly.
        raise TargetRefused(
            _(
                "%(host)s is the IPv4 address %(address)s written in another form (a single "
                "number, octal or hexadecimal parts): write it as %(address)s."
            )
            % {"host": host, "address": spelled}
        )
    try:
        return str(ipaddress.IPv4Address(host))
    except ValueError:
        return None


def _resolve(parts: _Parts) -> list[str]:
    literal = _literal(parts.host)
    if literal is not None:
        return [literal]
    try:
        infos = socket.getaddrinfo(parts.host, parts.port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise TargetRefused(_("The host %(host)s does not resolve.") % {"host": parts.host}) from None
    return list(dict.fromkeys(info[4][0] for info in infos))


def inspect(url: str) -> tuple[_Parts, list[Judged]]:
    """The URL's parts and each address its host resolves to (now), judged; nothing is sent.
    TargetRefused for a URL that is refused before any address is judged."""
    parts = _parts(url)
    return parts, [
        Judged(a, tuple(addresses.judge(addresses.parse(a))), allowlisted(a)) for a in _resolve(parts)
    ]


def checked(url: str) -> tuple[_Parts, list[str]]:
    """The URL's parts and its addresses, every one of them allowed; TargetRefused otherwise."""
    parts, judged = inspect(url)
    return parts, verdict(parts, judged)


def verdict(parts: _Parts, judged: list[Judged]) -> list[str]:
    """The addresses when every one is allowed; TargetRefused saying why otherwise."""
    refused = [j for j in judged if not j.allowed]
    if refused or not judged:
        raise TargetRefused(
            _(
                "%(host)s is at %(address)s (%(why)s), a non-public address: receivers there "
                "are refused unless MGC_WEBHOOK_ALLOWED_NETWORKS names it."
            )
            % {
                "host": parts.host,
                "address": ", ".join(j.address for j in refused) or "?",
                "why": "; ".join(j.reasons() for j in refused) or _("no address"),
            }
        )
    return [j.address for j in judged]


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
