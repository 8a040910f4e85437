"""Draft banners tell the truth: after "Keep it as it is" (a change the person decided not to
make) or "Discard it" (a draft they threw away), no banner says that typed text was not saved;
text typed and left unsent is still offered back."""

import pytest
from playwright.sync_api import expect

from projects.models import Membership

pytestmark = [pytest.mark.browser, pytest.mark.db_independent, pytest.mark.django_db(transaction=True)]

DRAFTS = "Object.keys(localStorage).filter(k => k.startsWith('mgc-draft:'))"
NOT_SAVED = "was not saved"


@pytest.fixture
def olga(project, person, make_user):
    user = make_user("olga-decides")
    Membership.objects.create(user=user, project=project, role="admin")
    return user


def test_keep_it_as_it_is_and_discard_it_leave_no_false_alarm(page, live_server, olga, person, project):
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill(olga.username)
    page.get_by_label("Password").fill(f"pw-{olga.username}")
    page.get_by_role("button", name="Log in").click()
    members = f"{live_server.url}/p/{project.slug}/members/"

    # Maria is an employee; "Add maria as Admin" asks first; the admin keeps things as they are.
    page.goto(members)
    page.locator("#member-add input[name=username]").fill(person.username)
    page.locator("#member-add select[name=role]").select_option("admin")
    page.get_by_role("button", name="Add member").click()
    expect(page.locator("#member-confirm")).to_be_visible()
    page.get_by_role("button", name="Keep it as it is").click()
    expect(page.get_by_text("Nothing changed.")).to_be_visible()
    expect(page.locator(".draft-offer")).to_have_count(0)
    page.goto(members)  # and on any later visit
    expect(page.locator("main")).not_to_contain_text(NOT_SAVED)
    assert page.evaluate(DRAFTS) == []
    assert Membership.objects.get(project=project, user=person).role == "employee"

    # Typed and left without sending: that one is offered back, truthfully; Discard drops it.
    page.locator("#member-add input[name=username]").fill("someone-new")
    page.locator("#member-add input[name=username]").press("Tab")  # change: kept at once
    assert len(page.evaluate(DRAFTS)) == 1
    page.goto(f"{live_server.url}/p/{project.slug}/")
    page.goto(members)
    offer = page.locator(".draft-offer")
    expect(offer).to_contain_text(NOT_SAVED)
    offer.get_by_role("button", name="Discard it").click()
    expect(page.locator(".draft-offer")).to_have_count(0)
    assert page.evaluate(DRAFTS) == []
    page.goto(members)
    expect(page.locator("main")).not_to_contain_text(NOT_SAVED)
    expect(page.locator("#member-add input[name=username]")).to_have_value("")
