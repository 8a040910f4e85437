"""Single sign-on against a real OpenID Connect provider (devtools/oidc_provider, its own
process on 127.0.0.1): the console's side is social-auth's real code path, talking HTTP to the
provider's discovery, token, JWKS and userinfo endpoints. A person's browser is played by
`ProviderVisit` (requests, for the provider's login page) and the Django test client (for the
console)."""

from __future__ import annotations

import itertools
import time
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.contrib.auth import get_user_model
from social_django.models import UserSocialAuth

from projects.models import AuditEvent, GroupMapping, Membership

pytestmark = pytest.mark.django_db
_seq = itertools.count(1)


def unique(name: str) -> str:
    return f"{name}{next(_seq)}x{int(time.time() * 1000) % 100000}"


class ProviderVisit:
    """A browser at the provider: signs in on the provider's own login page once, then
    answers authorization requests with a redirect back to the console."""

    def __init__(self, provider, username: str, password: str):
        self.provider, self.username, self.password = provider, username, password
        self.http = requests.Session()

    def authorize(self, authorize_url: str) -> str:
        """Follow the console's redirect to the provider; the callback URL it sends back."""
        answer = self.http.get(authorize_url, allow_redirects=False, timeout=10)
        if answer.status_code == 302 and "/accounts/login/" in answer.headers["Location"]:
            login = self.provider.base + answer.headers["Location"]
            page = self.http.get(login, timeout=10)
            assert page.status_code == 200 and "Test identity provider" in page.text
            answer = self.http.post(
                login,
                data={
                    "username": self.username,
                    "password": self.password,
                    "csrfmiddlewaretoken": self.http.cookies["idp_csrftoken"],
                    "next": parse_qs(urlsplit(login).query)["next"][0],
                },
                headers={"Referer": login},
                allow_redirects=False,
                timeout=10,
            )
            assert answer.status_code == 302, answer.text[:500]
            answer = self.http.get(
                self.provider.base + answer.headers["Location"], allow_redirects=False, timeout=10
            )
        assert answer.status_code == 302, answer.text[:500]
        return answer.headers["Location"]


def begin(client) -> str:
    answer = client.post("/sso/login/oidc/")
    assert answer.status_code == 302, answer.content[:500]
    return answer["Location"]


def callback_path(url: str) -> str:
    parts = urlsplit(url)
    assert parts.netloc == "testserver", url
    return f"{parts.path}?{parts.query}"


def sign_in(client, visit: ProviderVisit):
    """The whole round trip; the console's last answer."""
    return client.get(callback_path(visit.authorize(begin(client))))


@pytest.fixture
def person_at_provider(sso):
    def make(name: str = "", groups=(), **fields):
        username = name or unique("pat")
        sso.user(username, password="pw-" + username, groups=list(groups), **fields)
        return ProviderVisit(sso, username, "pw-" + username)

    return make


def test_first_sign_in_creates_the_account_linked_by_subject(client, person_at_provider):
    visit = person_at_provider(email="pat@example.com", first_name="Pat")
    answer = sign_in(client, visit)
    assert answer.status_code == 302 and answer["Location"] == "/"
    user = get_user_model().objects.get(username=visit.username)
    assert user.email == "pat@example.com" and not user.has_usable_password()
    link = UserSocialAuth.objects.get(user=user)
    assert link.provider == "oidc" and link.uid
    assert "refresh_token" not in link.extra_data and "access_token" not in link.extra_data
    assert client.get("/").status_code == 200
    event = AuditEvent.objects.get(action="account.create")
    assert event.details["via"] == "single sign-on" and event.details["subject"] == link.uid


def assert_refused(answer, *words: str) -> str:
    """A clear page (not a 500, nobody signed in) that says what went wrong."""
    text = answer.content.decode()
    assert 400 <= answer.status_code < 600 and answer.status_code != 500, (answer.status_code, text[:300])
    assert "Sign-in failed" in text or "unavailable" in text, text[:1000]
    for word in words:
        assert word in text, (word, text[:2000])
    return text


def assert_no_account(client, visit: ProviderVisit) -> None:
    assert not get_user_model().objects.filter(username__iexact=visit.username).exists()
    assert not UserSocialAuth.objects.exists()
    assert "_auth_user_id" not in client.session


@pytest.mark.parametrize(
    ("switch", "words"),
    [
        ({"forge": True}, ["signature", "forged"]),
        ({"expired": True}, ["expired"]),
        ({"audience": "another-application"}, ["another application", "audience"]),
        ({"issuer": "http://127.0.0.1:9/not-the-provider"}, ["issuer does not match"]),
    ],
    ids=["forged", "expired", "wrong-audience", "wrong-issuer"],
)
def test_a_bad_id_token_is_refused_with_no_account(client, sso, person_at_provider, switch, words):
    visit = person_at_provider()
    sso.misbehave(**switch)
    assert_refused(sign_in(client, visit), *words)
    assert_no_account(client, visit)
    assert client.get("/").url.startswith("/accounts/login/")  # still signed out


def test_a_replayed_code_is_refused(client, person_at_provider):
    from django.test import Client

    visit = person_at_provider()
    callback = callback_path(visit.authorize(begin(client)))
    assert client.get(callback).status_code == 302
    accounts = get_user_model().objects.count()
    # The same answer again, in the same browser: that sign-in is over.
    assert_refused(client.get(callback), "matches no sign-in started in this browser")
    # The used code spliced into another browser's own sign-in (its state, its PKCE verifier):
    # the provider refuses the code at the token endpoint.
    other = Client()
    state = parse_qs(urlsplit(begin(other)).query)["state"][0]
    code = parse_qs(urlsplit(callback).query)["code"][0]
    assert_refused(other.get(f"/sso/complete/oidc/?code={code}&state={state}"), "refused the sign-in code")
    assert "_auth_user_id" not in other.session
    assert get_user_model().objects.count() == accounts


def test_a_missing_state_is_refused(client, person_at_provider):
    visit = person_at_provider()
    query = parse_qs(urlsplit(visit.authorize(begin(client))).query)
    assert_refused(client.get(f"/sso/complete/oidc/?code={query['code'][0]}"), "state")
    assert_no_account(client, visit)


def test_a_mismatched_state_is_refused(client, person_at_provider):
    visit = person_at_provider()
    query = parse_qs(urlsplit(visit.authorize(begin(client))).query)
    assert_refused(
        client.get(f"/sso/complete/oidc/?code={query['code'][0]}&state=not-the-one"),
        "matches no sign-in started in this browser",
    )
    assert_no_account(client, visit)


@pytest.mark.parametrize("spelling", ["MARIA", "m\u0430ria"], ids=["case", "cyrillic-a"])
def test_a_username_taken_locally_is_refused_and_never_taken_over(
    client, make_user, person_at_provider, spelling
):
    maria = make_user("maria")
    visit = person_at_provider(spelling)
    assert_refused(sign_in(client, visit), spelling, "already used by another account")
    assert list(get_user_model().objects.values_list("username", flat=True)) == ["maria"]
    assert not UserSocialAuth.objects.exists()
    assert "_auth_user_id" not in client.session
    maria.refresh_from_db()
    assert maria.check_password("pw-maria")


def test_an_account_deactivated_in_the_console_cannot_sign_in(client, person_at_provider):
    visit = person_at_provider()
    sign_in(client, visit)
    get_user_model().objects.filter(username=visit.username).update(is_active=False)
    client.logout()
    assert_refused(sign_in(client, visit), "deactivated")
    assert "_auth_user_id" not in client.session


def test_sign_in_again_finds_the_account_by_subject_not_by_name(client, sso, person_at_provider):
    visit = person_at_provider()
    sign_in(client, visit)
    user = get_user_model().objects.get(username=visit.username)
    client.logout()
    # Renamed at the provider (a new username claim): still the same account.
    renamed = unique("renamed")
    sso.user(renamed, password=visit.password, rename_from=visit.username)
    visit.username = renamed
    client.get("/")  # the first browser is still signed in at the provider: no password asked
    sign_in(client, visit)
    assert int(client.session["_auth_user_id"]) == user.pk
    assert get_user_model().objects.count() == 1


# --- Roles from groups ------------------------------------------------------------------------


def test_group_memberships_are_added_changed_and_removed_across_two_sign_ins(
    client, sso, person_at_provider, make_project, make_user
):
    from projects.governance import groups

    boss = make_user("boss", is_superuser=True)
    incidents, tenders, reports, manual = (
        make_project(slug=s) for s in ("incidents", "tenders", "reports", "manual")
    )
    sre = groups.mapping_save(by=boss, project=incidents, group="sre", role="employee")
    groups.mapping_save(by=boss, project=tenders, group="audit", role="compliance")
    groups.mapping_save(by=boss, project=reports, group="ops", role="employee")
    visit = person_at_provider(groups=["sre", "audit", "unmapped"])

    sign_in(client, visit)
    user = get_user_model().objects.get(username=visit.username)
    Membership.objects.create(user=user, project=manual, role="admin")  # granted by hand

    def roles():
        return {m.project.slug: (m.role, m.source) for m in Membership.objects.filter(user=user)}

    assert roles() == {
        "incidents": ("employee", "group"),
        "tenders": ("compliance", "group"),
        "manual": ("admin", "manual"),
    }

    # Between the two sign-ins: the admin changes the sre mapping's role, the provider moves
    # the person out of audit and into ops.
    groups.mapping_save(by=boss, project=incidents, group="sre", role="compliance", mapping=sre)
    sso.user(visit.username, password=visit.password, groups=["sre", "ops"])
    client.logout()
    sign_in(client, visit)

    assert roles() == {
        "incidents": ("compliance", "group"),
        "reports": ("employee", "group"),
        "manual": ("admin", "manual"),
    }
    events = {
        (e.action, e.project.slug): e.details
        for e in AuditEvent.objects.filter(action__startswith="member.", actor_label="system:sign-in")
    }
    assert events[("member.role", "incidents")]["mapping"] == "group sre -> incidents as compliance"
    assert events[("member.remove", "tenders")]["mapping"] == "group audit -> tenders as compliance"
    assert events[("member.grant", "reports")]["mapping"] == "group ops -> reports as employee"
    assert events[("member.grant", "incidents")]["mapping_id"] == sre.pk
    assert ("member.grant", "manual") not in events


def test_highest_role_wins_and_a_hand_grant_is_never_touched(
    client, sso, person_at_provider, make_project, make_user
):
    from projects.governance import groups

    boss = make_user("boss", is_superuser=True)
    incidents, manual = make_project(slug="incidents"), make_project(slug="manual")
    groups.mapping_save(by=boss, project=incidents, group="sre", role="employee")
    groups.mapping_save(by=boss, project=incidents, group="leads", role="admin")
    groups.mapping_save(by=boss, project=manual, group="sre", role="admin")
    visit = person_at_provider(groups=["leads"])
    sign_in(client, visit)
    user = get_user_model().objects.get(username=visit.username)
    Membership.objects.create(user=user, project=manual, role="employee")  # by hand
    sso.user(visit.username, password=visit.password, groups=["sre", "leads"])
    client.logout()
    sign_in(client, visit)
    assert {m.project.slug: m.role for m in Membership.objects.filter(user=user)} == {
        "incidents": "admin",
        "manual": "employee",
    }


def test_mapping_page_lets_admins_add_change_and_delete_with_errors_at_the_field(
    client, admin, project, make_project
):
    other = make_project(slug="elsewhere")
    client.force_login(admin)
    page = f"/p/{project.slug}/groups/"
    assert client.get(page).status_code == 200
    answer = client.post(page, {"group": "sre", "role": "employee"})
    assert answer.status_code == 302
    mapping = GroupMapping.objects.get(project=project)
    assert (mapping.group, mapping.role, mapping.created_by) == ("sre", "employee", admin)
    again = client.post(page, {"group": "sre", "role": "admin"})
    assert again.status_code == 400 and "already mapped" in again.content.decode()
    blank = client.post(page, {"group": "  ", "role": "admin"})
    assert blank.status_code == 400 and "This field is required" in blank.content.decode()
    assert client.post(page, {"mapping": mapping.pk, "group": "sre", "role": "compliance"}).status_code == 302
    mapping.refresh_from_db()
    assert mapping.role == "compliance"
    assert client.post(page, {"delete": mapping.pk}).status_code == 302
    assert not GroupMapping.objects.exists()
    assert [e.action for e in AuditEvent.objects.filter(action__startswith="mapping.").order_by("seq")] == [
        "mapping.create",
        "mapping.update",
        "mapping.delete",
    ]
    # Another project's page is not this admin's.
    assert client.get(f"/p/{other.slug}/groups/").status_code == 404


def test_employees_cannot_see_the_mapping_page(client, person, project):
    client.force_login(person)
    assert client.get(f"/p/{project.slug}/groups/").status_code == 404
    assert client.post(f"/p/{project.slug}/groups/", {"group": "x", "role": "admin"}).status_code == 404
    assert not GroupMapping.objects.exists()


# --- Offboarding --------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["disable", "delete"])
def test_deactivation_in_the_provider_refuses_the_next_request(
    client, sso, settings, person_at_provider, how
):
    settings.MGC_OIDC_RECHECK_SECONDS = 0  # confirm with the provider on every request
    visit = person_at_provider()
    sign_in(client, visit)
    assert client.get("/").status_code == 200  # confirmed by a refresh-token grant
    getattr(sso, how)(visit.username)
    started = time.perf_counter()
    answer = client.get("/")
    refused_after = time.perf_counter() - started
    assert answer.status_code == 302 and answer["Location"].startswith("/accounts/login/")
    print(f"\n{how} at the provider -> next request refused after {refused_after * 1000:.0f} ms")
    assert "_auth_user_id" not in client.session
    assert client.get("/").status_code == 302
    ended = AuditEvent.objects.get(action="session.ended")
    assert ended.details["user"] == visit.username and ended.details["reason"]
    # History and authorship stay: the account is signed out, not removed.
    assert get_user_model().objects.filter(username=visit.username).exists()


def test_with_a_recheck_interval_refusal_comes_within_it(client, sso, settings, person_at_provider):
    settings.MGC_OIDC_RECHECK_SECONDS = 1
    visit = person_at_provider()
    sign_in(client, visit)
    sso.disable(visit.username)
    disabled = time.perf_counter()
    while client.get("/").status_code == 200:
        assert time.perf_counter() - disabled < 3, "still let in"
        time.sleep(0.05)
    elapsed = time.perf_counter() - disabled
    print(f"\nMGC_OIDC_RECHECK_SECONDS=1: refused {elapsed * 1000:.0f} ms after deactivation")
    assert elapsed < 1.5


def test_a_confirmed_session_follows_group_changes_without_a_new_sign_in(
    client, sso, settings, person_at_provider, make_project, make_user
):
    from projects.governance import groups

    settings.MGC_OIDC_RECHECK_SECONDS = 0
    project = make_project(slug="incidents")
    groups.mapping_save(by=make_user("boss"), project=project, group="sre", role="employee")
    visit = person_at_provider(groups=["sre"])
    sign_in(client, visit)
    assert Membership.objects.filter(project=project).count() == 1
    sso.user(visit.username, password=visit.password, groups=[])
    client.get("/")
    assert not Membership.objects.filter(project=project).exists()


def test_logout_also_ends_the_provider_session(client, sso, person_at_provider):
    visit = person_at_provider()
    sign_in(client, visit)
    answer = client.post("/accounts/logout/")
    assert answer.status_code == 302
    end = urlsplit(answer["Location"])
    assert f"{end.scheme}://{end.netloc}{end.path}" == f"{sso.issuer}/logout/"
    query = parse_qs(end.query)
    assert query["post_logout_redirect_uri"] == ["http://testserver/accounts/login/"]
    assert query["id_token_hint"] and query["client_id"] == [sso.client_id]
    back = visit.http.get(answer["Location"], allow_redirects=False, timeout=10)
    assert back.status_code == 302 and back.headers["Location"] == "http://testserver/accounts/login/"
    assert "_auth_user_id" not in client.session
    # The provider asks for the password again: its session is gone too.
    again = visit.http.get(begin(client), allow_redirects=False, timeout=10)
    assert "/accounts/login/" in again.headers["Location"]


def test_password_logout_stays_local(client, person):
    client.force_login(person)
    answer = client.post("/accounts/logout/")
    assert answer.status_code == 302 and answer["Location"] == "/accounts/login/"


# --- The login page, local passwords, the provider down ----------------------------------------


def test_login_page_offers_the_provider_beside_passwords(client, sso):
    text = client.get("/accounts/login/").content.decode()
    assert "Sign in with Test IdP" in text and 'name="password"' in text


def test_passwords_can_be_turned_off(client, sso, settings, make_user):
    settings.MGC_LOCAL_LOGIN = "off"
    make_user("olga")
    text = client.get("/accounts/login/").content.decode()
    assert "Sign in with Test IdP" in text and 'name="password"' not in text
    answer = client.post("/accounts/login/", {"username": "olga", "password": "pw-olga"})
    assert answer.status_code == 200 and "_auth_user_id" not in client.session


def test_sso_off_means_no_button_and_no_sign_in_route(client):
    assert "Sign in with" not in client.get("/accounts/login/").content.decode()
    assert client.post("/sso/login/oidc/").status_code == 404
    assert client.get("/sso/complete/oidc/?code=x&state=y").status_code == 404


class TestProviderDown:
    @pytest.fixture
    def provider_down(self, sso):
        sso.stop()
        yield sso
        sso.start()

    def test_signing_in_says_the_provider_is_down(self, client, provider_down):
        answer = client.post("/sso/login/oidc/")
        assert answer.status_code in (502, 503, 504)
        text = answer.content.decode()
        assert "Identity provider unavailable" in text and "Test IdP is not answering" in text

    def test_break_glass_admin_signs_in_with_a_password_others_cannot(
        self, client, sso, settings, make_user, person_at_provider, request
    ):
        visit = person_at_provider()
        settings.MGC_OIDC_RECHECK_SECONDS = 0
        signed_in = type(client)()
        sign_in(signed_in, visit)
        settings.MGC_LOCAL_LOGIN, settings.MGC_BREAKGLASS_USERS = "breakglass", ["root"]
        make_user("root", is_superuser=True)
        make_user("olga")
        request.getfixturevalue("provider_down")

        page = client.get("/accounts/login/").content.decode()
        assert "Break-glass login" in page
        refused = client.post("/accounts/login/", {"username": "olga", "password": "pw-olga"})
        assert refused.status_code == 200 and "_auth_user_id" not in client.session
        answer = client.post("/accounts/login/", {"username": "root", "password": "pw-root"})
        assert answer.status_code == 302 and client.get("/").status_code == 200
        # Someone signed in through the provider is not let in unconfirmed, nor thrown out.
        waiting = signed_in.get("/")
        assert waiting.status_code == 503 and "cannot confirm your sign-in" in waiting.content.decode()
        assert "_auth_user_id" in signed_in.session


def test_group_mapping_command_sets_lists_and_deletes(make_project):
    from io import StringIO

    from django.core.management import call_command
    from django.core.management.base import CommandError

    make_project(slug="incidents")
    out = StringIO()
    call_command(
        "group_mapping", "--set", "sre=incidents:employee", "--set", "sre=incidents:admin", stdout=out
    )
    assert GroupMapping.objects.get().role == "admin"
    listing = StringIO()
    call_command("group_mapping", stdout=listing)
    assert listing.getvalue() == "sre\tincidents\tadmin\n"
    with pytest.raises(CommandError, match="expected GROUP=PROJECT:ROLE"):
        call_command("group_mapping", "--set", "sre=incidents:boss")
    call_command("group_mapping", "--delete", "sre=incidents", stdout=out)
    assert not GroupMapping.objects.exists()
    assert AuditEvent.objects.filter(action__startswith="mapping.").count() == 3


def test_a_forged_id_token_on_re_check_ends_the_session(client, sso, settings, person_at_provider):
    settings.MGC_OIDC_RECHECK_SECONDS = 0
    visit = person_at_provider()
    sign_in(client, visit)
    sso.misbehave(forge=True)
    assert client.get("/").status_code == 302
    assert "_auth_user_id" not in client.session
    assert AuditEvent.objects.get(action="session.ended").details["reason"] == "invalid_signature"


def test_leaving_a_group_never_leaves_a_project_without_an_admin(make_project, make_user, caplog):
    from projects.governance import groups

    project = make_project(slug="incidents")
    groups.mapping_save(by=None, project=project, group="leads", role="admin")
    lead = make_user("lead")
    groups.memberships_follow_groups(user=lead, groups=["leads"])
    assert Membership.objects.get(user=lead).role == "admin"
    changes = groups.memberships_follow_groups(user=lead, groups=[])
    assert changes == [{"project": "incidents", "kept": "last_admin"}]
    assert Membership.objects.get(user=lead).role == "admin"
    assert "kept a membership in incidents" in caplog.text
