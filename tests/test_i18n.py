"""The console in English and Russian: every word a person reads comes from the catalogue, the
Russian catalogue is complete and compiled, and the switcher, dates and numbers follow the
chosen language."""

import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import polib
import pytest
from django.conf import settings
from django.core.cache import cache
from django.template.base import Lexer, TokenType
from django.test import Client
from django.urls import reverse
from django.utils import translation

from projects.audit import Actor
from projects.memory import scanning, store
from projects.models import AuditEvent

pytestmark = pytest.mark.db_independent

ROOT = Path(settings.BASE_DIR)
PO = ROOT / "locale" / "ru" / "LC_MESSAGES" / "django.po"
MO = PO.with_suffix(".mo")
TEMPLATES = sorted((ROOT / "templates").rglob("*.html"))

# Words that stay as they are in every language: file and format names, units of the trade.
UNTRANSLATED = {
    "USER.md",
    "SOUL.md",
    "AGENTS.md",
    "TOOLS.md",
    "Markdown",
    "CSV",
    "JSON",
    "Lines",
    "sha256",
    "r",
}
# Attributes a person reads or hears (screen readers); the rest are for machines.
HUMAN_ATTRIBUTES = {"title", "placeholder", "aria-label", "alt", "data-busy"}
MARK = "\u2063"  # where a template tag or variable stood


class _Words(HTMLParser):
    """The text and the human-facing attribute values of an HTML page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.words: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in {"script", "style"}:
            self._skip += 1
        for name, value in attrs:
            if value and (name in HUMAN_ATTRIBUTES or name.startswith("data-text-")):
                self.words.append(value)

    def handle_endtag(self, tag):
        if tag in {"script", "style"}:
            self._skip -= 1

    def handle_data(self, data):
        if not self._skip:
            self.words.append(data)


def _untranslated_text(path: Path) -> list[str]:
    """Pieces of literal template text with letters in them that no translate tag covers."""
    source = path.read_text()
    pieces, depth = [], 0
    for token in Lexer(source).tokenize():
        content = token.contents.strip()
        if token.token_type == TokenType.BLOCK:
            if content.startswith("blocktranslate"):
                depth += 1
            elif content == "endblocktranslate":
                depth -= 1
        if token.token_type == TokenType.TEXT and not depth:
            pieces.append(token.contents)
        else:
            pieces.append(MARK)
    parser = _Words()
    parser.feed("".join(pieces))
    found = []
    for text in parser.words:
        words = re.findall(r"[^\W\d_][\w.]*", text.replace(MARK, " "))
        found += [w for w in words if w not in UNTRANSLATED]
    return found


def _literal_phrases(path: Path) -> list[str]:
    """Quoted literals inside tags that read as words (`default:"(deleted user)"`), outside
    translate tags: they reach the page untranslated."""
    found = []
    for token in Lexer(path.read_text()).tokenize():
        content = token.contents.strip()
        if token.token_type not in (TokenType.BLOCK, TokenType.VAR):
            continue
        if content.startswith(("translate", "blocktranslate", "plural")):
            continue
        for a, b in re.findall(r'"([^"]*)"|\'([^\']*)\'', content):
            literal = a or b
            if re.search(r"[^\W\d_]{2,}\s+[^\W\d_]", literal) or re.match(r"[A-Z][a-z]", literal):
                found.append(literal)
    return found


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: str(p.relative_to(ROOT / "templates")))
def test_every_template_string_is_translatable(path):
    assert _untranslated_text(path) == []
    assert _literal_phrases(path) == []


def test_the_template_check_finds_untranslated_text(tmp_path):
    page = tmp_path / "page.html"
    page.write_text(
        '{% extends "base.html" %}{% block content %}<h1>{% translate "Fine" %}</h1>'
        '<p title="Hover text">Plain words {{ name }}</p>'
        "{% blocktranslate %}Also fine {{ x }}{% endblocktranslate %}"
        '<a href="/x" class="button">USER.md</a>'
        '{{ value|default:"Nobody here" }}{% endblock %}'
    )
    assert _untranslated_text(page) == ["Hover", "text", "Plain", "words"]
    assert _literal_phrases(page) == ["Nobody here"]


def _catalogue() -> polib.POFile:
    return polib.pofile(str(PO))


def _placeholders(text: str) -> set[str]:
    return set(re.findall(r"%\(\w+\)[sdr]|\{\w+\}", text))


def test_russian_catalogue_is_complete():
    catalogue = _catalogue()
    assert len(catalogue) > 400
    assert catalogue.percent_translated() == 100, [e.msgid for e in catalogue.untranslated_entries()]
    assert catalogue.fuzzy_entries() == [] and catalogue.obsolete_entries() == []
    for entry in catalogue:
        if entry.msgid_plural:
            forms = [entry.msgstr_plural[i] for i in sorted(entry.msgstr_plural)]
            assert len(forms) == 4 and all(forms), entry.msgid
            expected = _placeholders(entry.msgid_plural)
            assert all(_placeholders(form) == expected for form in forms), entry.msgid
        else:
            assert _placeholders(entry.msgstr) == _placeholders(entry.msgid), entry.msgid


def test_compiled_catalogue_matches_the_source():
    """The committed .mo is what Django loads: it must hold every entry of the .po as is."""
    compiled = {(e.msgctxt, e.msgid): (e.msgstr, dict(e.msgstr_plural)) for e in polib.mofile(str(MO))}
    for entry in _catalogue():
        assert compiled.get((entry.msgctxt, entry.msgid)) == (
            entry.msgstr,
            {int(k): v for k, v in entry.msgstr_plural.items()},
        ), entry.msgid


def test_catalogue_lists_every_string_in_the_source(tmp_path):
    """makemessages over a copy of the source finds no message the catalogue lacks."""
    if shutil.which("xgettext") is None:
        pytest.fail("xgettext (GNU gettext) is needed to extract messages: apt-get install gettext")
    for name in ("manage.py",):
        shutil.copy(ROOT / name, tmp_path / name)
    for name in ("memoryadmin", "projects", "templates", "static", "locale"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [sys.executable, "manage.py", "makemessages", "-l", "ru", "--no-obsolete"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "memoryadmin.settings"},
    )
    extracted = {(e.msgctxt, e.msgid) for e in polib.pofile(str(tmp_path / PO.relative_to(ROOT)))}
    committed = {(e.msgctxt, e.msgid) for e in _catalogue()}
    assert sorted(extracted - committed, key=str) == []
    assert sorted(committed - extracted, key=str) == []


def test_russian_plurals_pick_the_right_form():
    findings = [{"kind": "email"}] * 2 + [{"kind": "password"}] * 5
    with translation.override("ru"):
        assert scanning.summary(findings) == "2 адреса электронной почты, 5 паролей"
    assert scanning.summary(findings, language="en") == "2 e-mail addresses, 5 passwords"


# --- Pages in Russian -------------------------------------------------------------------------


@pytest.fixture
def russian(client):
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "ru"
    return client


@pytest.mark.django_db
def test_switcher_sets_the_language_and_returns_to_the_page(client, admin):
    client.force_login(admin)
    page = client.get(reverse("projects:project_list"))
    assert 'id="language-switcher"' in page.content.decode()
    response = client.post(
        reverse("set_language"), {"language": "ru", "next": reverse("projects:project_list")}
    )
    assert response.status_code == 302 and response.url == reverse("projects:project_list")
    html = client.get(response.url).content.decode()
    assert '<html lang="ru">' in html and "<h1>Проекты</h1>" in html
    client.post(reverse("set_language"), {"language": "en", "next": "/"})
    assert "<h1>Projects</h1>" in client.get(reverse("projects:project_list")).content.decode()


@pytest.mark.django_db
def test_switcher_refuses_a_foreign_next_and_unknown_languages(client):
    response = client.post(reverse("set_language"), {"language": "ru", "next": "https://evil.example/"})
    assert response.url == "/"
    client.post(reverse("set_language"), {"language": "xx", "next": "/"})
    assert client.cookies[settings.LANGUAGE_COOKIE_NAME].value == "ru"


@pytest.mark.django_db
def test_browser_language_is_the_default(client):
    html = client.get(reverse("login"), headers={"accept-language": "ru-RU,ru;q=0.9"}).content
    assert "Управляйте тем, что помнят ИИ-агенты".encode() in html
    assert b"Govern what your" in client.get(reverse("login")).content


@pytest.mark.django_db
def test_dashboard_in_russian_with_russian_dates(russian, s3, project, agent, person, admin):
    revision = store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="Мария\n",
        actor=Actor.for_agent(agent, "s1"),
    )
    russian.force_login(person)
    html = russian.get(reverse("projects:dashboard")).content.decode()
    assert "Что агентам сообщают о вас" in html and "версия 1" in html
    assert revision.created_at.strftime("%d.%m.%Y") in html
    assert "Сотрудник" in html  # the role's label, not its stored value


@pytest.mark.django_db
def test_form_errors_and_messages_in_russian(russian, s3, project, admin):
    russian.force_login(admin)
    response = russian.post(reverse("projects:workspace_new", args=[project.slug]), {"path": "../escape.md"})
    assert "Путь не может содержать частей «.» и «..»." in response.content.decode()
    response = russian.post(
        reverse("projects:workspace_new", args=[project.slug]), {"path": "notes/new.md"}, follow=True
    )
    form_page = response.content.decode()
    assert "Предпросмотр" in form_page and "Сохранить" in form_page


@pytest.mark.django_db
def test_audit_records_stay_in_english_whoever_writes_them(russian, s3, project, admin):
    russian.force_login(admin)
    file = store.file_create(
        project=project, scope="workspace", path="a.md", content="x\n", actor=Actor.person(admin)
    ).file
    russian.post(
        reverse("projects:file_edit", args=[project.slug, file.pk]),
        {"content": "mail me: olga@example.com\n", "base_revision": 1},
    )
    file.refresh_from_db()
    assert file.head.number == 2
    event = AuditEvent.objects.filter(action="file.save").latest("seq")
    assert event.details["findings"] == "1 e-mail address"
    page = russian.get(reverse("projects:audit_log")).content.decode()
    assert "сохранил(а) файл" in page  # the action's label is translated on the page


@pytest.mark.django_db
def test_error_pages_speak_the_language(russian, admin, settings):
    settings.DEBUG = False
    russian.force_login(admin)
    response = russian.get("/p/no-such-project/")
    assert response.status_code == 404
    assert "Не найдено" in response.content.decode()
    guarded = Client(enforce_csrf_checks=True)
    guarded.cookies[settings.LANGUAGE_COOKIE_NAME] = "ru"
    guarded.force_login(admin)
    response = guarded.post(reverse("logout"))
    assert response.status_code == 403
    assert "Форма устарела" in response.content.decode()


# --- What the console itself writes, walked in Russian --------------------------------------

LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z’'-]*[A-Za-z]")
# Shown as they are in every language: identifiers in <code> or written like one (action
# codes, keys, paths, URLs), placeholders of the scripts' words ({when}), the names of
# products, and language names in the switcher (each in its own language).
CODE = re.compile(r"<(code|kbd|samp)\b[^>]*>.*?</\1>", re.S)
IDENTIFIER = re.compile(r"\S*[./_:<>=\d]\S*|\{\w+\}")
OWN_NAMES = ("S3 Object Lock", "Object Lock", "Django", "UTC", "English", "e-mail")


def _english_on(html: str, data: list[str]) -> list[str]:
    """Latin words a person reads on the page (text and human-facing attributes) that are not
    the data it shows (names, paths, what people typed): the console's own words left in
    English."""
    parser = _Words()
    parser.feed(CODE.sub(" ", html))
    text = " ".join(parser.words)
    for value in sorted([*data, *OWN_NAMES], key=len, reverse=True):
        text = text.replace(value, " ")
    text = IDENTIFIER.sub(" ", text)
    return sorted({w for w in LATIN_WORD.findall(text) if w not in UNTRANSLATED})


@pytest.mark.django_db
def test_holds_audit_and_sign_in_pages_have_no_english_console_text(russian, s3, project, agent, settings):
    """The holds page, the audit trail (object labels, details, system actors) and the sign-in
    pages, after what happens around them: holds placed and released, a group mapping and the
    memberships that follow it at a sign-in, an account made by single sign-on, a lockout and
    its lifting. Whatever Latin text remains is data the test made, or the check fails."""
    from django.contrib.auth import get_user_model

    from projects.governance import groups, holds, identities, lockouts

    User = get_user_model()
    boss = User.objects.create_user("boss", password="pw-boss", is_superuser=True, is_staff=True)
    worker = User.objects.create_user("worker", password="pw-worker")
    file = store.file_create(
        project=project, scope="workspace", path="incidents/a.md", content="x\n", actor=Actor.system("t")
    ).file
    hold, _sweep = holds.hold_place(by=boss, project=project, reason="Дело 42", user=worker)
    holds.hold_place(by=boss, project=project, reason="Дело 43", file=file)
    holds.hold_place(by=boss, project=project, reason="Дело 44", glob="workspace/incidents/**.md")
    holds.hold_release(by=boss, hold=hold, note="закрыто")
    mapping = groups.mapping_save(by=boss, project=project, group="sre", role="employee")
    groups.mapping_save(by=boss, project=project, group="sre", role="compliance", mapping=mapping)
    joined = identities.account_create_for_identity(
        username="alice", issuer="http://127.0.0.1:9/o", subject="sub-1", email="alice@example.com"
    )
    groups.memberships_follow_groups(user=joined, groups=["sre"])
    groups.memberships_follow_groups(user=joined, groups=[])
    settings.MGC_LOGIN_FAILURE_LIMIT = 3
    cache.clear()  # refusals flagged by earlier tests
    # Two lockouts: worker's from one address lifted below, boss's from another standing.
    for username, address in (("worker", "203.0.113.7"), ("boss", "203.0.113.8")):
        stranger = Client()
        for n in range(3):
            stranger.post(
                reverse("login"), {"username": username, "password": f"wrong-{n}"}, REMOTE_ADDR=address
            )
    lifted = next(lock for lock in lockouts.lockouts() if lock.address == "203.0.113.7")
    lockouts.lockout_lift(by=boss, kind=lifted.kind, account=lifted.account, client=lifted.client)

    russian.force_login(boss)
    data = [
        project.name,
        project.slug,
        "boss",
        "worker",
        "alice",
        "alice@example.com",
        "sre",
        "incidents/a.md",
        "workspace/incidents/**.md",
        "http://127.0.0.1:9/o",
        "sub-1",
        "203.0.113.7",
        "203.0.113.8",
        "Дело 42",
        "Дело 43",
        "Дело 44",
        "закрыто",
    ]
    found, pages = {}, {}
    for url in (
        reverse("projects:holds", args=[project.slug]),
        reverse("projects:audit_log"),
        reverse("lockouts"),
        reverse("login") + "?next=/",
    ):
        if url.startswith(reverse("login")):
            russian.logout()
            russian.cookies[settings.LANGUAGE_COOKIE_NAME] = "ru"
        html = russian.get(url).content.decode()
        pages[url] = html
        english = _english_on(html, data)
        if english:
            found[url] = english
    assert found == {}, "\n".join(f"{url}: {' '.join(words)}" for url, words in found.items())
    # ... and the pages do show it, in Russian: not an empty walk.
    holds_page, audit_page = (
        pages[reverse("projects:holds", args=[project.slug])],
        pages[reverse("projects:audit_log")],
    )
    assert "человек worker" in holds_page and "файлы workspace/incidents/**.md" in holds_page
    assert "— выберите —" in holds_page
    assert "203.0.113.8" in pages[reverse("lockouts")]  # the standing lockout, in Russian
    assert "юридическое удержание №1 (человек worker)" in audit_page
    assert "группа sre → incidents, роль: Комплаенс" in audit_page and "система: вход" in audit_page
    assert "способ</dt><dd>единый вход" in audit_page
    # What the page shows a system actor as finds it in the filter.
    russian.force_login(boss)
    filtered = russian.get(reverse("projects:audit_log"), {"actor": "система: вход"}).content.decode()
    rows = filtered[filtered.index("<tbody>") :]
    assert "вход заблокирован" in rows and "наложил(а) юридическое удержание" not in rows
