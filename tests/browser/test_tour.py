"""The README tour, walked on the demo data in Chromium as each role, in English and Russian:
the admin's structured agent settings, the employee's consent to a proposal on their own
profile and their session's exact prompt, the compliance officer's truncation flag and the
agent's prompt-size chart. Each stop asserts what the person needs to see, then takes the
tour's screenshot (docs/screenshots, 1440 x 900)."""

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from projects.models import AgentSession, Proposal

pytestmark = [pytest.mark.browser, pytest.mark.db_independent, pytest.mark.django_db(transaction=True)]

SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
PASSWORD = "demo tour 2026"


@pytest.fixture
def demo(s3):
    call_command("seed_demo", "--password", PASSWORD, stdout=StringIO())


@pytest.fixture
def tour(browser, live_server, demo):
    """A fresh browser context per person and language at the tour's viewport."""
    contexts = []

    def open_as(username: str, language: str = "en"):
        context = browser.new_context(viewport={"width": 1440, "height": 900}, locale="en-US")
        context.add_cookies([{"name": "django_language", "value": language, "url": live_server.url}])
        contexts.append(context)
        page = context.new_page()
        page.goto(f"{live_server.url}/accounts/login/")
        page.locator("input[name=username]").fill(username)
        page.locator("input[name=password]").fill(PASSWORD)
        page.locator("form button[type=submit]").last.click()
        expect(page.locator("h1")).to_be_visible()
        return page

    yield open_as
    for context in contexts:
        context.close()


def test_tour_admin_settings(tour, live_server):
    SHOTS.mkdir(parents=True, exist_ok=True)
    for language, name in (("en", "settings.png"), ("ru", "settings-ru.png")):
        page = tour("admin", language)
        page.goto(f"{live_server.url}/p/incident-analysis/agents/incident-analyst/settings/")
        manifest = page.locator("#manifest")
        expect(manifest.locator("tbody tr")).to_have_count(6)  # five sections and an empty row
        expect(manifest.locator("input[name$='-tag']").first).to_have_value("agent_identity")
        manifest.locator("button[name=preview]").click()
        expect(page.locator("#manifest-preview")).to_be_visible()
        page.screenshot(path=str(SHOTS / name), full_page=True)


def test_tour_employee_consents_and_reads_the_receipt(tour, live_server):
    page = tour("employee")
    page.locator("#panel-profile a[href$='/proposals/']").first.click()
    expect(page.locator("main")).to_contain_text("Prefers incident summaries before 10:00.")
    page.screenshot(path=str(SHOTS / "consent.png"), full_page=True)
    page.locator("main button[name=decision][value=approve]").first.click()
    expect(page.locator(".messages")).to_be_visible()
    assert Proposal.objects.get().status == "approved"

    session = AgentSession.objects.get(external_ref="demo-run-1")
    for language, name in (("en", "session.png"), ("ru", "session-ru.png")):
        page = tour("employee", language)
        page.goto(f"{live_server.url}/p/incident-analysis/sessions/{session.pk}/")
        page.locator("details summary").first.click()
        expect(page.locator("#stored-prompt")).to_contain_text("<agent_identity>")
        page.screenshot(path=str(SHOTS / name), full_page=True)


def test_tour_compliance_sees_truncation(tour, live_server):
    for language, suffix in (("en", ""), ("ru", "-ru")):
        page = tour("compliance", language)
        panel = page.locator("#panel-truncation")
        expect(panel).to_contain_text("workspace_memory")
        page.screenshot(path=str(SHOTS / f"dashboard-compliance{suffix}.png"), full_page=True)
        panel.locator("a[href$='#prompt-size']").first.click()
        expect(page.locator("#prompt-size rect.bar.cut")).to_have_count(1)
        page.locator("#prompt-size").screenshot(path=str(SHOTS / f"prompt-size{suffix}.png"))


def test_tour_on_a_phone(browser, live_server, demo):
    """The employee on a phone (390 x 844): the dashboard's links and the consent page's
    Approve and Reject are on screen, the page does not scroll sideways."""
    context = browser.new_context(
        viewport={"width": 390, "height": 844},
        locale="en-US",
        is_mobile=True,
        has_touch=True,
        device_scale_factor=1,
    )
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.locator("input[name=username]").fill("employee")
    page.locator("input[name=password]").fill(PASSWORD)
    page.locator("form button[type=submit]").last.click()
    expect(page.locator("#panel-profile")).to_be_visible()
    page.screenshot(path=str(SHOTS / "phone-dashboard.png"))
    page.goto(f"{live_server.url}/p/incident-analysis/proposals/")
    reject = page.locator("main button[name=decision][value=reject]").first
    reject.scroll_into_view_if_needed()
    expect(reject).to_be_in_viewport(ratio=1)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(SHOTS / "phone-consent.png"))
    context.close()
