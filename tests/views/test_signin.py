"""Signing in under a flood: lockouts per account and per address that refuse before any
password is hashed, audited, lifted by an admin; the set-password link's form held to a rate."""

import pytest
from django.contrib.auth.hashers import MD5PasswordHasher
from django.core.cache import cache
from django.test import override_settings
from django.urls import reverse

from projects.audit import audit_verify
from projects.models import AuditEvent

pytestmark = pytest.mark.django_db

LIMIT = 10


class CountingHasher(MD5PasswordHasher):
    """Counts every password check and every hash made, so a test can tell whether a refused
    sign-in reached the hasher at all."""

    algorithm = "counting_md5"
    runs = 0

    def encode(self, password, salt):
        CountingHasher.runs += 1
        return super().encode(password, salt)


@pytest.fixture(autouse=True)
def counting_hasher():
    cache.clear()  # lockout flags and rate counters of earlier tests
    with override_settings(
        PASSWORD_HASHERS=["tests.views.test_signin.CountingHasher"], AXES_FAILURE_LIMIT=LIMIT
    ):
        CountingHasher.runs = 0
        yield CountingHasher


def _login(client, username, password, ip="203.0.113.7"):
    return client.post(reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=ip)


def test_fifty_wrong_passwords_lock_the_account_before_any_hash_and_audit_it_once(
    client, make_user, counting_hasher
):
    make_user("maria")
    counting_hasher.runs = 0
    statuses = [_login(client, "maria", f"wrong-{n}").status_code for n in range(50)]
    assert statuses[: LIMIT - 1] == [200] * (LIMIT - 1)  # the form again, with its error
    assert statuses[LIMIT - 1 :] == [429] * (50 - LIMIT + 1)
    hashed = counting_hasher.runs
    assert hashed == LIMIT  # one password check per failure up to the lockout, none after

    refused = _login(client, "maria", "pw-maria")
    assert refused.status_code == 429 and "_auth_user_id" not in client.session
    assert "Sign-in paused" in refused.content.decode() and "not checked" in refused.content.decode()
    assert counting_hasher.runs == hashed  # the right password was not even looked at

    events = AuditEvent.objects.filter(action="account.locked_out")
    assert events.count() == 1
    assert events.get().details["username"] == "maria" and events.get().object_repr == "maria"
    assert audit_verify() == []


def test_the_account_is_locked_from_every_address_and_the_address_for_every_account(client, make_user):
    make_user("maria")
    make_user("oleg")
    for n in range(LIMIT):
        _login(client, "maria", f"wrong-{n}", ip="203.0.113.7")
    # Another address, the same account (spelled another way): refused.
    assert _login(client, "MARIA", "pw-maria", ip="198.51.100.20").status_code == 429
    # The same address, another account: refused too (a flood from one address stops).
    assert _login(client, "oleg", "pw-oleg", ip="203.0.113.7").status_code == 429
    # Another address, another account: unaffected.
    response = _login(client, "oleg", "pw-oleg", ip="198.51.100.20")
    assert response.status_code == 302 and client.session["_auth_user_id"]


def test_an_admin_unlocks_the_account_and_the_address_and_it_is_audited(client, make_user):
    make_user("maria")
    boss = make_user("boss", is_superuser=True, is_staff=True)
    for n in range(LIMIT):
        _login(client, "maria", f"wrong-{n}")
    admin_client = type(client)()
    admin_client.force_login(boss)
    page = admin_client.get(reverse("lockouts"))
    assert page.status_code == 200
    text = page.content.decode()
    assert "maria" in text and "203.0.113.7" in text and "locked until" in text

    for kind, value in (("username", "maria"), ("ip_address", "203.0.113.7")):
        response = admin_client.post(reverse("lockouts"), {"kind": kind, "value": value})
        assert response.status_code == 302
    assert "No failed sign-ins" in admin_client.get(reverse("lockouts")).content.decode()
    assert list(AuditEvent.objects.filter(action="account.unlock").values_list("actor_label", flat=True)) == [
        "boss",
        "boss",
    ]
    assert _login(client, "maria", "pw-maria").status_code == 302


def test_lockouts_page_is_for_superusers_only(client, admin):
    client.force_login(admin)  # a project admin, not a global one
    assert client.get(reverse("lockouts")).status_code == 404
    assert client.post(reverse("lockouts"), {"kind": "username", "value": "x"}).status_code == 404


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


@override_settings(MGC_TRUSTED_PROXIES=1)
def test_behind_a_proxy_the_client_address_is_the_one_the_proxy_saw(client, make_user):
    maria = make_user("maria")
    for n in range(LIMIT):
        client.post(
            reverse("login"),
            {"username": f"nobody{n}", "password": "x"},
            REMOTE_ADDR="10.0.0.1",
            HTTP_X_FORWARDED_FOR="1.2.3.4, 203.0.113.50",
        )
    # The proxy's own address is not locked: another client behind it signs in.
    response = client.post(
        reverse("login"),
        {"username": "maria", "password": "pw-maria"},
        REMOTE_ADDR="10.0.0.1",
        HTTP_X_FORWARDED_FOR="203.0.113.51",
    )
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(maria.pk)  # signed in


def test_past_the_checks_a_second_a_sign_in_is_busy_not_hashed_and_not_a_failure(
    client, make_user, counting_hasher, monkeypatch
):
    """Many addresses at once (or one address's first burst) each pass the lockout check; the
    budget of password checks a second bounds what they cost together."""
    from axes.models import AccessAttempt

    from projects.governance import signin

    make_user("maria")
    counting_hasher.runs = 0
    monkeypatch.setattr(signin.time, "time", lambda: 1_800_000_000.5)  # one window throughout
    with override_settings(MGC_LOGIN_CHECK_RATE="2/1s"):
        answers = [_login(client, f"intruder{n}", "wrong", ip=f"198.51.100.{n}") for n in range(1, 6)]
        assert [a.status_code for a in answers] == [200, 200, 429, 429, 429]
        assert "not a failed sign-in" in answers[2].content.decode()
        assert counting_hasher.runs == 2
        assert AccessAttempt.objects.count() == 2  # the busy ones are not failures
        # In the next second there is room again: the right password works.
        monkeypatch.setattr(signin.time, "time", lambda: 1_800_000_001.5)
        assert _login(client, "maria", "pw-maria", ip="198.51.100.9").status_code == 302
