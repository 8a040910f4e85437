"""The pages of the foundation: login, project list, project page, file page."""

import pytest
from django.urls import reverse

from projects.audit import Actor
from projects.memory import store
from projects.models import Membership

pytestmark = pytest.mark.django_db


def test_login_page_is_served_with_a_strict_csp(client):
    response = client.get(reverse("login"))
    assert response.status_code == 200
    assert b'name="username"' in response.content
    csp = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert response.headers["X-Frame-Options"] == "DENY"


def test_anonymous_visitors_are_sent_to_login(client):
    response = client.get(reverse("projects:project_list"))
    assert response.status_code == 302 and response.url.startswith(reverse("login"))


def test_project_list_shows_only_member_projects(
    client, project, person, make_project, django_assert_num_queries
):
    other = make_project(name="Secret tenders")
    client.force_login(person)
    response = client.get(reverse("projects:project_list"))
    assert project.name.encode() in response.content
    assert other.name.encode() not in response.content


def test_project_list_query_count_does_not_grow_with_projects(
    client, make_user, make_project, django_assert_max_num_queries
):
    user = make_user()
    for _ in range(30):
        Membership.objects.create(user=user, project=make_project(), role="admin")
    client.force_login(user)
    with django_assert_max_num_queries(7):  # + the count of archived projects
        response = client.get(reverse("projects:project_list"))
    assert response.context["page"].paginator.num_pages == 2


def test_empty_state_for_a_person_without_projects(client, make_user):
    client.force_login(make_user())
    assert b"not a member of any project" in client.get(reverse("projects:project_list")).content


def test_other_projects_are_404_not_403(client, person, make_project, s3):
    other = make_project()
    revision = store.file_create(
        project=other, scope="workspace", path="x.md", content="x\n", actor=Actor.system("test")
    )
    client.force_login(person)
    assert client.get(reverse("projects:project_detail", args=[other.slug])).status_code == 404
    url = reverse("projects:file_detail", args=[other.slug, revision.file_id])
    assert client.get(url).status_code == 404


def test_file_page_renders_sanitized_markdown_and_history(client, project, make_user, s3):
    admin = make_user()
    Membership.objects.create(user=admin, project=project, role="admin")
    revision = store.file_create(
        project=project,
        scope="workspace",
        path="x.md",
        actor=Actor.person(admin),
        content="# Title\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1))\n",
    )
    client.force_login(admin)
    response = client.get(reverse("projects:file_detail", args=[project.slug, revision.file_id]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "<h1>Title</h1>" in html
    assert "<script>alert" not in html and "javascript:" not in html
    assert "r1" in html or ">1<" in html


def test_file_page_says_storage_is_down_instead_of_500(client, project, make_user, s3):
    admin = make_user()
    Membership.objects.create(user=admin, project=project, role="admin")
    revision = store.file_create(
        project=project, scope="workspace", path="x.md", content="x\n", actor=Actor.person(admin)
    )
    client.force_login(admin)
    s3.proxy.down = True
    response = client.get(reverse("projects:file_detail", args=[project.slug, revision.file_id]))
    assert response.status_code == 503
    assert b"did not answer" in response.content


def test_employee_sees_own_profile_not_a_colleagues(client, project, person, make_user, s3):
    colleague = make_user("boris")
    Membership.objects.create(user=colleague, project=project, role="employee")
    mine = store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="# Maria\n",
        actor=Actor.person(person),
    )
    theirs = store.file_create(
        project=project,
        scope="user",
        user=colleague,
        path="USER.md",
        content="# Boris\n",
        actor=Actor.person(colleague),
    )
    client.force_login(person)
    page = client.get(reverse("projects:project_detail", args=[project.slug])).content.decode()
    assert str(mine.file_id) in page and str(theirs.file_id) not in page
    people = client.get(reverse("projects:people", args=[project.slug])).content.decode()
    assert "maria" in people and "boris" not in people
    ok = client.get(reverse("projects:file_detail", args=[project.slug, mine.file_id]))
    assert ok.status_code == 200
    denied = client.get(reverse("projects:file_detail", args=[project.slug, theirs.file_id]))
    assert denied.status_code == 404
