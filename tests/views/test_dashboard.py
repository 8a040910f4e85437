"""The first page: each role finds its work there."""

import pytest
from django.urls import reverse

from projects.audit import Actor
from projects.governance import isolation, review
from projects.memory import store
from projects.models import Proposal

pytestmark = pytest.mark.django_db


@pytest.fixture
def scene(s3, project, agent, person, admin, reviewer):
    profile = store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="Maria\n",
        actor=Actor.person(person),
    )
    store.file_save(
        file=profile.file,
        content="Maria\nPrefers UTC.\n",
        actor=Actor.for_agent(agent, "s1"),
        message="learned a preference",
        base_revision=1,
    )
    Proposal.objects.create(
        project=project, file=profile.file, agent=agent, mode="append", content="Likes tea."
    )
    review.flag_create(by=reviewer, file=profile.file, number=2, comment="check this")
    isolation.check_and_record([project], ran_by="test")
    return {"reviewer": reviewer, "profile": profile}


def test_login_lands_on_the_dashboard(client, person):
    response = client.post(reverse("login"), {"username": "maria", "password": "pw-maria"})
    assert response.url == reverse("projects:dashboard")


def test_admin_sees_projects_agents_proposals_and_isolation(client, scene, admin, project):
    client.force_login(admin)
    response = client.get(reverse("projects:dashboard"))
    [row] = response.context["admin_rows"]
    assert (row["agents"], row["members"], row["pending"]) == (1, 3, 1)
    assert row["check"].finding_count == 0
    html = response.content.decode()
    assert 'id="panel-admin"' in html and "clean" in html


def test_compliance_sees_queue_flags_and_agent_writes(client, scene):
    client.force_login(scene["reviewer"])
    response = client.get(reverse("projects:dashboard"))
    assert response.context["review_rows"][0][1] == 1
    assert [f.comment for f in response.context["recent_flags"]] == ["check this"]
    assert [r.message for r in response.context["agent_writes"]] == ["learned a preference"]
    assert "admin_rows" not in response.context


def test_employee_sees_their_profile_and_what_agents_recorded(client, scene, person):
    client.force_login(person)
    response = client.get(reverse("projects:dashboard"))
    [row] = response.context["profile_rows"]
    assert row["file"].head.number == 2 and row["pending"] == 1
    assert [r.number for r in response.context["about_me"]] == [2]
    assert "review_rows" not in response.context and "admin_rows" not in response.context
    assert b"What agents are told about you" in response.content


def test_dashboard_for_someone_with_no_project(client, make_user):
    client.force_login(make_user())
    assert b"not a member of any project" in client.get(reverse("projects:dashboard")).content


def test_isolation_check_from_the_page_is_recorded(client, s3, project, admin):
    client.force_login(admin)
    s3.put(f"{project.prefix}stray.txt", b"x")
    response = client.post(reverse("projects:isolation", args=[project.slug]), follow=True)
    assert b"1 finding" in response.content and b"stray.txt" in response.content
