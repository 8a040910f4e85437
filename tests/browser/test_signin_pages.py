"""A paused sign-in, seen in a phone's browser in English and in Russian: the page says why and
for how long and fits 360 px; the owner's own browser still signs in; a superuser unlocks it on
Sign-in lockouts, also at 360 px."""

import pytest
from django.core.cache import cache
from playwright.sync_api import expect

from projects.models import SignInFailure

pytestmark = [pytest.mark.browser, pytest.mark.db_independent, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 360, "height": 740}
WORDS = {
    "en": {"paused": "Sign-in paused", "lockouts": "Sign-in lockouts", "unlock": "Unlock"},
    "ru": {"paused": "Вход приостановлен", "lockouts": "Блокировки входа", "unlock": "Разблокировать"},
}


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()  # the live server shares this process's cache: no refusal left from before
    yield
    cache.clear()


def _sign_in(page, live_server, username: str, password: str) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.locator("#id_username").fill(username)
    page.locator("#id_password").fill(password)
    page.locator("#id_password").press("Enter")


def _fits(page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]


@pytest.mark.parametrize("language", ["en", "ru"])
def test_a_paused_sign_in_says_why_fits_a_phone_and_is_unlocked(
    browser, live_server, make_user, settings, language
):
    # Everyone here comes from 127.0.0.1: ten failures must not pause the address itself.
    settings.MGC_LOGIN_ADDRESS_FAILURE_LIMIT = 30
    make_user("maria")
    make_user("boss", is_superuser=True, is_staff=True)
    words = WORDS[language]

    def phone():
        return browser.new_context(viewport=PHONE, locale="ru-RU" if language == "ru" else "en-US").new_page()

    own = phone()  # maria's own phone: she signed in there before
    _sign_in(own, live_server, "maria", "pw-maria")
    expect(own).not_to_have_url(f"{live_server.url}/accounts/login/")

    # Ten wrong passwords for maria from this address (the view tests type them one by one).
    SignInFailure.objects.create(
        account="maria", client="address:127.0.0.1", address="127.0.0.1", failures=10
    )
    stranger = phone()
    _sign_in(stranger, live_server, "maria", "pw-maria")
    expect(stranger.get_by_role("heading", level=1)).to_have_text(words["paused"])
    expect(stranger.get_by_role("alert")).to_contain_text("15")  # for how long, in minutes
    _fits(stranger)

    _sign_in(own, live_server, "maria", "pw-maria")  # her phone is not locked
    expect(own).not_to_have_url(f"{live_server.url}/accounts/login/")

    boss = phone()
    _sign_in(boss, live_server, "boss", "pw-boss")
    boss.goto(f"{live_server.url}/accounts/lockouts/")
    expect(boss.get_by_role("heading", level=1)).to_have_text(words["lockouts"])
    # Locked from the stranger's address, and slowed for browsers that never signed in.
    expect(boss.get_by_role("row").filter(has_text="maria")).to_have_count(2)
    _fits(boss)
    boss.get_by_role("button", name=words["unlock"]).first.click()
    expect(boss.get_by_role("row").filter(has_text="maria")).to_have_count(0)

    _sign_in(stranger, live_server, "maria", "pw-maria")
    expect(stranger).not_to_have_url(f"{live_server.url}/accounts/login/")
