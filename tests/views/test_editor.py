"""The editor, history, revisions, diff, restore and delete pages, with bad input."""

import pytest
from django.urls import reverse

from projects.audit import Actor
from projects.memory import reading, records, store
from projects.models import Agent, Membership, MemoryFile, Revision

pytestmark = pytest.mark.django_db


@pytest.fixture
def profile_two_revisions(s3, project, person):
    """Maria's USER.md with two revisions."""
    revision = store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="# Maria\n\nPrefers short reports.\n",
        actor=Actor.person(person),
    )
    file = MemoryFile.objects.select_related("head", "project").get(pk=revision.file_id)
    store.file_save(
        file=file,
        content="# Maria\n\nPrefers long reports.\n",
        actor=Actor.person(person),
        base_revision=1,
        message="longer",
    )
    return MemoryFile.objects.select_related("head", "project").get(pk=file.pk)


def url(name, file, *args):
    return reverse(f"projects:{name}", args=[file.project.slug, file.pk, *args])


def test_editor_shows_text_revision_and_size(client, person, profile_two_revisions):
    client.force_login(person)
    response = client.get(url("file_edit", profile_two_revisions))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Prefers long reports." in html
    assert 'id="base-revision">2<' in html
    assert 'name="base_revision" value="2"' in html
    assert "js/editor.js" in html and "<script>" not in html
    # The preview is rendered HTML, never escaped HTML shown as text, also after a refusal.
    assert "<h1>Maria</h1>" in html and "&lt;h1&gt;" not in html
    refused = client.post(
        url("file_edit", profile_two_revisions), {"content": "# Big\n" + "x" * 10, "base_revision": "bad"}
    )
    assert "<h1>Big</h1>" in refused.content.decode()


def test_save_creates_a_revision_and_redirects(client, person, profile_two_revisions, s3):
    client.force_login(person)
    response = client.post(
        url("file_edit", profile_two_revisions),
        {"content": "# Maria\r\n\r\nPrefers tables.\r\n", "message": "tables", "base_revision": 2},
    )
    assert response.status_code == 302 and response.url == url("file_detail", profile_two_revisions)
    head = MemoryFile.objects.get(pk=profile_two_revisions.pk).head
    assert (head.number, head.message, head.author_user) == (3, "tables", person)
    assert s3.get(profile_two_revisions.key) == b"# Maria\n\nPrefers tables.\n"  # CRLF from the browser -> LF


def test_stale_base_merges_overlaps_are_chosen_and_nothing_is_dropped(client, person, profile_two_revisions):
    client.force_login(person)
    edit = url("file_edit", profile_two_revisions)
    response = client.post(edit, {"content": "# Maria\n\nMy edit from revision 1.\n", "base_revision": 1})
    assert response.status_code == 409
    html = response.content.decode()
    assert "Changed since you opened it by" in html and "<strong>maria</strong>" in html
    assert response.context["merge"].unresolved == 1
    editor_text = response.context["form"].initial["content"]
    assert "Prefers long reports." in editor_text and "My edit from revision 1." in editor_text
    assert 'name="base_revision" value="2"' in html  # saving again goes on top of the head
    assert MemoryFile.objects.get(pk=profile_two_revisions.pk).head.number == 2
    # Saving with the markers still in is refused, the text kept.
    marked = client.post(edit, {"content": editor_text, "base_revision": 2, "merging": "True"})
    assert marked.status_code == 400 and "conflict markers" in marked.content.decode()
    # Choosing "yours" for the overlap puts exactly my line in the editor; nothing saved yet.
    chosen = client.post(
        edit,
        {
            "action": "resolve",
            "merge_base": 1,
            "merge_head": 2,
            "your_text": "# Maria\n\nMy edit from revision 1.\n",
            "hunk-0": "yours",
        },
    )
    assert chosen.status_code == 200
    assert chosen.context["form"].initial["content"] == "# Maria\n\nMy edit from revision 1.\n"
    assert MemoryFile.objects.get(pk=profile_two_revisions.pk).head.number == 2
    saved = client.post(
        edit, {"content": chosen.context["form"].initial["content"], "base_revision": 2, "merging": "True"}
    )
    assert saved.status_code == 302


def test_changes_that_do_not_overlap_are_merged_for_the_person_to_check(
    client, person, profile_two_revisions, agent
):
    file = profile_two_revisions
    store.file_save(
        file=file,
        content="# Maria\n\nPrefers long reports.\nLearned: on call.\n",
        actor=Actor.for_agent(agent, "run-1"),
        base_revision=2,
    )
    client.force_login(person)
    response = client.post(
        url("file_edit", file), {"content": "# Maria K.\n\nPrefers long reports.\n", "base_revision": 2}
    )
    assert response.status_code == 409
    assert response.context["merge"].clean
    assert [kind for _label, kind in response.context["merge_changers"]] == ["Agent"]
    merged = response.context["form"].initial["content"]
    assert merged == "# Maria K.\n\nPrefers long reports.\nLearned: on call.\n"
    assert (
        client.post(
            url("file_edit", file), {"content": merged, "base_revision": 3, "merging": "True"}
        ).status_code
        == 302
    )
    assert (
        reading.file_read(MemoryFile.objects.select_related("head", "project").get(pk=file.pk)).text == merged
    )


def test_saving_unchanged_text_makes_no_revision_and_says_so(client, person, profile_two_revisions):
    client.force_login(person)
    response = client.post(
        url("file_edit", profile_two_revisions),
        {"content": "# Maria\r\n\r\nPrefers long reports.\r\n", "base_revision": 2},
        follow=True,
    )
    assert "no revision was made" in response.content.decode()
    assert MemoryFile.objects.get(pk=profile_two_revisions.pk).head.number == 2


def test_direct_bucket_write_is_a_conflict_in_the_editor(client, person, profile_two_revisions, s3):
    s3.put(profile_two_revisions.key, b"# Maria\n\nWritten by a sandbox.\n")
    client.force_login(person)
    response = client.post(url("file_edit", profile_two_revisions), {"content": "mine\n", "base_revision": 2})
    assert response.status_code == 409
    assert "Written by a sandbox." in response.content.decode()
    assert MemoryFile.objects.get(pk=profile_two_revisions.pk).head.author_kind == "external"


def test_oversize_text_is_refused_and_kept(client, person, profile_two_revisions, settings):
    settings.MGC_MAX_FILE_BYTES = 100
    client.force_login(person)
    response = client.post(url("file_edit", profile_two_revisions), {"content": "ж" * 60, "base_revision": 2})
    assert response.status_code == 400
    html = response.content.decode()
    assert "the limit is 100 bytes" in html and "ж" * 60 in html
    assert MemoryFile.objects.get(pk=profile_two_revisions.pk).head.number == 2


def test_binary_text_is_refused(client, person, profile_two_revisions):
    client.force_login(person)
    response = client.post(url("file_edit", profile_two_revisions), {"content": "a\x00b", "base_revision": 2})
    assert response.status_code == 400
    assert "Null characters are not allowed" in response.content.decode()


def test_storage_down_on_save_says_so_and_keeps_text(client, person, profile_two_revisions, s3):
    client.force_login(person)
    s3.proxy.down = True
    response = client.post(
        url("file_edit", profile_two_revisions), {"content": "keep me\n", "base_revision": 2}
    )
    assert response.status_code == 503
    html = response.content.decode()
    assert "did not answer" in html and "keep me" in html
    s3.proxy.down = False
    assert MemoryFile.objects.get(pk=profile_two_revisions.pk).head.number == 2


def test_compliance_and_colleagues_cannot_edit(client, make_user, project, profile_two_revisions):
    auditor = make_user("auditor")
    Membership.objects.create(user=auditor, project=project, role="compliance")
    colleague = make_user("boris")
    Membership.objects.create(user=colleague, project=project, role="employee")
    client.force_login(auditor)
    assert client.get(url("file_detail", profile_two_revisions)).status_code == 200
    assert client.get(url("file_edit", profile_two_revisions)).status_code == 404
    assert (
        client.post(url("file_edit", profile_two_revisions), {"content": "x", "base_revision": 2}).status_code
        == 404
    )
    client.force_login(colleague)
    assert client.get(url("file_detail", profile_two_revisions)).status_code == 404


def test_unknown_file_and_revision_are_404(client, person, profile_two_revisions):
    client.force_login(person)
    missing = reverse(
        "projects:file_detail",
        args=[profile_two_revisions.project.slug, "00000000-0000-0000-0000-000000000000"],
    )
    assert client.get(missing).status_code == 404
    assert client.get(url("revision_detail", profile_two_revisions, 99)).status_code == 404
    assert client.get(url("file_diff", profile_two_revisions) + "?a=1&b=99").status_code == 404
    assert client.get(url("file_diff", profile_two_revisions) + "?a=x").status_code == 404


def test_history_lists_revisions_with_authors(client, person, profile_two_revisions):
    client.force_login(person)
    html = client.get(url("file_history", profile_two_revisions)).content.decode()
    assert "longer" in html and "maria" in html and 'name="a" value="1"' in html


def test_revision_view_rendered_raw_and_download(client, person, profile_two_revisions):
    client.force_login(person)
    rendered = client.get(url("revision_detail", profile_two_revisions, 1)).content.decode()
    assert "<h1>Maria</h1>" in rendered
    raw = client.get(url("revision_detail", profile_two_revisions, 1) + "?view=raw").content.decode()
    assert "# Maria" in raw
    download = client.get(url("revision_raw", profile_two_revisions, 1))
    assert download["Content-Type"] == "text/markdown; charset=utf-8"
    assert "attachment" in download["Content-Disposition"]
    assert download.content == b"# Maria\n\nPrefers short reports.\n"


def test_diff_side_by_side_and_unified_highlight_words(client, person, profile_two_revisions):
    client.force_login(person)
    split = client.get(url("file_diff", profile_two_revisions) + "?a=1&b=2").content.decode()
    assert '<del class="deletion">short</del>' in split
    assert '<ins class="addition">long</ins>' in split
    unified = client.get(url("file_diff", profile_two_revisions) + "?a=1&b=2&mode=unified").content.decode()
    assert 'class="diff unified"' in unified and '<ins class="addition">long</ins>' in unified


def test_diff_page_takes_revision_numbers_without_listing_the_history(client, person, profile_two_revisions):
    # A list of every revision number made the page grow with the history (bench/run.py).
    client.force_login(person)
    html = client.get(url("file_diff", profile_two_revisions) + "?a=1&b=2").content.decode()
    assert 'type="number" name="a" id="diff-a" min="1" max="2" value="1"' in html
    assert 'type="number" name="b" id="diff-b" min="1" max="2" value="2"' in html
    assert '<option value="1"' not in html


def test_restore_writes_new_revision(client, person, profile_two_revisions, s3):
    client.force_login(person)
    response = client.post(
        url("file_restore", profile_two_revisions, 1), {"message": "back to short", "base_revision": 2}
    )
    assert response.status_code == 302
    head = MemoryFile.objects.get(pk=profile_two_revisions.pk).head
    assert (head.number, head.restored_from, head.message) == (3, 1, "back to short")
    assert s3.get(profile_two_revisions.key) == b"# Maria\n\nPrefers short reports.\n"


def test_restore_on_stale_base_changes_nothing(client, person, profile_two_revisions):
    client.force_login(person)
    response = client.post(url("file_restore", profile_two_revisions, 1), {"base_revision": 1}, follow=True)
    assert "Nothing was restored" in response.content.decode()
    assert Revision.objects.filter(file=profile_two_revisions).count() == 2


def test_restore_and_save_require_post_and_csrf(person, profile_two_revisions):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(person)
    assert strict.post(url("file_restore", profile_two_revisions, 1), {"base_revision": 2}).status_code == 403
    assert (
        strict.post(url("file_edit", profile_two_revisions), {"content": "x", "base_revision": 2}).status_code
        == 403
    )
    assert strict.get(url("file_restore", profile_two_revisions, 1)).status_code == 405


def test_admin_creates_workspace_file_and_deletes_it(client, admin, project, s3):
    client.force_login(admin)
    bad = client.post(reverse("projects:workspace_new", args=[project.slug]), {"path": "../x.md"})
    assert bad.status_code == 400 and "&#x27;..&#x27;" in bad.content.decode()
    response = client.post(
        reverse("projects:workspace_new", args=[project.slug]), {"path": "events/2026-12-02.md"}
    )
    assert response.url == (
        reverse("projects:file_new", args=[project.slug]) + "?path=events%2F2026-12-02.md"
    )
    client.post(response.url, {"content": "# Event\n", "message": "new"})
    file = MemoryFile.objects.get(project=project, path="events/2026-12-02.md")
    tree = client.get(reverse("projects:workspace", args=[project.slug])).content.decode()
    assert "events/" in tree
    inside = client.get(reverse("projects:workspace", args=[project.slug]) + "?dir=events")
    assert "2026-12-02.md" in inside.content.decode()
    client.post(url("file_delete", file), {"base_revision": 1, "message": "dup"})
    file.refresh_from_db()
    assert file.head.is_deletion and file.key not in s3.keys()
    assert "This file is deleted" in client.get(url("file_detail", file)).content.decode()


def _workspace_file(project, admin, path):
    return store.file_create(
        project=project, scope="workspace", path=path, content="x\n", actor=Actor.person(admin)
    ).file


def test_a_refused_path_keeps_the_folder_the_error_and_the_typed_path(client, admin, project, s3):
    _workspace_file(project, admin, "events/kept.md")
    _workspace_file(project, admin, "events/2026/deep.md")
    client.force_login(admin)
    response = client.post(
        reverse("projects:workspace_new", args=[project.slug]),
        {"path": "events/../secret.md", "dir": "events"},
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "kept.md" in html and "2026/" in html  # the folder's files and subfolders
    assert "Workspace: events/" in html
    assert "&#x27;..&#x27;" in html  # the error
    assert 'value="events/../secret.md"' in html  # what the person typed
    assert 'name="dir" value="events"' in html  # and the next try stays in the folder


def test_an_editor_left_without_saving_leaves_no_file(client, admin, project, s3):
    client.force_login(admin)
    response = client.post(
        reverse("projects:workspace_new", args=[project.slug]), {"path": "drafts/idea.md"}, follow=True
    )
    html = response.content.decode()
    assert response.status_code == 200 and 'id="editor-form"' in html
    assert "New file: no revision yet" in html
    assert reverse("projects:workspace", args=[project.slug]) in html  # Cancel goes back
    # Opened, then left: no record, nothing in the tree, nothing counted.
    assert not MemoryFile.objects.filter(project=project, scope="workspace").exists()
    tree = client.get(reverse("projects:workspace", args=[project.slug])).content.decode()
    assert "drafts/" not in tree and "No files here yet." in tree
    # A record left without a revision by an older console, or by a first save cut short,
    # is not shown as an empty file either.
    records.file_ensure(project=project, scope="workspace", path="drafts/orphan.md")
    tree = client.get(reverse("projects:workspace", args=[project.slug])).content.decode()
    assert "drafts/" not in tree
    project_page = client.get(reverse("projects:project_detail", args=[project.slug]))
    assert project_page.context["workspace_count"] == 0


def test_the_first_save_creates_the_new_file(client, admin, project, s3):
    client.force_login(admin)
    editor = reverse("projects:file_new", args=[project.slug]) + "?path=drafts/idea.md"
    empty = client.post(editor, {"content": "x" * 10, "message": "", "base_revision": "oops"})
    assert empty.status_code == 400  # a refused form makes no record either
    assert not MemoryFile.objects.filter(project=project, scope="workspace").exists()
    response = client.post(editor, {"content": "# Idea\n", "message": "first"})
    file = MemoryFile.objects.get(project=project, path="drafts/idea.md")
    assert response.url == url("file_detail", file)
    assert (file.head.number, reading.file_read(file).text) == (1, "# Idea\n")
    # The editor of a path that exists now is the file's own.
    assert client.get(editor).url == url("file_edit", file)


def test_a_new_file_someone_else_created_meanwhile_is_a_conflict_not_an_overwrite(client, admin, project, s3):
    client.force_login(admin)
    editor = reverse("projects:file_new", args=[project.slug]) + "?path=drafts/idea.md"
    assert client.get(editor).status_code == 200
    _workspace_file(project, admin, "drafts/idea.md")  # another tab saved it first
    response = client.post(editor, {"content": "mine\n", "message": ""})
    assert response.status_code == 409 and "mine" in response.content.decode()
    file = MemoryFile.objects.get(project=project, path="drafts/idea.md")
    assert reading.file_read(file).text == "x\n"


def test_a_bad_path_in_the_new_file_editor_goes_back_to_the_workspace(client, admin, project):
    client.force_login(admin)
    response = client.get(reverse("projects:file_new", args=[project.slug]) + "?path=../x.md", follow=True)
    assert response.redirect_chain[-1][0] == reverse("projects:workspace", args=[project.slug])
    assert "&#x27;..&#x27;" in response.content.decode()


def test_employee_cannot_see_workspace_or_delete(client, person, project, profile_two_revisions):
    client.force_login(person)
    assert client.get(reverse("projects:workspace", args=[project.slug])).status_code == 404
    assert client.post(url("file_delete", profile_two_revisions), {"base_revision": 2}).status_code == 404


def test_admin_opens_missing_agent_file_for_writing(client, admin, project, s3):
    agent = Agent.objects.create(project=project, slug="bot", name="Bot")
    client.force_login(admin)
    page = client.get(reverse("projects:agent_detail", args=[project.slug, "bot"]))
    assert "Write it" in page.content.decode()
    response = client.post(
        reverse("projects:file_open", args=[project.slug]),
        {"scope": "agent", "agent": str(agent.pk), "path": "SOUL.md"},
    )
    file = MemoryFile.objects.get(agent=agent, path="SOUL.md")
    assert response.url == url("file_edit", file)
    bad = client.post(
        reverse("projects:file_open", args=[project.slug]),
        {"scope": "agent", "agent": str(agent.pk), "path": "EVIL.md"},
    )
    assert bad.status_code == 302 and not MemoryFile.objects.filter(path="EVIL.md").exists()


def test_preview_renders_sanitized_html(client, person):
    client.force_login(person)
    response = client.post(reverse("projects:preview"), {"content": "**bold** <img src=x onerror=alert(1)>"})
    html = response.json()["html"]
    assert "<strong>bold</strong>" in html and "onerror" not in html


def test_preview_refuses_oversize(client, person, settings):
    settings.MGC_MAX_FILE_BYTES = 10
    client.force_login(person)
    assert client.post(reverse("projects:preview"), {"content": "x" * 11}).status_code == 413


def test_history_page_query_count_is_constant(
    client, person, profile_two_revisions, django_assert_max_num_queries
):
    client.force_login(person)
    for n in range(3, 30):
        store.file_save(
            file=profile_two_revisions, content=f"v{n}\n", actor=Actor.person(person), base_revision=n - 1
        )
    with django_assert_max_num_queries(8):
        client.get(url("file_history", profile_two_revisions))
