"""A hold on one file is chosen by its path, as the pages show it, from suggestions of the
project's files (no UUID to copy); a path that names no file is refused at the field with
nothing placed; the file page links to the holds page with its path filled in."""

from html import unescape

import pytest
from django.urls import reverse

from projects.audit import Actor
from projects.memory import store
from projects.models import LegalHold, Membership

pytestmark = pytest.mark.django_db


@pytest.fixture
def files(s3, project, agent, person):
    system = Actor.system("t")
    incident = store.file_create(
        project=project, scope="workspace", path="incidents/a.md", content="# A\n", actor=system
    ).file
    soul = store.file_create(
        project=project, scope="agent", agent=agent, path="SOUL.md", content="calm\n", actor=system
    ).file
    profile = store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="# M\n",
        actor=Actor.person(person),
    ).file
    return {"incident": incident, "soul": soul, "profile": profile}


@pytest.fixture
def compliance(make_user, project):
    user = make_user("vera")
    Membership.objects.create(user=user, project=project, role="compliance")
    return user


def test_a_file_is_held_by_its_path_chosen_from_suggestions(
    client, project, agent, person, files, compliance
):
    client.force_login(compliance)
    url = reverse("projects:holds", args=[project.slug])
    page = unescape(client.get(url).content.decode())
    assert 'list="hold-files"' in page
    for path in (
        "workspace/incidents/a.md",
        f"agents/{agent.slug}/SOUL.md",
        f"users/{person.username}/USER.md",
    ):
        assert f'<option value="{path}">' in page

    response = client.post(url, {"reason": "Case 42", "file": "workspace/incidents/a.md"})
    assert response.status_code == 302
    hold = LegalHold.objects.get()
    assert (hold.kind, hold.file) == ("file", files["incident"])
    response = client.post(url, {"reason": "Case 43", "file": f"users/{person.username}/USER.md"})
    assert LegalHold.objects.get(reason="Case 43").file == files["profile"]

    typo = client.post(url, {"reason": "Case 44", "file": "workspace/incidents/b.md"})
    assert typo.status_code == 400
    assert "No file workspace/incidents/b.md in this project" in unescape(typo.content.decode())
    assert 'value="workspace/incidents/b.md"' in typo.content.decode()  # what was typed stays
    assert not LegalHold.objects.filter(reason="Case 44").exists()


def test_the_file_page_offers_a_hold_with_its_path_filled_in(client, project, files, compliance, person):
    client.force_login(compliance)
    page = client.get(
        reverse("projects:file_detail", args=[project.slug, files["incident"].pk])
    ).content.decode()
    link = reverse("projects:holds", args=[project.slug]) + "?file=workspace/incidents/a.md"
    assert link in unescape(page)
    form = client.get(link).content.decode()
    assert 'value="workspace/incidents/a.md"' in form
    client.force_login(person)  # an employee places no holds, and is not offered one
    page = client.get(
        reverse("projects:file_detail", args=[project.slug, files["profile"].pk])
    ).content.decode()
    assert "Place a legal hold" not in page
