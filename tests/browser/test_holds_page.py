"""The Legal holds page while a hold is being placed: its row says so and follows the sweep
without a reload (static/js/refresh.js re-reads that one cell), while a release note being
typed beside it stays; at 360 px, in English and in Russian."""

import pytest
from playwright.sync_api import expect

from projects.audit import Actor
from projects.governance import holds
from projects.memory import holding, store
from projects.models import LegalHold, Membership
from tests.browser.test_accessibility import FITS, PHONE

pytestmark = [pytest.mark.browser, pytest.mark.db_independent, pytest.mark.django_db(transaction=True)]

PASSWORD = "holds are held"
WORDS = {
    "en": ("being placed", "held in storage", "State"),
    "ru": ("накладывается", "удерживается в хранилище", "Состояние"),
}


@pytest.fixture
def olga(project, make_user):
    user = make_user("olga-holds")
    user.set_password(PASSWORD)
    user.save()
    Membership.objects.create(user=user, project=project, role="admin")
    return user


@pytest.mark.parametrize("language", ["en", "ru"])
def test_a_hold_being_placed_shows_its_progress_and_then_that_it_is_held(
    browser, live_server, s3, project, olga, language
):
    s3.lock()
    store.file_create(project=project, scope="workspace", path="a.md", content="a\n", actor=Actor.system("t"))
    s3.proxy.inject("PUT", r"legal-hold", "status", status=503, times=10**6)  # the store stumbles
    hold, sweep = holds.hold_place(by=olga, project=project, reason="inquiry", case_reference="Q-9")
    assert not sweep.finished
    s3.proxy.heal()
    placing, placed, column = WORDS[language]

    context = browser.new_context(viewport={"width": PHONE, "height": 800}, locale=language)
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.locator("#id_username").fill("olga-holds")
    page.locator("#id_password").fill(PASSWORD)
    page.locator("form button[type=submit]").last.click()
    page.goto(f"{live_server.url}/p/{project.slug}/holds/")
    state = page.locator(f"#hold-state-{hold.pk}")
    expect(state).to_contain_text(placing)
    assert page.evaluate(FITS) == []  # fits the phone, every control in reach
    note = page.locator(f"#note-{hold.pk}")
    note.fill("typed while it sweeps")

    # The storage answers again; the worker (here, this process) finishes the sweep.
    assert holding.sweep(LegalHold.objects.get(pk=hold.pk)).done
    expect(state).to_contain_text(placed, timeout=15_000)  # no reload: refresh.js
    expect(state).not_to_have_attribute("data-refresh", "3")
    expect(state).to_have_attribute("data-label", column)  # stacked at 360 px: still named
    expect(note).to_have_value("typed while it sweeps")
    context.close()
