"""Every main page of the console, in English and in Russian, passes axe-core (the copy bundled
by axe-playwright-python, nothing fetched) without a serious or critical violation; the simulate
and audit pages keep a long unbroken token inside the window instead of widening the page."""

import time

import pytest
from axe_playwright_python.base import AXE_SCRIPT
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from projects.audit import Actor, audit_record
from projects.demo.seed import demo_seed
from projects.events import subscriptions
from projects.governance import groups, holds
from projects.models import Agent, MemoryFile, Project
from projects.runners import hooks, prehook

# Slow: every main page, as two roles, in two languages, at two widths.
pytestmark = [
    pytest.mark.browser,
    pytest.mark.db_independent,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

PASSWORD = "an accessible console 7"
# A token no browser may break on its own: no spaces, no hyphens, no punctuation.
LONG = "x" * 40 + "TOKEN" + "0123456789" * 20
LANGUAGES = ("en", "ru")
SERIOUS = {"serious", "critical"}


@pytest.fixture
def demo(s3, settings):
    """The demo data, plus a session with a tool call, a written file and a pending proposal
    that all carry a long unbroken token (as runners' payloads and paths do); a standing legal
    hold, a group mapping and a webhook with events in its log, so every table with row actions
    has rows."""
    settings.MGC_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1"]  # recorded, never sent: no worker runs
    demo_seed(password=PASSWORD)
    User = get_user_model()
    employee = User.objects.get(username="employee")
    project = Project.objects.get(slug="incident-analysis")
    agent = Agent.objects.get(project=project, slug="incident-analyst")
    session, _ = prehook.hook_pre(agent=agent, user=employee, external_ref=LONG)
    hooks.hook_event(
        session=session, kind="tool", payload={"name": "grafana_query", "summary": LONG, "query": LONG}
    )
    hooks.hook_post(
        session=session,
        summary=LONG,
        writes=[
            hooks.WriteRequest(
                path=f"workspace/notes/{LONG[:90]}.md", mode="replace", content=f"# Note\n\n{LONG}\n"
            ),
            hooks.WriteRequest(path="USER.md", mode="append", content=f"- Token: {LONG}\n"),
        ],
    )
    audit_record(
        actor=Actor.person(employee),
        action="file.save",
        project=project,
        obj=None,
        details={"path": LONG, "note": LONG},
    )
    admin = User.objects.get(username="admin")
    # On another person: a save under a hold is not what these pages are about (the employee's
    # consent flow below approves a write to their own profile).
    holds.hold_place(
        by=admin,
        project=project,
        reason="Дело о сбое авторизации, 3 декабря",
        user=User.objects.get(username="compliance"),
    )
    groups.mapping_save(by=admin, project=project, group="sre-on-call-engineers", role="employee")
    webhook, _secret = subscriptions.webhook_create(
        by=admin, project=project, url="http://127.0.0.1:9/hooks/memory", events=["session.ended"]
    )
    subscriptions.webhook_test(by=admin, subscription=webhook)  # an event in its delivery log
    profile = MemoryFile.objects.get(project=project, scope="user", user=employee)
    workspace = (
        MemoryFile.objects.filter(project=project, scope="workspace", head__number__gt=1)
        .order_by("path")
        .first()
    )
    # A subject's request with what was found, so its page shows the mentions and the choices.
    from projects.governance import subject_jobs, subjects

    admin = User.objects.get(username="admin")
    subject_request = subjects.request_open(
        by=admin, user=employee, kind="access", law="both", details=LONG, channel="email"
    )
    subject_jobs.inventory_refresh(by=admin, request=subject_request)
    own = subjects.request_open(by=employee, user=employee, kind="copy", law="gdpr")
    return {
        "subject_request": subject_request,
        "own_request": own,
        "project": project,
        "agent": agent,
        "employee": employee,
        "session": session,
        "webhook": webhook,
        "profile": profile,
        "workspace": workspace,
    }


def _pages(demo) -> list[str]:
    """The console's main pages as the admin sees them (relative URLs)."""
    p = f"/p/{demo['project'].slug}"
    a = f"{p}/agents/{demo['agent'].slug}"
    w = f"{p}/f/{demo['workspace'].pk}"
    employee = demo["employee"].pk
    return [
        "/",
        "/projects/",
        f"{p}/",
        f"{w}/",
        f"{w}/edit/",
        f"{w}/history/",
        f"{w}/diff/?a=1&b=2",
        f"{w}/blame/",
        f"{w}/carried/?r=2&line=1",
        f"{w}/r/1/",
        f"{p}/workspace/",
        f"{p}/search/?q=latency",
        f"{p}/simulate/?agent={demo['agent'].slug}&user={employee}",
        f"{p}/sessions/",
        f"{p}/sessions/{demo['session'].pk}/",
        f"{p}/proposals/",
        f"{p}/proposals/bulk/",
        f"{p}/review/",
        f"{p}/health/",
        f"{p}/poisoning/",
        "/audit/",
        f"{p}/members/",
        f"{p}/people/",
        f"{p}/isolation/",
        f"{a}/",
        f"{a}/settings/",
        f"{p}/people/{employee}/erase/",
        f"{p}/settings/",
        f"{p}/new-agent/",
        "/new-project/",
        f"{p}/holds/",
        f"{p}/retention/",
        f"{p}/groups/",
        f"{p}/webhooks/",
        f"{p}/webhooks/{demo['webhook'].pk}/",
        "/accounts/lockouts/",
        "/requests/",
        f"/requests/{demo['subject_request'].pk}/",
    ]


def _employee_pages(demo) -> list[str]:
    p = f"/p/{demo['project'].slug}"
    return [
        "/",
        f"{p}/",
        f"{p}/simulate/?agent={demo['agent'].slug}",
        f"{p}/f/{demo['profile'].pk}/",
        f"{p}/f/{demo['profile'].pk}/blame/",
        f"{p}/proposals/",
        "/requests/ask/",
        f"/requests/{demo['own_request'].pk}/",
    ]


def _login(page, base: str, username: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.locator("#id_username").fill(username)
    page.locator("#id_password").fill(PASSWORD)
    page.locator("form button[type=submit]").last.click()
    expect(page.locator("#panel-profile, h1").first).to_be_visible()


# axe-core is loaded by the context's init script (once per context, not 500 KB per page over
# the wire); only the serious and critical violations come back.
AXE_RUN = """async (impacts) => {
  const results = await axe.run(document, {resultTypes: ["violations"]});
  return results.violations.filter(v => impacts.includes(v.impact)).map(v =>
    `${v.id} (${v.impact}): ${v.help} at ${v.nodes.slice(0, 5).map(n => n.target.join(" "))}`);
}"""


WIDTHS = "[document.documentElement.scrollWidth, window.innerWidth]"


# axe only asks for a review of an aria-describedby pointing nowhere (Django adds one for every
# field with help text; the template must give the help text that id).
DANGLING = """[...document.querySelectorAll("[aria-describedby], [aria-labelledby], label[for]")]
  .flatMap(e => (e.getAttribute("aria-describedby") || e.getAttribute("aria-labelledby")
                 || e.htmlFor).split(/\\s+/).filter(id => id && !document.getElementById(id))
  .map(id => `${e.tagName.toLowerCase()}#${e.id} refers to missing #${id}`))"""


def _serious(page) -> list[str]:
    return page.evaluate(AXE_RUN, sorted(SERIOUS)) + page.evaluate(DANGLING)


def _notices(page, base: str, demo) -> dict:
    """Messages after a refused and an accepted decision: an alert, then a status; both pass."""
    problems = {}
    page.goto(f"{base}/p/{demo['project'].slug}/proposals/")
    page.locator("form[data-once]").first.evaluate("form => form.requestSubmit()")  # no decision
    expect(page.locator(".notice.error[role=alert]")).to_be_visible()
    problems["notice error"] = _serious(page)
    page.locator("button[value=approve]").first.click()
    expect(page.locator(".notice.success[role=status]")).to_be_visible()
    problems["notice success"] = _serious(page)
    return {where: found for where, found in problems.items() if found}


def test_every_main_page_passes_axe_and_fits_the_window_in_english_and_russian(browser, live_server, demo):
    base = live_server.url
    problems = {}
    started = time.monotonic()
    for username, pages in (("admin", _pages(demo)), ("employee", _employee_pages(demo))):
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        context.add_init_script(AXE_SCRIPT)
        page = context.new_page()
        for language in LANGUAGES:
            context.add_cookies([{"name": "django_language", "value": language, "url": base}])
            page.goto(f"{base}/accounts/login/")
            expect(page.locator("html")).to_have_attribute("lang", language)
            if username == "admin":
                found = _serious(page)
                if found:
                    problems[f"{language} /accounts/login/"] = found
            if language == LANGUAGES[0]:
                _login(page, base, username)
            for url in pages:
                response = page.goto(base + url)
                assert response.status == 200, f"{username} {url}: {response.status}"
                found = _serious(page)
                scroll, window = page.evaluate(WIDTHS)
                if scroll > window:  # a long token in the data widened the page
                    found.append(f"page {scroll} px wide in a {window} px window")
                if found:
                    problems[f"{username} {language} {url}"] = found
        if username == "employee":
            problems.update(_notices(page, base, demo))
        context.close()
    elapsed = time.monotonic() - started
    report = "\n".join(f"{where}:\n  " + "\n  ".join(found) for where, found in problems.items())
    assert not problems, f"serious or critical axe violations, or too wide ({elapsed:.0f} s):\n{report}"


RING = "e => `${getComputedStyle(e).outlineStyle} ${getComputedStyle(e).outlineWidth}`"


def test_tab_reaches_the_skip_link_first_with_a_visible_focus_ring(page, live_server, admin):
    page.goto(f"{live_server.url}/accounts/login/")
    page.locator("#id_username").fill(admin.username)
    page.locator("#id_password").fill(f"pw-{admin.username}")  # make_user's password
    page.locator("#id_password").press("Enter")
    expect(page.locator("h1")).to_be_visible()
    page.keyboard.press("Tab")
    skip = page.locator(".skip-link")
    expect(skip).to_be_focused()
    expect(skip).to_be_in_viewport()
    assert skip.evaluate(RING) == "solid 3px"  # the console's ring, not the browser's default
    page.keyboard.press("Enter")
    expect(page.locator("main#content")).to_be_focused()
    page.keyboard.press("Tab")  # on into the page's content, not back through the top bar
    assert page.evaluate("document.querySelector('main').contains(document.activeElement)")
    assert page.evaluate(f"({RING})(document.activeElement)") == "solid 3px"


def test_simulate_and_audit_keep_long_tokens_inside_the_window(browser, live_server, demo):
    base = live_server.url
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    _login(page, base, "admin")
    p = f"/p/{demo['project'].slug}"
    urls = [f"{p}/simulate/?agent={demo['agent'].slug}&user={demo['employee'].pk}", "/audit/"]
    too_wide = []
    for language in LANGUAGES:
        context.add_cookies([{"name": "django_language", "value": language, "url": base}])
        for url in urls:
            page.goto(base + url)
            expect(page.locator("html")).to_have_attribute("lang", language)
            expect(page.locator("main")).to_contain_text(LONG[:60])
            scroll, window = page.evaluate(WIDTHS)
            if scroll > window:
                too_wide.append(f"{language} {url}: {scroll} px wide in a {window} px window")
        # The audit filters wrap as label+field pairs: each label on its field's line, also
        # in a window narrow enough to wrap the row.
        for width in (1440, 760):
            page.set_viewport_size({"width": width, "height": 900})
            split = page.evaluate(PAIRS_APART)
            assert not split, f"{language} at {width} px: labels apart from {split}"
        page.set_viewport_size({"width": 1440, "height": 900})
    context.close()
    assert not too_wide, "\n".join(too_wide)


PAIRS_APART = """[...document.querySelectorAll("#audit-filters label")].filter(label => {
  const field = document.getElementById(label.htmlFor).getBoundingClientRect();
  const own = label.getBoundingClientRect();
  return Math.abs((own.top + own.bottom) / 2 - (field.top + field.bottom) / 2) > own.height / 2;
}).map(label => label.htmlFor)"""


# Fits a window: the page itself never scrolls sideways, and every control a person may use is
# inside the window or inside a box of its own that scrolls sideways (a wide table, a diff).
# Also the top bar: the title and the account links never overlap.
FITS = """() => {
  const width = window.innerWidth, problems = [];
  const page = document.documentElement.scrollWidth;
  const scrollsInBox = element => {
    for (let box = element.parentElement; box && box !== document.body; box = box.parentElement) {
      const style = getComputedStyle(box);
      if (/auto|scroll/.test(style.overflowX) && box.scrollWidth > box.clientWidth) return true;
    }
    return false;
  };
  const name = e => `${e.tagName.toLowerCase()}${e.id ? "#" + e.id : ""}${e.className &&
    typeof e.className === "string" ? "." + e.className.split(" ")[0] : ""} "${(e.textContent
    || e.name || e.value || "").trim().slice(0, 30)}"`;
  if (page > width) {  // name the deepest element that sticks out, for whoever fixes it
    const out = [...document.querySelectorAll("main *, header *")].filter(e =>
      e.getBoundingClientRect().right > width + 1 && !scrollsInBox(e));
    const deepest = out.filter(e => !out.some(o => o !== e && e.contains(o)));
    problems.push(`page ${page} px wide: ${deepest.slice(0, 3).map(name).join(", ")}`);
  }
  for (const e of document.querySelectorAll(
      "a[href], button, input:not([type=hidden]), select, textarea, summary")) {
    const r = e.getBoundingClientRect();
    if (!r.width || !r.height || e.closest(".visually-hidden, .skip-link")) continue;
    if (r.left >= -1 && r.right <= width + 1) continue;
    // A row's action (a button of a table row) is never left to a sideways scroll of the table.
    if (e.closest("td, th") && e.matches("button, select, input")) {
      problems.push(`row action ${name(e)} at ${Math.round(r.left)}..${Math.round(r.right)} px`);
    } else if (!scrollsInBox(e)) {
      problems.push(`${name(e)} at ${Math.round(r.left)}..${Math.round(r.right)} px`);
    }
  }
  const brand = document.querySelector(".topbar .brand").getBoundingClientRect();
  const account = document.querySelector(".topbar .user").getBoundingClientRect();
  if (brand.right > account.left && brand.bottom > account.top && account.bottom > brand.top)
    problems.push("the title runs into the account links");
  return problems;
}"""
PHONE, LAPTOP = 360, 1280


def _compliance_pages(demo) -> list[str]:
    p = f"/p/{demo['project'].slug}"
    w = f"{p}/f/{demo['workspace'].pk}"
    return [
        "/",
        "/projects/",
        f"{p}/",
        f"{p}/review/",
        "/audit/",
        f"{p}/search/?q=latency",
        f"{w}/",
        f"{w}/history/",
        f"{w}/diff/?a=1&b=2",
        f"{w}/blame/",
        f"{p}/workspace/",
        f"{p}/people/",
        f"{p}/sessions/",
        f"{p}/sessions/{demo['session'].pk}/",
        f"{p}/proposals/",
        f"{p}/simulate/?agent={demo['agent'].slug}&user={demo['employee'].pk}",
        f"{p}/agents/{demo['agent'].slug}/",
        f"{p}/requests/",
    ]


def test_every_main_page_of_each_role_fits_a_phone_and_a_laptop(browser, live_server, demo):
    """Each role's main pages at 360 px (the narrowest common phone) and 1280 px, in English
    and in Russian (longer words): no sideways scroll of the page, every control in reach, and
    the actions of a table's rows (Release a hold, Remove a member, Redeliver an event...)
    inside the window without scrolling the table. Each page is loaded once per language, and
    measured at both widths in English, at the phone's in Russian."""
    base = live_server.url
    problems = {}
    for username, pages in (
        ("admin", _pages(demo)),
        ("compliance", _compliance_pages(demo)),
        ("employee", _employee_pages(demo)),
    ):
        context = browser.new_context(viewport={"width": PHONE, "height": 800})
        page = context.new_page()
        _login(page, base, username)
        for language in LANGUAGES:
            context.add_cookies([{"name": "django_language", "value": language, "url": base}])
            for url in ["/accounts/login/?next=/"] + pages:
                response = page.goto(base + url)
                assert response.status == 200, f"{username} {url}: {response.status}"
                # The laptop width once: Russian's longer words are what a phone feels.
                for width in (PHONE, LAPTOP) if language == LANGUAGES[0] else (PHONE,):
                    page.set_viewport_size({"width": width, "height": 800})
                    found = page.evaluate(FITS)
                    if found:
                        problems[f"{username} {language} {width} px {url}"] = found
                page.set_viewport_size({"width": PHONE, "height": 800})
        context.close()
    report = "\n".join(f"{where}:\n  " + "\n  ".join(found[:8]) for where, found in problems.items())
    assert not problems, f"pages wider than the window or controls out of reach:\n{report}"
