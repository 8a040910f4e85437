"""SCIM 2.0 provisioning at /scim/v2/, from the identity provider's side: scim2-tester's whole
compliance run over Users and Groups, and a person's life driven with scim2-client (created,
put in a mapped group, deactivated: signed out at their next request, their tokens refused),
then the leaver rule erasing their profile through retention unless a legal hold stands.

The clients call the console's WSGI application in-process (scim2-client's WSGI engine):
each request goes through the whole Django stack (middleware, URL routing, the view) as
gunicorn's would, without a socket."""

from __future__ import annotations

import datetime as dt
from collections import Counter

import pytest
from django.contrib.auth import get_user_model
from django.core import signals
from django.core.exceptions import PermissionDenied
from django.core.handlers.wsgi import WSGIHandler
from django.db import close_old_connections
from django.test import Client
from django.utils import timezone
from scim2_client.engines.wsgi import WSGISCIMClient
from scim2_models import (
    Group,
    GroupMember,
    NotFoundException,
    PatchOp,
    PatchOperation,
    UniquenessException,
    User,
)
from scim2_tester import Status, check_server

from projects.audit import Actor
from projects.governance import holds, retention
from projects.memory import store
from projects.models import (
    AgentToken,
    AuditEvent,
    Departure,
    GroupMapping,
    Membership,
    MemoryFile,
    RetentionRule,
    ScimToken,
)
from projects.runners import bearer
from projects.scim import tokens
from tests.test_sso import ProviderVisit, sign_in  # noqa: F401 - helpers of the sign-in tests

# The protocol and the console's records through the ORM only: the SQLite run covers it (CI's
# time), as for the runner adapters.
pytestmark = [pytest.mark.django_db, pytest.mark.db_independent]
BASE = "http://testserver/scim/v2"


class InTestHandler(WSGIHandler):
    """Django's WSGI handler as the test client runs it: the end of a request does not close
    the database connection that holds the test's transaction."""

    def __call__(self, environ, start_response):
        signals.request_started.disconnect(close_old_connections)
        try:
            response = super().__call__(environ, start_response)
        finally:
            signals.request_started.connect(close_old_connections)
        close = response.close

        def closing():
            signals.request_finished.disconnect(close_old_connections)
            try:
                close()
            finally:
                signals.request_finished.connect(close_old_connections)

        response.close = closing
        return response


@pytest.fixture
def root(django_user_model):
    return django_user_model.objects.create_superuser("root", password="pw-root")


@pytest.fixture
def provider_token(root) -> str:
    return tokens.token_create(by=root, name="okta")[1]


def scim_client(raw: str, **kwargs) -> WSGISCIMClient:
    client = WSGISCIMClient(
        InTestHandler(), base_url=BASE, headers={"Authorization": f"Bearer {raw}"}, **kwargs
    )
    client.discover()
    return client


def test_scim2_tester_finds_nothing_wrong_with_users_and_groups(provider_token):
    results = check_server(scim_client(provider_token), raise_exceptions=False)
    summary = Counter(result.status.name for result in results)
    by_type = Counter(result.resource_type for result in results if result.resource_type)
    print(f"\nscim2-tester: {len(results)} checks, {dict(summary)}; per resource type {dict(by_type)}")
    failed = [(r.title, r.resource_type, r.reason) for r in results if r.status != Status.SUCCESS]
    assert failed == []
    assert by_type["User"] > 50 and by_type["Group"] > 10  # both were exercised, PATCH included


def test_a_request_without_a_live_token_is_refused(provider_token, root):
    http = Client()
    assert http.get("/scim/v2/Users").status_code == 401
    assert http.get("/scim/v2/Users", HTTP_AUTHORIZATION="Bearer mgcscim_wrong").status_code == 401
    # The service's description needs no token (RFC 7643, section 5).
    spc = http.get("/scim/v2/ServiceProviderConfig")
    assert spc.status_code == 200 and spc.json()["bulk"]["supported"] is False
    ok = http.get("/scim/v2/Users", HTTP_AUTHORIZATION=f"Bearer {provider_token}")
    assert ok.status_code == 200 and ok["Content-Type"].startswith("application/scim+json")
    tokens.token_revoke(by=root, token=ScimToken.objects.get())
    gone = http.get("/scim/v2/Users", HTTP_AUTHORIZATION=f"Bearer {provider_token}")
    assert gone.status_code == 401 and gone.json()["status"] == "401"


def test_only_a_superuser_makes_or_revokes_provisioning_tokens_and_both_are_audited(root, make_user):
    with pytest.raises(PermissionDenied):
        tokens.token_create(by=make_user("olga"), name="okta")
    token, raw = tokens.token_create(by=root, name="entra")
    assert raw.startswith("mgcscim_") and token.token_hash not in raw and ScimToken.objects.count() == 1
    with pytest.raises(PermissionDenied):
        tokens.token_revoke(by=make_user("ivan"), token=token)
    tokens.token_revoke(by=root, token=token)
    tokens.token_revoke(by=root, token=token)  # again: nothing more happens
    actions = list(
        AuditEvent.objects.filter(action__startswith="scim_token")
        .order_by("seq")
        .values_list("action", "actor_label")
    )
    assert actions == [("scim_token.create", "root"), ("scim_token.revoke", "root")]


def test_lifecycle_create_group_deactivate_signs_out_at_the_next_request(s3, provider_token, project, agent):
    GroupMapping.objects.create(project=project, group="sre", role=Membership.Role.EMPLOYEE)
    scim = scim_client(provider_token)

    # Created: an account, active, without a password (it signs in through the provider).
    made = scim.create(
        User(
            user_name="alice",
            name={"given_name": "Alice", "family_name": "Liddell"},
            emails=[{"value": "alice@example.com", "primary": True}],
            active=True,
            external_id="okta-00u1",
        )
    )
    alice = get_user_model().objects.get(username="alice")
    assert (alice.first_name, alice.email, alice.is_active) == ("Alice", "alice@example.com", True)
    assert not alice.has_usable_password()
    assert not Membership.objects.filter(user=alice).exists()

    # Put in the directory's group "sre": the same mapping as a sign-in's groups claim grants.
    sre = scim.create(Group(display_name="sre"))
    scim.modify(
        Group,
        sre.id,
        PatchOp[Group](
            operations=[PatchOperation(op="add", path="members", value=[GroupMember(value=made.id)])]
        ),
    )
    membership = Membership.objects.get(user=alice, project=project)
    assert (membership.role, membership.source) == ("employee", Membership.Source.GROUP)
    assert [g.display for g in scim.query(User, made.id).groups] == ["sre"]

    # Alice works: a browser session, and a runner token she made.
    browser = Client()
    browser.force_login(alice)
    assert browser.get(f"/p/{project.slug}/").status_code == 200
    raw = bearer.token_create(agent=agent, name="alice's runner", created_by=alice)[1]
    runner = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert runner.post("/api/v1/hooks/pre", {}, content_type="application/json").status_code == 200

    # Deactivated in the directory: at once, with no re-check at the provider.
    scim.modify(
        User, made.id, PatchOp[User](operations=[PatchOperation(op="replace", path="active", value=False)])
    )
    answer = browser.get(f"/p/{project.slug}/")
    assert answer.status_code == 302 and answer["Location"].startswith("/accounts/login/")  # signed out
    assert "_auth_user_id" not in browser.session
    assert runner.post("/api/v1/hooks/pre", {}, content_type="application/json").status_code == 401
    assert AgentToken.objects.get(created_by=alice).revoked_at is not None
    assert scim.query(User, made.id).active is False
    departure = Departure.objects.get(user=alice)
    assert departure.how == "deactivated"

    events = {e.action: e for e in AuditEvent.objects.filter(actor_label="system:scim:okta")}
    assert {
        "account.create",
        "group.create",
        "group.update",
        "member.grant",
        "account.deprovision",
        "token.revoke",
    } <= set(events), sorted(events)
    assert events["account.deprovision"].details["tokens_revoked"] == 1
    assert AuditEvent.objects.get(action="token.revoke").details["reason"] == "alice left"

    # Back again: the account works, and nothing planned for a leaver happens.
    scim.modify(
        User, made.id, PatchOp[User](operations=[PatchOperation(op="replace", path="active", value=True)])
    )
    assert get_user_model().objects.get(pk=alice.pk).is_active and not Departure.objects.exists()

    # Deleted: gone from SCIM, the account kept (its history names it) but inactive, its
    # directory memberships gone.
    scim.delete(User, made.id)
    with pytest.raises(NotFoundException):
        scim.query(User, made.id)
    alice.refresh_from_db()
    assert not alice.is_active and Departure.objects.get(user=alice).how == "deleted"
    assert not Membership.objects.filter(user=alice).exists()


def test_a_taken_username_is_a_uniqueness_error_and_no_account_is_touched(provider_token, make_user):
    maria = make_user("maria")
    scim = scim_client(provider_token)
    with pytest.raises(UniquenessException):
        scim.create(User(user_name="MARIA"))
    maria.refresh_from_db()
    assert maria.check_password("pw-maria") and not hasattr(maria, "scim")


def test_leaver_rule_erases_a_leavers_profile_after_its_days_unless_a_hold_stands(
    s3, project, make_user, admin
):
    RetentionRule.objects.create(project=project, kind=RetentionRule.Kind.LEAVERS, days=30)
    gone, held, staying = make_user("gone"), make_user("held"), make_user("staying")
    for person in (gone, held, staying):
        Membership.objects.create(user=person, project=project, role="employee")
        store.file_create(
            project=project,
            scope="user",
            user=person,
            path="USER.md",
            content="# Me\n",
            actor=Actor.person(person),
        )
    long_ago = timezone.now() - dt.timedelta(days=31)
    Departure.objects.create(user=gone, left_at=long_ago, how="deleted")
    Departure.objects.create(user=held, left_at=long_ago, how="deactivated")
    Departure.objects.create(user=staying, left_at=timezone.now() - dt.timedelta(days=3), how="deactivated")
    holds.hold_place(by=admin, project=project, reason="case 7", user=held)

    preview = retention.preview(project)[0]
    assert [d.label for d in preview["today"].due] == ["profile of gone"]
    assert preview["today"].held == 1 and [d.label for d in preview["soon"]] == ["profile of staying"]

    run = retention.apply(project)
    assert (run.profiles, run.held) == (1, 1)
    assert not MemoryFile.objects.filter(user=gone).exists()
    assert MemoryFile.objects.filter(user=held).exists() and MemoryFile.objects.filter(user=staying).exists()
    erased = AuditEvent.objects.get(action="profile.erase")
    assert erased.actor_label == "system:retention" and "leaver rule" in erased.details["reason"]


def test_a_provisioned_account_is_linked_at_its_first_sign_in(client, sso, provider_token, project):
    scim_client(provider_token).create(User(user_name="bob", active=True))
    sso.user("bob", password="pw-bob")
    answer = sign_in(client, ProviderVisit(sso, "bob", "pw-bob"))
    assert answer.status_code == 302 and answer["Location"] == "/", answer.content[:300]
    assert client.session["_auth_user_id"] == str(get_user_model().objects.get(username="bob").pk)
    assert AuditEvent.objects.filter(action="account.link", details__via="provisioned").exists()


def test_an_mcp_access_token_links_a_provisioned_account_and_a_deactivated_one_is_refused(
    client, sso, provider_token, project
):
    """The rule lives in sso/identity.py, so the MCP endpoint obeys it as the sign-in does."""
    from social_django.models import UserSocialAuth

    from tests.test_mcp_console import Mcp, access_token

    directory = scim_client(provider_token)
    directory.create(User(user_name="vera", active=True))
    directory.create(User(user_name="yuri", active=False))
    for name in ("vera", "yuri"):
        sso.user(name, password=f"pw-{name}")
    resource = "http://testserver/mcp/"

    vera = Mcp(client, access_token(sso, "vera", resource=resource))
    assert "instructions" in vera.initialize()
    link = UserSocialAuth.objects.get(user__username="vera")
    assert link.user.scim is not None  # the provisioned account, not one made now
    assert AuditEvent.objects.filter(action="account.link", details__user="vera").exists()

    yuri = Mcp(client, access_token(sso, "yuri", resource=resource))
    refused = yuri.post(
        "initialize",
        {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    )
    assert refused.status_code == 401 and "deactivated" in refused.content.decode()
    assert not UserSocialAuth.objects.filter(user__username="yuri").exists()
    assert get_user_model().objects.filter(username__icontains="yuri").count() == 1  # no second one
