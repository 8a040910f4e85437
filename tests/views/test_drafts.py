"""Text survives a lost session: forms carry a draft name for the browser's copy, a save the
server took tells the next page to drop it (a refused one does not), and a form sent after the
session ended lands on the login page, which says so and leads back to the form's page."""

import html
import json
import re

import pytest
from django.urls import reverse

from projects.audit import Actor
from projects.memory import store

pytestmark = pytest.mark.django_db


@pytest.fixture
def profile(s3, project, person):
    return store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="# Maria\n",
        actor=Actor.person(person),
    ).file


def _saved(page: str) -> list[str]:
    found = re.search(r'data-drafts-saved="([^"]*)"', page)
    return json.loads(html.unescape(found.group(1))) if found else []


def test_a_saved_edit_tells_the_next_page_to_drop_the_draft_a_refused_one_does_not(
    client, person, profile, project, s3
):
    client.force_login(person)
    edit = reverse("projects:file_edit", args=[project.slug, profile.pk])
    page = client.get(edit).content.decode()
    assert f'data-draft="edit:{profile.pk}"' in page and 'data-draft-carry="base_revision"' in page
    assert f'data-user="{person.pk}"' in page and "js/drafts.js" in page
    s3.proxy.inject("PUT", r"\.md", "status", status=503, times=5)
    refused = client.post(edit, {"content": "# Maria\n\nTyped.\n", "base_revision": 1})
    assert refused.status_code == 503 and "Typed." in refused.content.decode()
    assert _saved(client.get(edit).content.decode()) == []
    s3.proxy.heal()
    assert client.post(edit, {"content": "# Maria\n\nTyped.\n", "base_revision": 1}).status_code == 302
    detail = client.get(reverse("projects:file_detail", args=[project.slug, profile.pk]))
    assert _saved(detail.content.decode()) == [f"edit:{profile.pk}"]
    assert _saved(client.get(edit).content.decode()) == []  # said once


def test_a_save_conflict_keeps_the_draft_until_the_merged_text_is_saved(client, person, profile, project):
    client.force_login(person)
    edit = reverse("projects:file_edit", args=[project.slug, profile.pk])
    for number, text in ((1, "# Maria\n\nA\n\nB\n\nC\n"), (2, "# Maria\n\nA\n\nB\n\nC, elsewhere\n")):
        store.file_save(file=profile, content=text, actor=Actor.person(person), base_revision=number)
    typed = "# Maria\n\nA, typed\n\nB\n\nC\n"  # on revision 2; revision 3 came meanwhile
    conflict = client.post(edit, {"content": typed, "base_revision": 2})
    page = conflict.content.decode()
    assert conflict.status_code == 409 and 'id="conflict"' in page
    # The editor keeps its draft's name; its text is shown merged, not offered on top.
    assert f'data-draft="edit:{profile.pk}"' in page and 'data-draft-offer="no"' in page
    assert _saved(page) == [] and _saved(client.get(edit).content.decode()) == []
    merged = conflict.context["form"]["content"].value()
    assert merged == "# Maria\n\nA, typed\n\nB\n\nC, elsewhere\n"
    saved = client.post(edit, {"content": merged, "base_revision": 3})
    assert saved.status_code == 302
    detail = client.get(saved["Location"]).content.decode()
    assert _saved(detail) == [f"edit:{profile.pk}"]


def test_a_form_sent_after_the_session_ended_leads_to_login_and_back_to_its_page(
    client, person, profile, project
):
    page = reverse("projects:revision_detail", args=[project.slug, profile.pk, 1])
    flag = reverse("projects:flag_create", args=[project.slug, profile.pk])
    response = client.post(flag, {"number": 1, "comment": "typed"}, HTTP_REFERER=f"http://testserver{page}")
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('login')}?next={page.replace('/', '%2F')}&ended=1"
    login = client.get(response["Location"]).content.decode()
    assert 'id="session-ended"' in login and "kept in this browser" in login
    # Without a Referer from this site: back to the URL posted to.
    other = client.post(flag, {"number": 1}, HTTP_REFERER="https://elsewhere.example/p/")
    assert f"next={flag.replace('/', '%2F')}" in other["Location"]
    assert 'id="session-ended"' not in client.get(reverse("login")).content.decode()


def test_every_form_a_person_types_into_keeps_a_draft(client, admin, project, agent, profile):
    client.force_login(admin)
    pages = {
        reverse("projects:agent_settings", args=[project.slug, agent.slug]): [
            f"manifest:{agent.pk}",
            f"policy:{agent.pk}",
            f"manifest_json:{agent.pk}",
            f"policy_json:{agent.pk}",
        ],
        reverse("projects:project_settings", args=[project.slug]): [f"project:{project.pk}"],
        reverse("projects:agent_new", args=[project.slug]): [f"agent-new:{project.pk}"],
        reverse("projects:members", args=[project.slug]): [
            f"member-add:{project.pk}",
            f"account:{project.pk}",
        ],
        reverse("projects:revision_detail", args=[project.slug, profile.pk, 1]): [f"flag:{profile.pk}:1"],
        reverse("projects:file_detail", args=[project.slug, profile.pk]): [],
    }
    for url, names in pages.items():
        found = re.findall(r'data-draft="([^"]+)"', client.get(url).content.decode())
        assert set(names) <= set(found), (url, found)


def test_the_language_switch_on_the_login_page_is_not_a_lost_session(client):
    response = client.post(reverse("set_language"), {"language": "ru", "next": reverse("login")})
    assert response["Location"] == reverse("login")
