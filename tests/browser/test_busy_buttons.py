"""Actions that can take more than a second show at once that they are working: the pressed
button says so (aria-busy, its action's words) and cannot be pressed again while the request
is on its way. The page notes its buttons the moment the request has left (in the tab's
session storage, which outlives the navigation); the action then completes as usual."""

import pytest
from playwright.sync_api import expect

from projects.governance import subjects
from projects.models import LegalHold, Membership, RunnerCredential
from projects.runners import bearer

pytestmark = [pytest.mark.browser, pytest.mark.db_independent, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def olga(project, agent, person, make_user):
    user = make_user("olga-waits")
    Membership.objects.create(user=user, project=project, role="admin")
    bearer.token_create(agent=agent, name="laptop", created_by=user)
    return user


# After busy.js's own submit listener (this one is added later) and its deferred step.
WATCH = """() => document.addEventListener("submit", () => setTimeout(() => sessionStorage.setItem(
  "busy", JSON.stringify([...document.querySelectorAll("button[aria-busy=true]")].map(
    b => [b.textContent.trim(), b.disabled, b.closest("form").getAttribute("aria-busy")])))))"""


def _busy(page, button_name: str, words: str) -> None:
    page.evaluate("() => sessionStorage.removeItem('busy')")
    page.evaluate(WATCH)
    page.get_by_role("button", name=button_name).click()
    assert page.evaluate("() => JSON.parse(sessionStorage.getItem('busy'))") == [[words, True, "true"]]


def test_slow_actions_say_they_are_working(page, live_server, olga, person, project, agent, s3):
    base = live_server.url
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("Username").fill(olga.username)
    page.get_by_label("Password").fill(f"pw-{olga.username}")
    _busy(page, "Log in", "Signing in…")
    expect(page.locator("h1")).to_be_visible()

    page.goto(f"{base}/p/{project.slug}/holds/")
    page.get_by_label("Reason").fill("Litigation hold for case 42")
    page.get_by_label("Person").select_option(person.username)
    _busy(page, "Place the hold", "Placing the hold…")
    expect(page.locator("#holds")).to_contain_text("Litigation hold for case 42")
    assert LegalHold.objects.filter(user=person, released_at__isnull=True).exists()

    page.goto(f"{base}/p/{project.slug}/agents/{agent.slug}/settings/")
    _busy(page, "Issue", "Issuing…")
    expect(page.get_by_text("MGC_RUNNER_S3_SECRET_ACCESS_KEY=")).to_be_visible()
    assert RunnerCredential.objects.filter(revoked_at__isnull=True).count() == 1

    # Any other POST says it is working in general words.
    page.goto(f"{base}/p/{project.slug}/members/")
    page.locator("#member-add input[name=username]").fill(person.username)
    page.locator("#member-add select[name=role]").select_option("compliance")
    _busy(page, "Add member", "Working…")
    expect(page.locator("#member-confirm")).to_be_visible()

    # A subject's request answered, and a hold released (after its confirmation).
    restriction = subjects.request_open(
        by=olga, user=person, kind="restriction", law="gdpr", project=project, details="stop using my profile"
    )
    page.goto(f"{base}/requests/{restriction.pk}/")
    page.locator("#answer-text").fill("Agents no longer read the profile.")
    _busy(page, "Answered", "Recording the answer…")
    expect(page.locator("#request-facts")).to_contain_text("Agents no longer read the profile.")

    page.goto(f"{base}/p/{project.slug}/holds/")
    page.once("dialog", lambda dialog: dialog.accept())
    _busy(page, "Release", "Releasing…")
    expect(page.get_by_role("button", name="Release")).to_have_count(0)
    assert not LegalHold.objects.filter(user=person, released_at__isnull=True).exists()
