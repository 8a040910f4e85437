"""List pages cost the same number of queries whatever the number of rows (bench/run.py
measures their time with 10,000 rows; here the query counts are pinned)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from projects.audit import Actor, audit_record
from projects.memory import history
from projects.models import Agent, Membership, Revision

pytestmark = pytest.mark.django_db


def _queries(client, url) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(captured)


def _grow(project, make_user, start: int, count: int, admin) -> None:
    for i in range(start, start + count):
        Agent.objects.create(project=project, slug=f"agent-{i}", name=f"Agent {i}")
        user = make_user(f"member{i}")
        Membership.objects.create(user=user, project=project, role="employee")
        audit_record(actor=Actor.person(admin), action="file.save", project=project)


@pytest.mark.parametrize("page", ["projects:project_detail", "projects:people", "projects:members", "audit"])
def test_list_pages_do_not_add_queries_per_row(client, project, admin, make_user, page):
    client.force_login(admin)
    url = (
        reverse("projects:audit_log") + f"?project={project.slug}"
        if page == "audit"
        else reverse(page, args=[project.slug])
    )
    _grow(project, make_user, 0, 2, admin)
    few = _queries(client, url)
    _grow(project, make_user, 2, 40, admin)
    assert _queries(client, url) == few


def test_history_pages_cost_the_same_for_any_length(client, s3, project, admin, workspace_file):
    client.force_login(admin)
    file = workspace_file
    url = reverse("projects:file_history", args=[project.slug, file.pk])
    short = _queries(client, url)
    # 80 more revisions as rows (the history page reads no snapshots).
    head = file.head
    Revision.objects.bulk_create(
        [
            Revision(
                file=file,
                number=n,
                sha256=head.sha256,
                size=head.size,
                author_kind="system",
                author_label="system:t",
                snapshot_key=head.snapshot_key,
            )
            for n in range(2, 82)
        ]
    )
    file.head = Revision.objects.get(file=file, number=81)
    file.save(update_fields=["head"])
    assert _queries(client, url) == short
    assert _queries(client, url + "?page=last") == short
    last = client.get(url + "?page=2").context["page"]  # 50 a page: 81..32, then 31..1
    assert [r.number for r in last] == list(range(31, 0, -1))
    assert [r.number for r in history.file_history(file, page=3, per_page=25)] == list(range(31, 6, -1))
    assert history.file_history(file, page=99).number == 2  # out of range: the last page


@pytest.mark.parametrize("page", ["projects:dashboard", "projects:project_list"])
def test_first_pages_cost_the_same_for_any_number_of_projects(client, make_user, make_project, page):
    """Dashboard panels (admin, review, profile) and the project list, for someone in 3
    projects and in 30 (past the dashboard's 20 shown)."""
    user = make_user("many")
    client.force_login(user)

    def join(count: int) -> None:
        for i in range(count):
            role = ("admin", "compliance", "employee")[i % 3]
            Membership.objects.create(user=user, project=make_project(), role=role)

    join(3)
    few = _queries(client, reverse(page))
    join(27)
    assert _queries(client, reverse(page)) == few
