"""A person edits their profile in a real browser: type, live preview, save, history, diff,
restore, and a conflict resolved without losing the text. Screenshots go to docs/screenshots."""

import re
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from projects.audit import Actor
from projects.memory import reading, store
from projects.models import Membership, MemoryFile

pytestmark = [pytest.mark.browser, pytest.mark.db_independent, pytest.mark.django_db(transaction=True)]

SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


@pytest.fixture
def maria(s3, project, make_user):
    user = make_user("maria.ivanova", first_name="Мария", last_name="Иванова")
    user.set_password("correct horse 42")
    user.save()
    Membership.objects.create(user=user, project=project, role="employee")
    revision = store.file_create(
        project=project,
        scope="user",
        user=user,
        path="USER.md",
        actor=Actor.person(user),
        content="# Профиль: Мария Иванова\n\n- Role: incident manager.\n- Prefers short reports.\n",
    )
    file = MemoryFile.objects.select_related("head", "project").get(pk=revision.file_id)
    store.file_save(
        file=file,
        actor=Actor.person(user),
        base_revision=1,
        message="time zone",
        content="# Профиль: Мария Иванова\n\n- Role: incident manager.\n"
        "- Prefers short reports.\n- Time zone: Europe/Moscow.\n",
    )
    return user


def _login(page, live_server):
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill("maria.ivanova")
    page.get_by_label("Password").fill("correct horse 42")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Hello, Мария Иванова")).to_be_visible()


def test_edit_preview_save_history_diff_restore_and_conflict(page, live_server, maria, project, s3):
    SHOTS.mkdir(parents=True, exist_ok=True)
    _login(page, live_server)
    expect(page.locator("#panel-profile")).to_contain_text("revision 2")
    page.screenshot(path=str(SHOTS / "dashboard.png"), full_page=True)
    page.get_by_role("link", name=project.name).click()
    page.get_by_role("link", name="Open my profile").click()
    expect(page.locator("article.markdown h1")).to_have_text("Профиль: Мария Иванова")

    # Type, and watch the server-rendered preview follow.
    page.get_by_role("navigation", name="File").get_by_role("link", name="Edit").click()
    editor = page.locator("textarea[name=content]")
    editor.press("Control+End")
    editor.type("- Likes **tables** in reports.\n")
    expect(page.locator("#preview strong")).to_have_text("tables")
    expect(page.locator("#size")).to_contain_text(re.compile(r"KB of [\d.,]+ KB at most"))
    page.get_by_label("Message").fill("tables")
    page.screenshot(path=str(SHOTS / "editor.png"), full_page=True)

    # Ctrl+S saves.
    editor.press("Control+s")
    expect(page.get_by_text("Saved revision 3.")).to_be_visible()
    expect(page.locator("article.markdown strong")).to_have_text("tables")

    # History lists the new revision; compare 1 with 3.
    page.get_by_role("navigation", name="File").get_by_role("link", name="History").click()
    expect(page.locator("table.revisions tbody tr")).to_have_count(3)
    expect(page.locator("table.revisions tbody tr").first).to_contain_text("tables")
    page.screenshot(path=str(SHOTS / "history.png"), full_page=True)
    page.get_by_label("Compare from revision 1").check()
    page.get_by_label("Compare to revision 3").check()
    page.get_by_role("button", name="Compare selected revisions").click()
    expect(page).to_have_url(re.compile(r"diff/\?(b=3&a=1|a=1&b=3)"))
    expect(page.locator("ins.addition").first).to_be_visible()
    page.screenshot(path=str(SHOTS / "diff.png"), full_page=True)
    page.get_by_label("as").select_option("unified")
    page.get_by_role("button", name="Show").click()
    expect(page.locator("table.diff.unified")).to_be_visible()

    # Restore revision 1 as revision 4.
    page.goto(f"{live_server.url}/p/{project.slug}/f/{_profile(maria).pk}/r/1/")
    page.get_by_role("button", name="Restore as a new revision").click()
    expect(page.get_by_text("Restored revision 1 as revision 4.")).to_be_visible()
    assert s3.get(_profile(maria).key).decode().endswith("- Prefers short reports.\n")

    # Conflict: the file changes under the open editor; the typed text survives.
    page.get_by_role("navigation", name="File").get_by_role("link", name="Edit").click()
    editor = page.locator("textarea[name=content]")
    editor.press("Control+End")
    editor.type("- Mine: prefers calls before noon.\n")
    store.file_save(
        file=_profile(maria),
        actor=Actor.person(maria),
        base_revision=4,
        content="# Профиль\n\n- Changed by someone else.\n",
        message="other tab",
    )
    page.get_by_role("button", name="Save").click()
    heading = page.locator("#conflict h2")
    expect(heading).to_contain_text("Changed since you opened it by maria")
    expect(page.locator("#conflict fieldset.hunk")).to_have_count(1)  # both touched the end
    expect(editor).to_have_value(re.compile("prefers calls before noon"))
    expect(editor).to_have_value(re.compile("Changed by someone else"))
    page.screenshot(path=str(SHOTS / "conflict.png"), full_page=True)
    # Saving the markers is refused; keeping both sides is one choice, then save.
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".editor .error")).to_contain_text("conflict markers")
    page.get_by_label("Keep both (theirs first)").check()
    page.get_by_role("button", name="Apply these choices to the editor").click()
    expect(editor).not_to_have_value(re.compile("<<<<<<<"))
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Saved revision 6.")).to_be_visible()
    final = s3.get(_profile(maria).key).decode()
    assert "prefers calls before noon" in final and "Changed by someone else" in final
    assert "<<<<<<<" not in final

    # An over-size paste disables Save and says why; the text stays.
    page.get_by_role("navigation", name="File").get_by_role("link", name="Edit").click()
    editor.fill("x" * (settings.MGC_MAX_FILE_BYTES + 10))
    expect(page.locator("#too-big")).to_contain_text("Too large to save")
    expect(page.get_by_role("button", name="Save")).to_be_disabled()
    editor.fill("# Short again\n")
    expect(page.get_by_role("button", name="Save")).to_be_enabled()


def _profile(user):
    return MemoryFile.objects.select_related("head", "project").get(user=user, scope="user")


def test_keep_yours_in_chromium_keeps_the_other_sides_change_elsewhere(page, live_server, maria, project):
    # Chromium sends the hidden copy of the person's text with CRLF line ends; merged against
    # LF texts, every line of it once differed, and "Keep yours" swallowed their other change.
    file = _profile(maria)
    base = reading.revision_read(file.head)
    lines = base.splitlines(keepends=True)
    _login(page, live_server)
    page.goto(f"{live_server.url}/p/{project.slug}/f/{file.pk}/edit/")
    editor = page.locator("textarea[name=content]")
    mine = "".join(["# Mine\n", *lines[1:]])
    editor.fill(mine)
    theirs = "".join(["# Theirs\n", *lines[1:-1], "- Changed at the end by someone else.\n"])
    store.file_save(file=file, actor=Actor.system("other tab"), base_revision=2, content=theirs)
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#conflict fieldset.hunk")).to_have_count(1)  # the heading only
    page.get_by_label("Keep yours").check()
    page.get_by_role("button", name="Apply these choices to the editor").click()
    expect(editor).to_have_value(re.compile("Changed at the end by someone else"))
    expect(editor).to_have_value(re.compile("^# Mine"))
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Saved revision 4.")).to_be_visible()
    assert reading.file_read(_profile(maria)).text == "".join(
        ["# Mine\n", *lines[1:-1], "- Changed at the end by someone else.\n"]
    )


DRAFTS = "Object.keys(localStorage).filter(k => k.startsWith('mgc-draft:'))"


def test_typed_text_survives_an_ended_session_and_a_failed_save(page, live_server, maria, project, s3):
    """The session ends (logged out in another tab) while the editor holds typed text; Save
    lands on the login page, which says why; after logging in the editor offers the text
    back. Then storage fails on a save; the text comes back the same way once it is up."""
    page.on("dialog", lambda dialog: dialog.accept())  # leaving with unsaved text asks first
    _login(page, live_server)
    file = _profile(maria)
    edit_url = f"{live_server.url}/p/{project.slug}/f/{file.pk}/edit/"
    page.goto(edit_url)
    editor = page.locator("textarea[name=content]")
    editor.press("Control+End")
    editor.type("- Kept across a lost session.\n")
    other = page.context.new_page()  # another tab of the same browser logs out
    other.goto(f"{live_server.url}/")
    other.get_by_role("button", name="Log out").click()
    other.close()
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#session-ended")).to_be_visible()
    assert "ended=1" in page.url
    page.get_by_label("Username").fill("maria.ivanova")
    page.get_by_label("Password").fill("correct horse 42")
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(edit_url)  # back on the editor, not on the URL the form posted to
    expect(editor).not_to_have_value(re.compile("lost session"))  # the stored text, and...
    offer = page.locator(".draft-offer")
    expect(offer).to_contain_text("was not saved")
    offer.get_by_role("button", name="Put it back").click()  # ...the typed text, offered back
    expect(editor).to_have_value(re.compile("Kept across a lost session"))
    expect(page.locator("#preview")).to_contain_text("Kept across a lost session")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Saved revision 3.")).to_be_visible()
    assert "Kept across a lost session" in s3.get(file.key).decode()
    assert page.evaluate(DRAFTS) == []  # taken by the server: forgotten here

    # Storage refuses the save: the page keeps the text and says so; later, the editor offers it.
    page.goto(edit_url)
    editor.press("Control+End")
    editor.type("- Kept across a storage outage.\n")
    s3.proxy.inject("PUT", r"\.md", "status", status=503, times=20)
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#save-error")).to_be_visible()
    expect(editor).to_have_value(re.compile("storage outage"))
    s3.proxy.heal()
    page.goto(f"{live_server.url}/p/{project.slug}/f/{file.pk}/")
    page.goto(edit_url)
    page.locator(".draft-offer").get_by_role("button", name="Put it back").click()
    expect(editor).to_have_value(re.compile("Kept across a storage outage"))
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Saved revision 4.")).to_be_visible()
    assert "Kept across a storage outage" in s3.get(file.key).decode()
    assert page.evaluate(DRAFTS) == []


def test_typed_text_survives_a_save_conflict_left_unresolved(page, live_server, maria, project, s3):
    """The file changes under the open editor; Save shows the merge and keeps the typed text
    in the browser. The person leaves without saving: back in the editor it is offered again,
    with a word that the file moved on, and saving it merges again instead of overwriting."""
    page.on("dialog", lambda dialog: dialog.accept())  # leaving with unsaved text asks first
    _login(page, live_server)
    file = _profile(maria)
    edit_url = f"{live_server.url}/p/{project.slug}/f/{file.pk}/edit/"
    page.goto(edit_url)
    editor = page.locator("textarea[name=content]")
    editor.press("Control+End")
    editor.type("- Kept across a conflict.\n")
    theirs = reading.revision_read(file.head).replace("incident manager", "head of incidents")
    store.file_save(file=file, actor=Actor.system("other tab"), base_revision=2, content=theirs)
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#conflict")).to_be_visible()
    expect(editor).to_have_value(re.compile(r"head of incidents[\s\S]*Kept across a conflict"))
    expect(page.locator(".draft-offer")).to_have_count(0)  # the merge shows it; not offered twice
    [kept] = page.evaluate(f"{DRAFTS}.map(k => JSON.parse(localStorage.getItem(k)).values)")
    assert "Kept across a conflict" in kept["content"] and kept["base_revision"] == "2"

    page.goto(f"{live_server.url}/p/{project.slug}/f/{file.pk}/")  # away, nothing saved
    page.goto(edit_url)
    expect(editor).not_to_have_value(re.compile("Kept across a conflict"))
    offer = page.locator(".draft-offer")
    expect(offer).to_contain_text("was not saved")
    expect(offer).to_contain_text("The page has changed since")
    offer.get_by_role("button", name="Put it back").click()
    expect(editor).to_have_value(re.compile("Kept across a conflict"))
    assert page.locator("input[name=base_revision]").input_value() == "2"  # the text's own base
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#conflict")).to_be_visible()  # merged again, never overwritten
    expect(editor).to_have_value(re.compile(r"head of incidents[\s\S]*Kept across a conflict"))
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Saved revision 4.")).to_be_visible()
    final = s3.get(file.key).decode()
    assert "head of incidents" in final and "Kept across a conflict" in final
    assert page.evaluate(DRAFTS) == []


TABLE = "| Service | Owner |\n|---|---|\n| billing | Мария |\n| search | Олег |\n"
STYLE = """el => { const s = getComputedStyle(el);
  return {border: s.borderTopStyle + ' ' + s.borderTopWidth, background: s.backgroundColor,
          padding: s.paddingLeft, display: s.display, overflow: s.overflowX,
          collapse: s.borderCollapse}; }"""


def test_markdown_tables_are_drawn_with_borders_on_the_page_and_in_the_preview(
    page, live_server, maria, project
):
    page.on("dialog", lambda dialog: dialog.accept())  # leaving the editor with typed text
    file = _profile(maria)
    store.file_save(
        file=file,
        actor=Actor.person(maria),
        base_revision=2,
        content=reading.revision_read(file.head) + "\n" + TABLE,
    )
    _login(page, live_server)
    page.goto(f"{live_server.url}/p/{project.slug}/f/{file.pk}/")
    for where in ("article.markdown", "#preview"):
        if where == "#preview":  # the live preview of what is typed, drawn the same way
            page.goto(f"{live_server.url}/p/{project.slug}/f/{file.pk}/edit/")
            editor = page.locator("textarea[name=content]")
            editor.press("Control+End")
            editor.type("| cache | Ира |\n")
            expect(page.locator("#preview td").last).to_have_text("Ира")
        table = page.locator(f"{where} table")
        expect(table.locator("th")).to_have_count(2)
        style = table.evaluate(STYLE)
        assert (style["collapse"], style["display"], style["overflow"]) == ("collapse", "block", "auto"), (
            where
        )  # a wide table scrolls in its own box
        th = table.locator("th").first.evaluate(STYLE)
        td = table.locator("td").first.evaluate(STYLE)
        assert th["border"] == td["border"] == "solid 1px", where
        assert th["background"] == "rgb(240, 242, 245)", where
        assert float(td["padding"].removesuffix("px")) > 0, where
    # On a phone a wide table scrolls inside its box; the page does not.
    wide = (
        reading.revision_read(_profile(maria).head)
        + "\n| "
        + " | ".join(f"column {n}" for n in range(12))
        + " |\n|"
        + "---|" * 12
        + "\n"
    )
    store.file_save(file=_profile(maria), actor=Actor.person(maria), base_revision=3, content=wide)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_server.url}/p/{project.slug}/f/{file.pk}/")
    box = page.locator("article.markdown table").last
    expect(box).to_contain_text("column 11")
    assert box.evaluate("el => el.scrollWidth > el.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
