"""Project admins create accounts on the members page: the person gets a one-time
set-password link (shown to the admin, e-mailed when an address is given)."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from projects.audit import audit_verify
from projects.models import AuditEvent, Membership

pytestmark = pytest.mark.django_db


def _invite(client, project, **fields):
    data = {"username": "nina", "email": "", "first_name": "", "last_name": "", "role": "employee"}
    data.update(fields)
    return client.post(
        reverse("projects:member_invite", args=[project.slug]),
        {f"account-{key}": value for key, value in data.items()},
    )


def _link(response) -> str:
    match = re.search(r'<code id="invite-link">([^<]+)</code>', response.content.decode())
    assert match, "the page shows no set-password link"
    return match.group(1)


def test_admin_creates_an_account_and_the_person_sets_a_password_once(client, project, admin, mailoutbox):
    client.force_login(admin)
    response = _invite(
        client,
        project,
        username="nina",
        email="nina@example.com",
        first_name="Nina",
        last_name="Orlova",
        role="compliance",
    )
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    link = _link(response)
    assert link.startswith("http://testserver/accounts/set-password/")
    assert b"Also sent by e-mail to nina@example.com" in response.content
    [mail] = mailoutbox
    assert mail.to == ["nina@example.com"] and link in mail.body and "nina" in mail.body

    nina = get_user_model().objects.get(username="nina")
    assert (nina.get_full_name(), nina.has_usable_password()) == ("Nina Orlova", False)
    assert Membership.objects.get(project=project, user=nina).role == "compliance"
    events = list(AuditEvent.objects.order_by("seq"))
    assert [(e.action, e.actor_user) for e in events] == [("account.create", admin), ("member.grant", admin)]
    assert events[0].details == {"user": "nina", "role": "compliance", "email_given": True}
    assert audit_verify() == []

    client.logout()
    form_page = client.get(link, follow=True)
    assert b"Your username is <strong>nina</strong>" in form_page.content
    done = client.post(
        form_page.redirect_chain[-1][0],
        {"new_password1": "long enough pass 2026", "new_password2": "long enough pass 2026"},
        follow=True,
    )
    assert b"Your password is set" in done.content
    assert client.login(username="nina", password="long enough pass 2026")
    client.logout()
    again = client.get(link, follow=True)
    assert b"This link does not work any more" in again.content


def test_without_an_address_no_mail_is_sent_and_the_admin_passes_the_link_on(
    client, project, admin, mailoutbox
):
    client.force_login(admin)
    response = _invite(client, project, username="pavel")
    assert _link(response) and mailoutbox == []
    assert b"No e-mail address given, so nothing was sent." in response.content


def test_a_console_without_a_mail_server_says_it_sent_nothing(client, project, admin, mailoutbox, settings):
    settings.MGC_SENDS_EMAIL = False  # production without MGC_EMAIL_HOST
    client.force_login(admin)
    response = _invite(client, project, username="pavel", email="pavel@example.com")
    assert _link(response) and mailoutbox == []
    assert b"No e-mail was sent" in response.content


@pytest.mark.parametrize("taken", ["maria", "Maria"])
def test_a_taken_username_is_a_field_error_and_nothing_is_created(client, project, admin, person, taken):
    client.force_login(admin)
    before = get_user_model().objects.count()
    response = _invite(client, project, username=taken, email="someone@example.com")
    assert response.status_code == 400
    html = response.content.decode()
    form = html[html.index('id="new-account"') :]
    # The error sits under the username field, and the typed address is kept.
    assert form.index(f"The username {taken} is taken") > form.index('name="account-username"')
    assert 'value="someone@example.com"' in form
    assert get_user_model().objects.count() == before
    assert not AuditEvent.objects.filter(action="account.create").exists()


def test_a_malformed_username_is_refused(client, project, admin):
    client.force_login(admin)
    response = _invite(client, project, username="nina orlova")
    assert response.status_code == 400
    assert not get_user_model().objects.filter(username="nina orlova").exists()


def test_only_a_project_admin_creates_accounts_and_only_in_their_own_project(
    client, project, make_project, reviewer, person, make_user
):
    other = make_project(slug="tenders", name="Tenders")
    boss_of_other = make_user("boris")
    Membership.objects.create(user=boss_of_other, project=other, role="admin")
    for user in (reviewer, person, boss_of_other):
        client.force_login(user)
        assert _invite(client, project, username="intruder").status_code == 404
    client.force_login(boss_of_other)
    assert _invite(client, other, username="newbie").status_code == 200
    assert not get_user_model().objects.filter(username="intruder").exists()
    assert list(
        Membership.objects.filter(user__username="newbie").values_list("project__slug", flat=True)
    ) == ["tenders"]


def test_the_members_page_offers_the_new_account_form(client, project, admin):
    client.force_login(admin)
    html = client.get(reverse("projects:members", args=[project.slug])).content.decode()
    assert 'action="/p/incidents/members/new-account/"' in html
    assert "Django admin" not in html


def test_the_demo_prints_a_russian_invite_readably():
    import io

    from django.core.mail import EmailMessage

    from projects.demo.mail import ReadableConsoleBackend

    stream = io.StringIO()
    link = "http://127.0.0.1:8000/accounts/reset/MQ/abc-123/"
    ReadableConsoleBackend(stream=stream).send_messages(
        [EmailMessage("Приглашение", f"Задайте пароль по ссылке:\n{link}\n", to=["nina@example.com"])]
    )
    printed = stream.getvalue()
    assert link in printed and "Задайте пароль" in printed
    assert "Mail to nina@example.com: Приглашение" in printed
