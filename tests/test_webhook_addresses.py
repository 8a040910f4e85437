"""Webhook targets judged by the guard's functions alone: every IPv6 form that carries an IPv4
address, the ranges Python's `ipaddress` gets wrong, numeric spellings of a host, zone ids.
Nothing here sends: the delivery function is called with its connection pools replaced by a
trap, so a guard that let a URL through would fail the test instead of connecting. The only
receiver that gets a request is on 127.0.0.1."""

from __future__ import annotations

import io
import ipaddress
import socket

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError

from projects.events import addresses, targets
from tests.receiver import Receiver

pytestmark = pytest.mark.db_independent

# (URL, a piece of the reason the guard gives)
REFUSED = [
    # NAT64: the metadata service, loopback, a private network through a gateway
    ("http://[64:ff9b::a9fe:a9fe]/", "169.254.169.254 inside it (NAT64 64:ff9b::/96): link-local"),
    ("http://[64:ff9b::169.254.169.254]/", "169.254.169.254 inside it (NAT64 64:ff9b::/96)"),
    ("http://[64:ff9b::7f00:1]/", "127.0.0.1 inside it (NAT64 64:ff9b::/96): loopback"),
    ("http://[64:ff9b::a00:1]:8080/", "10.0.0.1 inside it (NAT64 64:ff9b::/96): private"),
    ("http://[64:ff9b:1::a9fe:a9fe]/", "169.254.169.254 inside it (NAT64 64:ff9b:1::/48)"),
    ("http://[64:ff9b:1::5db8:d822]/", "private, 64:ff9b:1::/48"),  # local-use NAT64 itself
    # 6to4
    ("http://[2002:7f00:1::1]/", "127.0.0.1 inside it (6to4 2002::/16): loopback"),
    ("http://[2002:a9fe:a9fe::]/", "169.254.169.254 inside it (6to4 2002::/16)"),
    ("http://[2002:c0a8:101::1]/", "192.168.1.1 inside it (6to4 2002::/16): private"),
    # Teredo: server 65.54.227.120, client 127.0.0.1 (stored inverted: 80ff:fffe)
    ("http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "127.0.0.1 inside it (Teredo 2001::/32 (client))"),
    ("http://[2001:0:a00:1:8000:63bf:3fff:fdd2]/", "10.0.0.1 inside it (Teredo 2001::/32 (server))"),
    # IPv4-compatible (deprecated), IPv4-mapped, IPv4-translated
    ("http://[::7f00:1]/", "127.0.0.1 inside it (IPv4-compatible ::/96): loopback"),
    ("http://[::127.0.0.1]/", "127.0.0.1 inside it (IPv4-compatible ::/96)"),
    ("http://[::a9fe:a9fe]/", "169.254.169.254 inside it (IPv4-compatible ::/96)"),
    ("http://[::ffff:127.0.0.1]/", "loopback, 127.0.0.0/8"),
    ("http://[::ffff:a9fe:a9fe]/", "link-local, 169.254.0.0/16"),
    ("http://[::ffff:0:7f00:1]/", "127.0.0.1 inside it (IPv4-translated ::ffff:0:0:0/96)"),
    ("http://[::ffff:0:a00:1]/", "10.0.0.1 inside it (IPv4-translated"),
    # ISATAP interface ids on a global prefix
    ("http://[2a00:1450::5efe:a00:1]/", "10.0.0.1 inside it (ISATAP interface id)"),
    ("http://[2a00:1450::200:5efe:7f00:1]/", "127.0.0.1 inside it (ISATAP interface id)"),
    # IPv6 ranges
    ("http://[fec0::1]/", "site-local, fec0::/10"),
    ("http://[fc00::5]/", "unique local, fc00::/7"),
    ("http://[fd12:3456::1]/", "unique local, fc00::/7"),
    ("http://[fe80::1]/", "link-local, fe80::/10"),
    ("http://[ff02::1]/", "multicast, ff00::/8"),
    ("http://[ff0e::1]/", "multicast, ff00::/8"),
    ("http://[2001:db8::1]/", "documentation, 2001:db8::/32"),
    ("http://[3fff::1]/", "documentation, 3fff::/20"),
    ("http://[2001:2::1]/", "benchmarking, 2001:2::/48"),
    ("http://[2001:10::1]/", "IETF protocol assignments, 2001::/23"),
    ("http://[100::1]/", "reserved, 100::/64"),
    ("http://[5f00::1]/", "reserved, outside 2000::/3"),
    ("http://[::1]/", "loopback, ::1/128"),
    ("http://[::]/", "unspecified, ::/128"),
    # IPv4 ranges
    ("http://127.0.0.1/", "loopback, 127.0.0.0/8"),
    ("http://127.255.255.254/", "loopback"),
    ("http://0.0.0.0/", "unspecified, 0.0.0.0/8"),
    ("http://0.1.2.3/", "unspecified, 0.0.0.0/8"),
    ("http://10.1.2.3/", "private, 10.0.0.0/8"),
    ("http://172.16.5.4/", "private, 172.16.0.0/12"),
    ("http://192.168.0.10/", "private, 192.168.0.0/16"),
    ("http://169.254.169.254/latest/meta-data/", "link-local, 169.254.0.0/16"),
    ("http://100.64.0.1/", "carrier-grade NAT"),
    ("http://100.127.255.1/", "100.64.0.0/10"),
    ("http://192.0.0.9/", "IETF protocol assignments, 192.0.0.0/24"),
    ("http://192.0.2.10/", "documentation, 192.0.2.0/24"),
    ("http://198.51.100.7/", "documentation, 198.51.100.0/24"),
    ("http://203.0.113.200/", "documentation, 203.0.113.0/24"),
    ("http://198.18.0.1/", "benchmarking, 198.18.0.0/15"),
    ("http://198.19.255.1/", "benchmarking"),
    ("http://192.88.99.1/", "reserved"),
    ("http://224.0.0.1/", "multicast, 224.0.0.0/4"),
    ("http://240.0.0.1/", "reserved, 240.0.0.0/4"),
    ("http://255.255.255.255/", "reserved"),
    # numeric spellings and zone ids: refused as written
    ("http://2130706433/", "127.0.0.1 written in another form"),
    ("http://0x7f.1/", "127.0.0.1 written in another form"),
    ("http://0x7f000001/", "127.0.0.1 written in another form"),
    ("http://017700000001/", "127.0.0.1 written in another form"),
    ("http://0177.0.0.1/", "127.0.0.1 written in another form"),
    ("http://127.1/", "127.0.0.1 written in another form"),
    ("http://127.0.1/", "127.0.0.1 written in another form"),
    ("http://0/", "0.0.0.0 written in another form"),
    ("http://127.0.0.1./", "127.0.0.1 written in another form"),
    ("http://3232235777/", "192.168.1.1 written in another form"),
    ("http://0xa9.0xfe.0xa9.0xfe/", "169.254.169.254 written in another form"),
    ("http://010.0.0.1/", "8.0.0.1 written in another form"),  # octal: not what it looks like
    ("http://1.2.3.4.5/", "not a valid IPv4 address"),
    ("http://09.1.1.1/", "not a valid IPv4 address"),
    ("http://4294967296/", "not a valid IPv4 address"),
    ("http://[fe80::1%25eth0]/", "zone id"),
    ("http://[fe80::1%eth0]/", "zone id"),
    ("http://[::1/", "not a valid URL"),
    # names
    ("http://localhost/", "loopback"),
]


@pytest.fixture
def no_allowlist(settings):
    settings.MGC_WEBHOOK_ALLOWED_NETWORKS = []


@pytest.fixture
def no_connection(monkeypatch):
    """Connection pools that fail the test if the delivery function ever makes one."""

    def trap(*args, **kwargs):
        raise AssertionError(f"the guard let a connection to {args[:2]} through")

    monkeypatch.setattr(targets.urllib3, "HTTPConnectionPool", trap)
    monkeypatch.setattr(targets.urllib3, "HTTPSConnectionPool", trap)


@pytest.mark.parametrize("url, reason", REFUSED)
def test_every_spelling_of_a_non_public_address_is_refused_at_registration_and_at_delivery(
    url, reason, no_allowlist, no_connection
):
    with pytest.raises(ValidationError) as at_registration:  # what the form and the service call
        targets.validate_url(url)
    [said] = at_registration.value.messages
    assert reason in said
    with pytest.raises(targets.TargetRefused) as at_delivery:  # what every attempt calls
        targets.post(url, b"{}", {})
    assert str(at_delivery.value) == said
    with pytest.raises(CommandError) as asked:
        call_command("webhooks", "check-url", url, stdout=io.StringIO())
    assert asked.value.returncode == 1 and reason in str(asked.value)


@pytest.mark.parametrize(
    "url",
    [
        "https://93.184.216.34/hooks",
        "https://[2606:4700::1111]/hooks",
        "https://[64:ff9b::5db8:d822]/",  # NAT64 of a public address: what DNS64 hands out
        "https://[64:ff9b::8.8.8.8]/",
        "https://[2002:5db8:d822::1]/",  # 6to4 of a public address
        "https://[2a00:1450:4001:81a::200e]/",
        "https://100.63.255.255/",  # just outside 100.64.0.0/10
        "https://198.20.0.1/",  # just outside 198.18.0.0/15
    ],
)
def test_public_addresses_in_every_form_are_judged_allowed_without_sending(url, no_allowlist):
    parts, found = targets.checked(url)
    assert found == [str(ipaddress.ip_address(parts.host))]


def test_the_table_is_ours_whatever_pythons_ipaddress_says():
    """Python 3.12.1 calls these global; the table refuses them."""
    for text in ("64:ff9b::a9fe:a9fe", "::7f00:1", "::ffff:0:7f00:1", "fec0::1", "3fff::1", "5f00::1"):
        assert addresses.judge(ipaddress.ip_address(text)), text
    assert addresses.judge(ipaddress.ip_address("100.64.0.1"))  # neither private nor global there
    assert addresses.judge(ipaddress.ip_address("192.0.0.9"))  # global there; a protocol's address
    assert not addresses.judge(ipaddress.ip_address("64:ff9b::5db8:d822"))


def test_teredo_judges_the_server_and_the_inverted_client():
    found = addresses.embedded(ipaddress.IPv6Address("2001:0:4136:e378:8000:63bf:3fff:fdd2"))
    assert found == [
        ("Teredo 2001::/32 (server)", ipaddress.IPv4Address("65.54.227.120")),
        ("Teredo 2001::/32 (client)", ipaddress.IPv4Address("192.0.2.45")),  # RFC 4380's example
    ]


def test_numeric_spellings_are_read_as_resolvers_read_them():
    read = addresses.numeric_host
    assert read("example.com") is None and read("127.0.0.1") is None and read("a1.b2") is None
    assert str(read("2130706433")) == str(read("0x7f.1")) == str(read("0177.0.0.01")) == "127.0.0.1"
    assert str(read("1.2.65535")) == "1.2.255.255"
    for bad in ("1.2.3.256", "1.2.65536", "256.1", "0x100.1.1.1", "1.2.3.4.5", "08", "a.1"):
        with pytest.raises(ValueError):
            read(bad)


def test_the_allowlist_lets_through_only_the_address_it_names(settings, no_connection):
    """The tests' (and the demo's) way to deliver to a receiver on loopback: the allowlist.
    It names the address connected to, so a NAT64 or 6to4 form of 127.0.0.1 is still
    another host and stays refused."""
    settings.MGC_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1", "10.20.0.0/16"]
    assert targets.address_allowed("127.0.0.1") and targets.address_allowed("::ffff:127.0.0.1")
    assert targets.address_allowed("10.20.3.4") and not targets.address_allowed("10.21.0.1")
    for url in (
        "http://[64:ff9b::7f00:1]/",
        "http://[2002:7f00:1::]/",
        "http://[::7f00:1]/",
        "http://127.1/",
    ):
        with pytest.raises(targets.TargetRefused):
            targets.post(url, b"{}", {})


def test_the_request_goes_to_the_checked_address_not_to_a_second_lookup(settings, monkeypatch):
    """DNS rebinding: the name is resolved once per attempt, checked, and the connection is
    made to that very address (the Host header keeps the name). A second lookup would answer
    127.0.0.3, where nothing listens."""
    settings.MGC_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1"]
    receiver = Receiver()
    port = int(receiver.url.rsplit(":", 1)[1].split("/")[0])
    answers = iter(["127.0.0.1", "127.0.0.3", "127.0.0.3"])
    lookups = []
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if host != "receiver.test":
            return real(host, *args, **kwargs)
        lookups.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), port))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    try:
        answer = targets.post(f"http://receiver.test:{port}/hooks", b"{}", {"X-Test": "1"})
        assert answer.status == 200 and lookups == ["receiver.test"]
        [request] = receiver.requests
        assert request.headers["host"] == f"receiver.test:{port}"
        with pytest.raises(targets.TargetRefused):  # the next attempt looks again: 127.0.0.3 now
            targets.post(f"http://receiver.test:{port}/hooks", b"{}", {})
        assert len(receiver.requests) == 1
    finally:
        receiver.close()


def test_check_url_says_allowed_and_where_a_delivery_would_go(settings):
    settings.MGC_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1"]
    out = io.StringIO()
    call_command("webhooks", "check-url", "http://localhost:9/hooks", stdout=out)
    text = out.getvalue()
    assert "localhost resolves (this machine's resolver, now) to 127.0.0.1" in text
    assert "127.0.0.1: allowed (MGC_WEBHOOK_ALLOWED_NETWORKS names it)" in text
    assert "Nothing was sent" in text and "allowed: a delivery would POST to 127.0.0.1 port 9" in text
    settings.MGC_WEBHOOK_ALLOWED_NETWORKS = []
    out = io.StringIO()
    with pytest.raises(CommandError) as refused:
        call_command("webhooks", "check-url", "http://[64:ff9b::a9fe:a9fe]/", stdout=out)
    assert str(refused.value).startswith("refused: 64:ff9b::a9fe:a9fe is at 64:ff9b::a9fe:a9fe")
    assert "64:ff9b::a9fe:a9fe: refused: 169.254.169.254 inside it" in out.getvalue()
