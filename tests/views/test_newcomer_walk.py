"""What a newcomer walking the demo in Chromium tripped on: links to pages their role may not
open, a form posting to the wrong view, a language switch landing on a POST-only URL, the
debug 404 page, irreversible buttons without a second thought."""

import re

import pytest
from django.urls import reverse

from projects.audit import Actor
from projects.memory import store
from projects.models import AgentSession, Project

pytestmark = pytest.mark.django_db


def test_an_employee_sees_workspace_sources_in_simulate_as_text_not_as_links(
    client, s3, project, agent, person, admin
):
    store.file_create(
        project=project,
        scope="workspace",
        path="decisions/a.md",
        content="# Decision\n",
        actor=Actor.person(admin),
    )
    store.file_create(
        project=project,
        scope="agent",
        agent=agent,
        path="SOUL.md",
        content="# Soul\n",
        actor=Actor.person(admin),
    )
    url = reverse("projects:simulate", args=[project.slug]) + f"?agent={agent.slug}"
    client.force_login(person)
    page = client.get(url).content.decode()
    assert "workspace/decisions/a.md" in page
    links = re.findall(r'href="(/p/[^"]+/r/\d+/)"', page)
    assert links, "the agent's own files stay linked"
    for link in links:  # every link on the page opens for her
        assert client.get(link).status_code == 200, link
    client.force_login(admin)
    admin_links = re.findall(r'href="(/p/[^"]+/r/\d+/)"', client.get(url).content.decode())
    # The workspace file is linked for an admin (each revision may be linked twice: the
    # sources table and the prompt's origins).
    workspace = {link for link in admin_links if link not in links}
    assert len(workspace) == 1 and set(admin_links) == set(links) | workspace


def test_every_link_on_an_employees_own_session_page_opens(client, s3, project, agent, person, admin, token):
    import json

    store.file_create(
        project=project,
        scope="workspace",
        path="decisions/a.md",
        content="# Decision\n",
        actor=Actor.person(admin),
    )
    store.file_create(
        project=project,
        scope="agent",
        agent=agent,
        path="SOUL.md",
        content="# Soul\n",
        actor=Actor.person(admin),
    )
    session = client.post(
        "/api/v1/hooks/pre",
        json.dumps({"user": person.username}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    ).json()["session"]
    client.force_login(person)
    page = client.get(reverse("projects:session_detail", args=[project.slug, session]))
    body = page.content.decode()
    assert "workspace/decisions/a.md" in body
    links = set(re.findall(r'href="(/p/[^"?#]+)"', body))
    assert any("/r/" in link for link in links)  # her agent's files stay linked
    for link in links:
        assert client.get(link).status_code in (200, 302), link


def test_the_agent_page_links_a_truncated_session_only_for_who_may_open_it(
    client, s3, project, agent, person, admin, make_user
):
    other = make_user("ivan")
    session = AgentSession.objects.create(agent=agent, user=other, truncated=True, receipt=[])
    url = reverse("projects:agent_detail", args=[project.slug, agent.slug])
    target = reverse("projects:session_detail", args=[project.slug, session.pk])
    client.force_login(person)
    assert target not in client.get(url).content.decode()
    client.force_login(admin)
    assert target in client.get(url).content.decode()
    AgentSession.objects.create(agent=agent, user=person, truncated=True, receipt=[])
    client.force_login(person)
    own = client.get(url).content.decode()
    found = re.search(r'href="(/p/[^"]+/sessions/[^"]+/)"', own)
    assert found and client.get(found[1]).status_code == 200


def test_the_language_switch_returns_to_the_form_page_after_a_post_only_answer(client, project, admin):
    client.force_login(admin)
    members = reverse("projects:members", args=[project.slug])
    answer = client.post(
        reverse("projects:member_invite", args=[project.slug]),
        {"account-username": "bad name!", "account-role": "employee"},
        HTTP_REFERER=f"http://testserver{members}",
    )
    switch_to = re.search(r'name="next" value="([^"]*)"', answer.content.decode())[1]
    assert switch_to == members
    assert client.get(switch_to).status_code == 200
    # Without a usable Referer (another host, or none) it goes home rather than to a 405.
    elsewhere = client.post(
        reverse("projects:member_invite", args=[project.slug]),
        {"account-username": "bad name!", "account-role": "employee"},
        HTTP_REFERER="https://evil.example/p/",
    )
    assert re.search(r'name="next" value="([^"]*)"', elsewhere.content.decode())[1] == "/"


def test_in_debug_mode_a_hidden_page_is_the_consoles_404_like_a_missing_one(
    client, settings, project, person
):
    settings.DEBUG = True
    client.force_login(person)
    hidden = client.get(reverse("projects:members", args=[project.slug]))  # admins' page
    missing = client.get("/no/such/page/")
    for response in (hidden, missing):
        body = response.content.decode()
        assert response.status_code == 404
        assert "URLconf" not in body and "Raised by" not in body
    # The same page but for the language switch's way back to the address asked for.
    same = [
        re.sub(r'name="(next|csrfmiddlewaretoken)" value="[^"]*"', "", r.content.decode())
        for r in (hidden, missing)
    ]
    assert same[0] == same[1]


def test_irreversible_buttons_ask_first(client, s3, project, agent, admin, make_user):
    from projects.runners import bearer

    bearer.token_create(agent=agent, name="runner", created_by=admin)
    client.force_login(admin)
    settings_page = client.get(
        reverse("projects:agent_settings", args=[project.slug, agent.slug])
    ).content.decode()
    assert re.search(r'action="[^"]+/revoke/"[^>]*data-confirm="Revoke this token\?', settings_page)
    members = client.get(reverse("projects:members", args=[project.slug])).content.decode()
    assert 'data-confirm="Remove olga from this project?"' in members


def test_a_failed_login_keeps_the_username_and_focuses_the_password(client, person):
    page = client.post("/accounts/login/", {"username": "maria", "password": "wrong"})
    body = page.content.decode()
    assert re.search(r'id="id_username"[^>]*value="maria"', body)
    assert re.search(r'id="id_password"[^>]*autofocus', body)


def test_an_admin_who_removes_themselves_lands_on_the_dashboard(client, project, admin, make_user):
    from projects.models import Membership

    other = make_user("olga2")
    Membership.objects.create(user=other, project=project, role="admin")  # not the last admin
    client.force_login(admin)
    mine = Membership.objects.get(user=admin, project=project)
    response = client.post(reverse("projects:member_change", args=[project.slug, mine.pk]), {"remove": "1"})
    assert response.url == reverse("projects:dashboard")
    assert client.get(response.url).status_code == 200


@pytest.mark.parametrize("bucket", ["a..b", "192.168.0.1", "xn--abc", "mine-s3alias", "a.-b"])
def test_bucket_names_s3_refuses_are_refused_here(client, make_user, bucket):
    root = make_user("root", is_superuser=True)
    client.force_login(root)
    page = client.post(reverse("projects:project_new"), {"slug": "p", "name": "P", "bucket": bucket})
    assert page.status_code == 400
    assert "A bucket name is 3-63 lowercase letters" in page.content.decode()
    assert not Project.objects.filter(slug="p").exists()


def test_slugs_that_differ_only_in_case_are_one_slug(client, project, agent, admin):
    client.force_login(admin)
    page = client.post(
        reverse("projects:agent_new", args=[project.slug]), {"slug": "Analyst", "name": "Another analyst"}
    )
    assert page.status_code == 400
    assert "already has an agent called Analyst" in page.content.decode()
