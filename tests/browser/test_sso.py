"""Single sign-on in Chromium: the login page's "Sign in with ..." button, the provider's own
login page (devtools/oidc_provider, its own process), and back to the console's dashboard
with the role the person's group maps to; then logout ends the provider's session too."""

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from projects.governance import groups
from projects.models import Membership
from tests.browser.test_tour import SHOTS

pytestmark = [pytest.mark.browser, pytest.mark.db_independent, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def sso_live(sso, live_server):
    sso.allow(
        redirect_uri=f"{live_server.url}/sso/complete/oidc/",
        post_logout_uri=f"{live_server.url}/accounts/login/",
    )
    return sso


def test_sign_in_through_the_providers_login_page_lands_on_the_dashboard_with_the_mapped_role(
    page, live_server, sso_live, make_project, make_user
):
    project = make_project(slug="incident-analysis", name="Incident analysis")
    groups.mapping_save(
        by=make_user("boss", is_superuser=True), project=project, group="sre", role="compliance"
    )
    sso_live.user("nadia", password="nadia's pass", groups=["sre"], first_name="Nadia")

    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_role("button", name="Sign in with Test IdP").click()
    expect(page.get_by_role("heading", name="Test identity provider")).to_be_visible()
    assert page.url.startswith(sso_live.base)
    page.get_by_label("Username").fill("nadia")
    page.get_by_label("Password").fill("nadia's pass")
    page.get_by_role("button", name="Sign in").click()

    expect(page.get_by_role("heading", name="Hello, Nadia")).to_be_visible()
    assert page.url == f"{live_server.url}/"
    review = page.locator("#panel-review")
    expect(review).to_contain_text("Incident analysis")
    expect(page.locator("#panel-admin")).to_have_count(0)
    nadia = get_user_model().objects.get(username="nadia")
    assert Membership.objects.get(user=nadia).role == "compliance"

    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_role("button", name="Sign in with Test IdP")).to_be_visible()
    assert page.url == f"{live_server.url}/accounts/login/"
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "sign-in.png"))
    # The provider's session ended with the console's: it asks for the password again.
    page.get_by_role("button", name="Sign in with Test IdP").click()
    expect(page.get_by_role("heading", name="Test identity provider")).to_be_visible()
