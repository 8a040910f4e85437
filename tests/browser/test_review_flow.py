"""A compliance officer reviews in a real browser: the dashboard points to the queue, an
agent's write with a phone number shows up first, flagged by the scanner; she flags it, marks
it reviewed, searches, and exports the audit trail. Screenshots go to docs/screenshots."""

from pathlib import Path

import pytest
from playwright.sync_api import expect

from projects.audit import Actor
from projects.memory import store
from projects.models import AuditEvent, Membership

pytestmark = [pytest.mark.browser, pytest.mark.db_independent, pytest.mark.django_db(transaction=True)]

SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


@pytest.fixture
def rita(s3, project, agent, person, make_user):
    user = make_user("rita", first_name="Rita", last_name="Kuznetsova")
    user.set_password("review all the things")
    user.save()
    Membership.objects.create(user=user, project=project, role="compliance")
    profile = store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="# Maria\n\n- Prefers short reports.\n",
        actor=Actor.person(person),
    )
    store.file_save(
        file=profile.file,
        actor=Actor.for_agent(agent, "run-7"),
        base_revision=1,
        message="learned contact details",
        content="# Maria\n\n- Prefers short reports.\n- Mobile: +7 (916) 123-45-67.\n",
    )
    store.file_create(
        project=project,
        scope="workspace",
        path="incidents/2026-12-01.md",
        content="# Outage\n\nThe queue stalled after the deploy; rolled back.\n",
        actor=Actor.system("seed"),
    )
    return user


def test_review_flag_mark_search_and_audit(page, live_server, rita, project):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill("rita")
    page.get_by_label("Password").fill("review all the things")
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("#panel-review")).to_contain_text("2 files changed")

    page.locator("#panel-review").get_by_role("link", name=project.name).click()
    first = page.locator("section.review-item").first
    expect(first).to_contain_text("users/maria/USER.md")  # the agent's write comes first
    expect(first).to_contain_text("phone number")
    expect(first.locator("table.diff")).to_contain_text("Mobile")
    page.screenshot(path=str(SHOTS / "review.png"), full_page=True)

    first.locator("summary", has_text="Flag").click()
    expect(first.get_by_label("Revision that caused it")).to_have_value("2")
    first.get_by_label("What is wrong?").fill("Private phone number; remove it.")
    first.get_by_role("button", name="Flag").click()
    expect(page.locator("#open-flags")).to_contain_text("Private phone number")
    # Resolving takes a note and asks first; Cancel sends nothing.
    page.locator("#open-flags").get_by_role("link", name="Thread, resolve…").click()
    page.get_by_label("How was it resolved?").fill("The agent's owner removed it.")
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.get_by_role("button", name="Resolve flag").click()
    expect(page.locator("#resolve")).to_be_visible()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Resolve flag").click()
    expect(page.locator(".messages")).to_contain_text("Resolved the flag")
    assert AuditEvent.objects.get(action="review.resolve").details["note"].startswith("The agent")
    page.locator("section.review-item").first.get_by_role("button", name="Mark reviewed up to r2").click()
    # On to the next file of the queue, on its own page; marking it ends at the queue.
    expect(page.locator(".messages")).to_contain_text("Next in your queue")
    expect(page.locator("section.review-item")).to_have_count(1)
    page.locator("section.review-item").get_by_role("button", name="Mark reviewed").click()
    expect(page.locator("body")).to_contain_text("All files are reviewed")
    expect(page.locator("section.review-item")).to_have_count(0)

    page.goto(f"{live_server.url}/p/{project.slug}/search/")
    page.get_by_label("Words to find").fill("queue deploy")
    page.get_by_label("Words to find").press("Enter")
    expect(page.locator(".snippet mark").first).to_have_text("queue")
    page.screenshot(path=str(SHOTS / "search.png"), full_page=True)

    page.goto(f"{live_server.url}/audit/?project={project.slug}")
    expect(page.locator("#audit-table")).to_contain_text("review.flag")
    page.screenshot(path=str(SHOTS / "audit.png"), full_page=True)
    with page.expect_download() as download:
        page.locator("#export-csv").click()
    assert download.value.suggested_filename.endswith(".csv")
    assert AuditEvent.objects.filter(action="audit.export", actor_user=rita).exists()


def test_russian_officer_switches_language_and_finds_her_work(page, live_server, rita, project):
    """The switcher on the login page; the dashboard, queue and dates then read in Russian."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_role("button", name="Русский").click()
    expect(page.locator("html")).to_have_attribute("lang", "ru")
    page.get_by_label("Имя пользователя").fill("rita")
    page.get_by_label("Пароль").fill("review all the things")
    page.get_by_role("button", name="Войти").click()
    expect(page.locator("#panel-review")).to_contain_text("2 файла изменились")
    expect(page.get_by_role("button", name="English")).to_be_enabled()
    page.screenshot(path=str(SHOTS / "dashboard-ru.png"), full_page=True)

    page.locator("#panel-review").get_by_role("link", name=project.name).click()
    first = page.locator("section.review-item").first
    expect(first).to_contain_text("номер телефона")
    expect(first.get_by_role("button", name="Отметить проверенным до r2")).to_be_visible()
    page.screenshot(path=str(SHOTS / "review-ru.png"), full_page=True)
