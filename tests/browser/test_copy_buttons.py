"""Secrets shown once have a Copy button: it works from the keyboard, puts exactly the secret
on the clipboard and says so in a status screen readers announce."""

import pytest
from playwright.sync_api import expect

from projects.models import AgentToken, Membership

pytestmark = [pytest.mark.browser, pytest.mark.db_independent, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def olga(project, agent, make_user):
    user = make_user("olga-copies")
    user.set_password("copy that please")
    user.save()
    Membership.objects.create(user=user, project=project, role="admin")
    return user


def _log_in(page, live_server):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill("olga-copies")
    page.get_by_label("Password").fill("copy that please")
    page.get_by_role("button", name="Log in").click()


def test_a_new_token_is_copied_by_keyboard_and_the_copy_is_announced(page, live_server, olga, project, agent):
    _log_in(page, live_server)
    page.goto(f"{live_server.url}/p/{project.slug}/agents/{agent.slug}/settings/")
    page.locator("#id_name").fill("laptop")
    page.get_by_role("button", name="Create token").click()
    token = page.locator("#new-token").inner_text().strip()
    assert token.startswith("mgc_")
    assert AgentToken.objects.get(name="laptop").prefix in token

    button = page.get_by_role("button", name="Copy the token")
    expect(button).to_be_visible()
    button.focus()
    page.keyboard.press("Enter")
    status = page.locator("#new-token-copied")
    expect(status).to_have_attribute("role", "status")
    expect(status).to_have_text("Copied the token.")
    assert page.evaluate("navigator.clipboard.readText()") == token


def test_the_set_password_link_of_a_new_account_is_copied(page, live_server, olga, project):
    _log_in(page, live_server)
    page.goto(f"{live_server.url}/p/{project.slug}/members/")
    form = page.locator("#new-account")
    form.get_by_label("Username").fill("nina")
    form.get_by_role("button", name="Create account").click()
    link = page.locator("#invite-link").inner_text().strip()
    assert "/accounts/set-password/" in link
    page.get_by_role("button", name="Copy the link").click()
    expect(page.locator("#invite-link-copied")).to_have_text("Copied the link.")
    assert page.evaluate("navigator.clipboard.readText()") == link
