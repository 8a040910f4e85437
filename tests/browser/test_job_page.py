"""A retention run started from its page, with the keyboard, in Russian, on a phone: the button
says it is working, the page that answers at once shows the run queued, and when the worker
has done it the status says so without a reload (static/js/refresh.js); axe finds nothing
serious, and everything fits 360 px."""

import datetime as dt

import pytest
from axe_playwright_python.base import AXE_SCRIPT
from django.utils import timezone
from playwright.sync_api import expect

from projects.audit import Actor
from projects.governance import jobs, retention
from projects.memory import store
from projects.models import BackgroundJob, Membership, Revision
from tests.browser.test_accessibility import FITS, PHONE, _serious

pytestmark = [pytest.mark.browser, pytest.mark.db_independent, pytest.mark.django_db(transaction=True)]

PASSWORD = "jobs run in the background"


def test_a_retention_run_from_the_page_shows_queued_then_done_without_a_reload(
    browser, live_server, s3, project, make_user
):
    olga = make_user("olga-jobs")
    olga.set_password(PASSWORD)
    olga.save()
    Membership.objects.create(user=olga, project=project, role="admin")
    store.file_create(
        project=project, scope="workspace", path="old.md", content="old\n", actor=Actor.system("t")
    )
    Revision.objects.update(created_at=timezone.now() - dt.timedelta(days=5))
    retention.rule_add(by=olga, project=project, kind="files", glob="workspace/**", days=1)

    context = browser.new_context(viewport={"width": PHONE, "height": 800}, locale="ru")
    context.add_init_script(AXE_SCRIPT)
    context.add_cookies([{"name": "django_language", "value": "ru", "url": live_server.url}])
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.locator("#id_username").fill("olga-jobs")
    page.locator("#id_password").fill(PASSWORD)
    page.locator("form button[type=submit]").last.click()
    page.goto(f"{live_server.url}/p/{project.slug}/retention/")
    assert page.evaluate(FITS) == []
    page.on("dialog", lambda dialog: dialog.accept())  # "Expire now what is due today?"
    button = page.get_by_role("button", name="Применить сроки хранения сейчас")
    button.focus()
    page.keyboard.press("Enter")
    expect(page.locator("h1")).to_have_text("Прогон сроков хранения")
    job = BackgroundJob.objects.get()
    status = page.locator(f"#job-{job.pk}")
    expect(status).to_contain_text("в очереди")
    expect(status).to_have_attribute("data-refresh", "3")
    assert page.evaluate(FITS) == [] and _serious(page) == []

    assert jobs.job_run(job.pk) == "done"  # the events worker's step, in this process
    expect(status).to_contain_text("Прогон сроков хранения закончен", timeout=15_000)  # no reload
    expect(page.locator(f"#job-{job.pk}")).not_to_have_attribute("data-refresh", "3")
    assert "Файлов истекло" in page.locator(f"#job-{job.pk}").inner_text()
    assert page.evaluate(FITS) == [] and _serious(page) == []
    context.close()
