"""Signing in so that nobody who is not attacking is turned away: failures lock the pair
(account, client) where the client is the browser's device cookie or else its address; an
address failing for many accounts is paused and an account failing from many addresses is
slowed, for browsers without its device cookie only; refusals are 429 with Retry-After and
cost no password check; admins see and lift them; the set-password link's form has a rate."""

import threading
import time

import pytest
from django.contrib.auth.hashers import MD5PasswordHasher
from django.core.cache import cache
from django.db import connection, connections
from django.test import Client, override_settings
from django.urls import reverse

from projects.audit import audit_verify
from projects.governance import checkpool, devices, signin
from projects.models import AuditEvent, SignInFailure

pytestmark = pytest.mark.django_db

LIMIT = 10
LOGIN = "/accounts/login/"


class CountingHasher(MD5PasswordHasher):
    """Counts every hash made (a password check, or the stand-in hash Django makes for an
    unknown account), so a test can tell whether a refused sign-in reached the hasher; and
    with `delay` set, each takes that long (a PBKDF2 run without its CPU), so that the pool
    of checks really fills up."""

    algorithm = "counting_md5"
    runs = 0
    delay = 0.0
    running = 0
    most_at_once = 0
    _lock = threading.Lock()

    def encode(self, password, salt):
        cls = CountingHasher
        with cls._lock:
            cls.runs += 1
            cls.running += 1
            cls.most_at_once = max(cls.most_at_once, cls.running)
        try:
            if cls.delay:
                time.sleep(cls.delay)
            return super().encode(password, salt)
        finally:
            with cls._lock:
                cls.running -= 1


@pytest.fixture(autouse=True)
def counting_hasher():
    cache.clear()  # refusals flagged by earlier tests
    with override_settings(
        PASSWORD_HASHERS=["tests.views.test_signin.CountingHasher"],
        MGC_LOGIN_FAILURE_LIMIT=LIMIT,
        MGC_LOGIN_ADDRESS_FAILURE_LIMIT=30,
        MGC_LOGIN_ADDRESS_RATE="30/m",
    ):
        CountingHasher.runs = CountingHasher.most_at_once = 0
        CountingHasher.delay = 0.0
        yield CountingHasher
    cache.clear()


def _login(client, username, password, ip="203.0.113.7", **extra):
    return client.post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=ip, **extra)


def _browser_that_signed_in(username: str, ip: str = "192.0.2.10") -> Client:
    """A browser that signed in once (it keeps the device cookie), then logged out."""
    browser = Client()
    assert _login(browser, username, f"pw-{username}", ip=ip).status_code == 302
    assert devices.cookie_name(username) in browser.cookies
    browser.post(reverse("logout"))
    return browser


def test_ten_wrong_passwords_from_one_client_lock_that_pair_and_its_owner_still_signs_in(
    make_user, counting_hasher
):
    maria = make_user("maria")
    own_browser = _browser_that_signed_in("maria", ip="203.0.113.7")  # the attacker's address too
    attacker = Client()
    counting_hasher.runs = 0
    statuses = [_login(attacker, "maria", f"wrong-{n}").status_code for n in range(LIMIT + 5)]
    assert statuses == [200] * LIMIT + [429] * 5  # the form again with its error, then paused
    assert counting_hasher.runs == LIMIT  # nothing hashed once the pair is locked

    refused = _login(attacker, "maria", "pw-maria")  # even the right password, from there
    assert refused.status_code == 429 and counting_hasher.runs == LIMIT
    assert int(refused["Retry-After"]) > 60
    assert "Sign-in paused" in refused.content.decode() and "not checked" in refused.content.decode()

    # Her own browser, from the very same address: signed in.
    response = _login(own_browser, "maria", "pw-maria")
    assert response.status_code == 302 and own_browser.session["_auth_user_id"] == str(maria.pk)
    # A browser she never used, from another address: signed in too (the account is not locked).
    elsewhere = Client()
    assert _login(elsewhere, "maria", "pw-maria", ip="198.51.100.20").status_code == 302

    events = AuditEvent.objects.filter(action="account.locked_out")
    assert events.count() == 1
    event = events.get()
    assert event.object_repr == "maria"
    assert event.details["username"] == "maria" and event.details["ip_address"] == "203.0.113.7"
    assert audit_verify() == []


def test_a_refusal_known_to_the_cache_costs_no_query_and_no_session(
    client, make_user, django_assert_num_queries
):
    make_user("maria")
    for n in range(LIMIT):
        _login(client, "maria", f"wrong-{n}")
    client.cookies.clear()
    with django_assert_num_queries(0):
        response = _login(client, "maria", "pw-maria")
    assert response.status_code == 429 and response["Retry-After"]
    assert not response.cookies  # no session, no CSRF cookie: answered before either


def test_failures_from_many_addresses_slow_the_account_for_new_browsers_not_for_its_owner(
    make_user, counting_hasher
):
    make_user("maria")
    own_browser = _browser_that_signed_in("maria")
    for n in range(LIMIT):  # one wrong password from each of ten addresses
        assert _login(Client(), "maria", "wrong", ip=f"198.51.100.{n + 1}").status_code == 200
    hashed = counting_hasher.runs

    first = _login(Client(), "maria", "wrong", ip="198.51.100.50")  # takes the account's turn
    assert first.status_code == 200
    slowed = _login(Client(), "maria", "pw-maria", ip="198.51.100.51")
    assert slowed.status_code == 429 and 1 <= int(slowed["Retry-After"]) <= 2
    assert "slowed down" in slowed.content.decode()
    assert counting_hasher.runs == hashed + 1  # the refused one was not checked

    assert _login(own_browser, "maria", "pw-maria", ip="198.51.100.52").status_code == 302
    assert not AuditEvent.objects.filter(action="account.locked_out").exists()  # no pair reached ten


def test_the_slowdown_doubles_with_failures_up_to_its_ceiling():
    assert [signin.slowdown_seconds(n) for n in (0, LIMIT - 1, LIMIT, LIMIT + 1, LIMIT + 3)] == [
        0,
        0,
        1,
        2,
        8,
    ]
    assert signin.slowdown_seconds(LIMIT + 40) == 60  # MGC_LOGIN_SLOWDOWN_MAX_SECONDS


@override_settings(MGC_LOGIN_ADDRESS_FAILURE_LIMIT=5)
def test_an_address_failing_for_many_accounts_is_paused_except_for_browsers_that_signed_in_there(
    make_user, counting_hasher
):
    make_user("maria")
    make_user("oleg")
    own_browser = _browser_that_signed_in("oleg", ip="203.0.113.7")
    spray = Client()
    for n in range(5):
        assert _login(spray, f"someone{n}", "Winter2026!").status_code == 200
    hashed = counting_hasher.runs
    paused = _login(Client(), "maria", "pw-maria")  # a new browser at that address
    assert paused.status_code == 429 and "from this address" in paused.content.decode()
    assert counting_hasher.runs == hashed
    assert _login(own_browser, "oleg", "pw-oleg").status_code == 302
    assert _login(Client(), "maria", "pw-maria", ip="198.51.100.9").status_code == 302  # elsewhere
    event = AuditEvent.objects.get(action="account.locked_out")
    assert event.details["scope"] == "address" and event.details["ip_address"] == "203.0.113.7"


@override_settings(MGC_LOGIN_ADDRESS_RATE="6/m")
def test_a_burst_of_sign_ins_from_one_address_pauses_it_at_once_not_browsers_that_signed_in_there(
    client, make_user, counting_hasher, monkeypatch
):
    """A flood is paused by its rate, however few of its passwords were checked yet (here none:
    every check was taken). Browsers that signed in there before are not paused."""
    from projects.governance import rates

    monkeypatch.setattr(rates, "_now", lambda: 1_800_000_010.0)  # one window throughout
    make_user("oleg")
    own_browser = _browser_that_signed_in("oleg", ip="203.0.113.7")
    counting_hasher.runs = 0
    with override_settings(MGC_LOGIN_QUEUE=0):
        checks = checkpool.pool()
        monkeypatch.setattr(checks.lanes[False], "full", lambda: True)  # a flood holds every check
        statuses = [_login(Client(), f"intruder{n}", "wrong").status_code for n in range(9)]
        assert statuses == [429] * 9 and counting_hasher.runs == 0
        assert "at once" in _login(Client(), "x", "y", ip="198.51.100.1").content.decode()  # busy
    paused = _login(Client(), "oleg", "pw-oleg")
    assert paused.status_code == 429 and int(paused["Retry-After"]) > 600
    assert "from this address" in paused.content.decode()
    assert _login(own_browser, "oleg", "pw-oleg").status_code == 302
    event = AuditEvent.objects.get(action="account.locked_out")
    assert event.details["scope"] == "address" and event.details["attempts"] == 7
    boss = make_user("boss", is_superuser=True, is_staff=True)
    client.force_login(boss)
    text = client.get(reverse("lockouts")).content.decode()
    assert "203.0.113.7" in text and "account <code></code>" not in text


def test_a_device_cookie_counts_only_for_its_account_and_only_signed(make_user):
    make_user("maria")
    make_user("oleg")
    browser = _browser_that_signed_in("maria")
    cookie = browser.cookies[devices.cookie_name("maria")]
    assert cookie["httponly"] and cookie["samesite"] == "Lax" and cookie["path"] == LOGIN
    # Her cookie under oleg's name, or altered, is no device of anyone's: counted by address.
    forged = Client()
    forged.cookies[devices.cookie_name("oleg")] = cookie.value
    forged.cookies[devices.cookie_name("maria")] = cookie.value[:-2] + "xx"
    _login(forged, "oleg", "wrong")
    _login(forged, "maria", "wrong")
    assert set(SignInFailure.objects.values_list("client", flat=True)) == {"address:203.0.113.7"}
    _login(browser, "maria", "wrong")
    assert SignInFailure.objects.filter(account="maria", trusted=True).count() == 1


def test_an_ipv6_client_is_counted_by_its_64():
    assert signin.address_key("2001:db8:1:2:aaaa::1") == signin.address_key("2001:db8:1:2:bbbb::9")
    assert signin.address_key("2001:db8:1:2:aaaa::1") == "2001:db8:1:2::/64"
    assert signin.address_key("::ffff:203.0.113.7") == "203.0.113.7"
    assert signin.address_key(None) == "unknown"


def test_an_admin_lifts_a_lock_a_pause_and_a_slowdown_and_it_is_audited(make_user):
    make_user("maria")
    boss = make_user("boss", is_superuser=True, is_staff=True)
    with override_settings(MGC_LOGIN_ADDRESS_FAILURE_LIMIT=12):
        attacker = Client()
        for n in range(LIMIT):
            _login(attacker, "maria", f"wrong-{n}")
        for n in range(2):
            _login(attacker, f"other{n}", "wrong")
        admin_client = Client()
        admin_client.force_login(boss)
        text = admin_client.get(reverse("lockouts")).content.decode()
        assert text.count("locked until") == 2  # maria from the address, and the address
        assert "slowed: one check per 1 second" in text and "203.0.113.7" in text

        for kind, fields in (
            ("pair", {"account": "maria", "client": "address:203.0.113.7"}),
            ("address", {"address": "203.0.113.7"}),
            ("account", {"account": "maria"}),
        ):
            assert admin_client.post(reverse("lockouts"), {"kind": kind, **fields}).status_code == 302
        assert "Nothing is locked" in admin_client.get(reverse("lockouts")).content.decode()
        unlocks = AuditEvent.objects.filter(action="account.unlock")
        assert [event.details["kind"] for event in unlocks.order_by("id")] == ["pair", "address", "account"]
        assert {event.actor_label for event in unlocks} == {"boss"}
        assert _login(attacker, "maria", "pw-maria").status_code == 302


def test_lockouts_page_is_for_superusers_only(client, admin):
    client.force_login(admin)  # a project admin, not a global one
    assert client.get(reverse("lockouts")).status_code == 404
    assert client.post(reverse("lockouts"), {"kind": "account", "account": "x"}).status_code == 404


@override_settings(MGC_SET_PASSWORD_RATE="5/10m")
def test_the_set_password_form_is_held_to_a_rate_per_address_and_per_link(client, make_user):
    make_user("nina")
    url = reverse("password_reset_confirm", args=["OTk5OTk5", "set-password"])  # a wrong link
    statuses = [
        client.post(url, {"new_password1": "x", "new_password2": "x"}, REMOTE_ADDR="203.0.113.9").status_code
        for _ in range(7)
    ]
    assert statuses[:5] == [200] * 5 and statuses[5:] == [429, 429]
    # The same link from another address: the link's own count is spent too.
    other = client.post(url, {"new_password1": "x"}, REMOTE_ADDR="198.51.100.1")
    assert other.status_code == 429 and "Too many attempts" in other.content.decode()
    assert AuditEvent.objects.filter(action="account.throttled").count() >= 1
    # Another link from a fresh address is not affected.
    fresh = reverse("password_reset_confirm", args=["OTk5OTk4", "set-password"])
    assert client.post(fresh, {}, REMOTE_ADDR="198.51.100.2").status_code == 200


@override_settings(MGC_TRUSTED_PROXIES=1, MGC_LOGIN_ADDRESS_FAILURE_LIMIT=LIMIT)
def test_behind_a_proxy_the_client_address_is_the_one_the_proxy_saw(client, make_user):
    maria = make_user("maria")
    for n in range(LIMIT):
        _login(client, f"nobody{n}", "x", ip="10.0.0.1", HTTP_X_FORWARDED_FOR="1.2.3.4, 203.0.113.50")
    # That client is paused; the proxy's own address is not: another client behind it signs in.
    assert (
        _login(client, "maria", "pw-maria", ip="10.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.50").status_code
        == 429
    )
    response = _login(client, "maria", "pw-maria", ip="10.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.51")
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(maria.pk)


# --- The pool of password checks, under real concurrency (PostgreSQL) ------------------------------

on_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="concurrent sign-ins: the PostgreSQL run has them"
)


def _in_threads(jobs: list, *, spacing: float = 0.0) -> list:
    """Run each job in a thread of its own, starting `spacing` seconds apart; their results."""
    results: list = [None] * len(jobs)

    def run(n, job):
        time.sleep(n * spacing)
        try:
            results[n] = job()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(n, job)) for n, job in enumerate(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


# These two run checks at the usual priority: on a machine busy with other work (CI runs two
# suites at once) a lowered one would time the machine, not the pool (tests/test_checkpool.py
# shows the priority).
@on_postgresql
@pytest.mark.django_db(transaction=True)
@override_settings(MGC_LOGIN_CHECKS=1, MGC_LOGIN_QUEUE=4, MGC_LOGIN_CHECK_NICE=0)
def test_twenty_people_signing_in_within_ten_seconds_are_all_signed_in(make_user, counting_hasher):
    """The morning rush (the old budget of one check per two seconds refused the second
    person): twenty right passwords arriving ten a second, each check taking 50 ms, one check
    at a time. They queue for a moment; none is refused."""
    names = [f"person{n}" for n in range(20)]
    for name in names:
        make_user(name)
    counting_hasher.runs = counting_hasher.most_at_once = 0
    counting_hasher.delay = 0.05
    statuses = _in_threads(
        [
            lambda n=n: _login(Client(), names[n], f"pw-{names[n]}", ip=f"198.51.100.{n + 1}").status_code
            for n in range(20)
        ],
        spacing=0.1,
    )
    assert statuses == [302] * 20
    assert counting_hasher.runs == 20 and counting_hasher.most_at_once == 1  # the bound held


@on_postgresql
@pytest.mark.django_db(transaction=True)
@override_settings(MGC_LOGIN_CHECKS=1, MGC_LOGIN_QUEUE=2, MGC_LOGIN_CHECK_NICE=0)
def test_during_a_flood_from_many_addresses_a_person_who_signed_in_before_gets_in(make_user, counting_hasher):
    """Six flooders from ever new addresses keep the one check and its queue full (each check
    100 ms); a person whose browser signed in before has a lane of their own."""
    make_user("maria")
    own_browser = _browser_that_signed_in("maria")
    counting_hasher.delay = 0.1
    stop = threading.Event()
    answers: dict[int, int] = {}
    lock = threading.Lock()
    sequence = iter(range(10**6))

    def flooder():
        browser = Client()
        while not stop.is_set():
            n = next(sequence)
            status = _login(
                browser, f"intruder{n}", "wrong", ip=f"10.{n // 65536 % 256}.{n // 256 % 256}.{n % 256}"
            ).status_code
            with lock:
                answers[status] = answers.get(status, 0) + 1

    def person():
        time.sleep(0.5)  # the flood under way
        try:
            return _login(own_browser, "maria", "pw-maria", ip="198.51.100.7").status_code
        finally:
            stop.set()

    results = _in_threads([person] + [flooder] * 6)
    assert results[0] == 302
    assert answers.get(429, 0) >= 1 and answers.get(200, 0) >= 1  # the pool was full: some busy
    assert counting_hasher.most_at_once <= 2  # the flood's one check, and hers
    assert not SignInFailure.objects.filter(account="maria").exists()
    assert checkpool.pool().state() == {"trusted": 0, "trusted_waiting": 0, "running": 0, "waiting": 0}
