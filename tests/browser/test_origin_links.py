""" "Why is this in my prompt?", followed in Chromium: an employee opens the origins of their
simulated prompt and of a session's stored prompt, follows a line's link, and lands on that
line of the file's blame, which names the agent's session and the tool call before the write.
The session's link goes to the revision its receipt names, not to today's head. In English at
1280 px, and in Russian at 360 px without sideways scrolling."""

import pytest
from playwright.sync_api import expect

from projects.audit import Actor
from projects.memory import store
from projects.models import Membership, MemoryFile
from projects.runners import hooks, prehook

pytestmark = [pytest.mark.browser, pytest.mark.db_independent, pytest.mark.django_db(transaction=True)]

LINE = "- Prefers calls before 10:00"


@pytest.fixture
def told(s3, project, agent, make_user):
    """Maria's profile: her own first line, then the agent's line written in a session after a
    tool call; a later session received it; then someone added a line today."""
    maria = make_user("maria-b")
    Membership.objects.create(user=maria, project=project, role="employee")
    agent.manifest = {
        "sections": [
            {"tag": "agent_identity", "source": "SOUL.md"},
            {"tag": "user_profile", "source": "USER.md"},
        ]
    }
    agent.hook_policy = {"post": {"USER.md": {"modes": ["append"]}}}
    agent.save()
    store.file_create(
        project=project,
        scope="agent",
        agent=agent,
        path="SOUL.md",
        content="You are careful.\n",
        actor=Actor.person(maria),
    )
    store.file_create(
        project=project,
        scope="user",
        user=maria,
        path="USER.md",
        content="- Name: Maria\n",
        actor=Actor.person(maria),
    )
    writer, _ = prehook.hook_pre(agent=agent, user=maria)
    hooks.hook_event(
        session=writer,
        kind="tool",
        payload={"name": "calendar_read", "details": {"url": "https://cal.test/maria"}},
    )
    hooks.hook_post(
        session=writer, writes=[hooks.WriteRequest(path="USER.md", mode="append", content=LINE + "\n")]
    )
    reader, _ = prehook.hook_pre(agent=agent, user=maria)
    profile = MemoryFile.objects.get(project=project, scope="user", user=maria)
    return {"maria": maria, "writer": writer, "reader": reader, "profile": profile}


def _log_in(page, base, username):
    page.goto(f"{base}/accounts/login/")
    page.locator("#id_username").fill(username)
    page.locator("#id_password").fill(f"pw-{username}")
    page.locator("form button[type=submit]").last.click()
    expect(page.locator("h1").first).to_be_visible()


def _follow(page, link_name):
    origins = page.locator("#prompt-origins")
    origins.locator("summary").click()
    row = origins.locator("tr", has_text=LINE)
    link = row.locator("a.origin-link")
    expect(link).to_contain_text(link_name)
    link.click()


def test_origin_links_lead_to_the_right_blame_line(page, live_server, project, agent, told):
    base = live_server.url
    profile, writer = told["profile"], told["writer"]
    _log_in(page, base, "maria-b")

    page.goto(f"{base}/p/{project.slug}/simulate/?agent={agent.slug}")
    _follow(page, "USER.md r2")
    expect(page).to_have_url(f"{base}/p/{project.slug}/f/{profile.pk}/blame/?r=2&line=2#L2")
    target = page.locator("tr#L2")
    expect(target).to_contain_text(LINE)
    expect(target).to_contain_text(f"session {str(writer.pk)[:9]}")
    expect(target).to_contain_text("calendar_read")
    expect(target).to_contain_text("https://cal.test/maria")
    assert page.evaluate("document.querySelector(':target').id") == "L2"

    # Today the profile moves on; the later session still points at revision 2, its receipt's.
    store.file_append(file=profile, addition="- Added today\n", actor=Actor.person(told["maria"]))
    page.goto(f"{base}/p/{project.slug}/sessions/{told['reader'].pk}/")
    _follow(page, "USER.md r2")
    expect(page).to_have_url(f"{base}/p/{project.slug}/f/{profile.pk}/blame/?r=2&line=2#L2")
    expect(page.locator("tr#L2")).to_contain_text(LINE)
    page.locator("tr#L2").get_by_role("link", name=f"session {str(writer.pk)[:9]}…").click()
    expect(page).to_have_url(f"{base}/p/{project.slug}/sessions/{writer.pk}/")
    expect(page.locator("#writes")).to_be_visible()


def test_origin_links_in_russian_on_a_phone(browser, live_server, project, agent, told):
    base = live_server.url
    context = browser.new_context(viewport={"width": 360, "height": 800}, locale="ru-RU")
    page = context.new_page()
    _log_in(page, base, "maria-b")
    page.goto(f"{base}/p/{project.slug}/sessions/{told['reader'].pk}/")
    expect(page.locator("#prompt-origins summary")).to_have_text("Откуда каждая строка")
    _follow(page, "USER.md r2")
    expect(page.locator("tr#L2")).to_contain_text(LINE)
    expect(page.locator("h1")).to_contain_text("Авторство строк")
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    page.locator("tr#L2").get_by_role("link", name="куда ушла").click()
    expect(page.locator("h1")).to_contain_text("Куда ушла строка 2")
    expect(page.locator("tbody")).to_contain_text("maria-b")
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    context.close()
