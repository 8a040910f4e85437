"""No side entrance: Django admin cannot change what the console governs without the console's
services (validation, audit, the runners' S3 policies). Governed records are read-only there;
account changes are validated and audited."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from projects.models import Agent, AuditEvent, Project

pytestmark = pytest.mark.django_db


@pytest.fixture
def boss(client, make_user):
    user = make_user("boss", is_superuser=True, is_staff=True)
    client.force_login(user)
    return user


def test_an_admin_post_changing_a_manifest_changes_nothing(client, boss, agent):
    before = (agent.manifest, agent.hook_policy)
    events = AuditEvent.objects.count()
    response = client.post(
        reverse("admin:projects_agent_change", args=[agent.pk]),
        {
            "project": agent.project_id,
            "slug": agent.slug,
            "name": "Renamed",
            "manifest": '{"sections": [], "total_tokens": 1}',
            "hook_policy": '{"post": {"workspace/**.md": {"modes": ["replace"]}}}',
        },
    )
    assert response.status_code == 403
    agent.refresh_from_db()
    assert (agent.manifest, agent.hook_policy, agent.name) == (*before, agent.name)
    assert agent.name != "Renamed"
    assert AuditEvent.objects.count() == events
    # The page itself still shows the record, read-only.
    page = client.get(reverse("admin:projects_agent_change", args=[agent.pk]))
    assert page.status_code == 200 and b'name="manifest"' not in page.content


def test_an_admin_post_changing_a_prefix_or_adding_a_project_changes_nothing(client, boss, project):
    events = AuditEvent.objects.count()
    response = client.post(
        reverse("admin:projects_project_change", args=[project.pk]),
        {"slug": project.slug, "name": project.name, "bucket": "other-bucket", "key_prefix": "elsewhere/"},
    )
    assert response.status_code == 403
    project.refresh_from_db()
    assert (project.bucket, project.key_prefix) == ("", "")
    added = client.post(
        reverse("admin:projects_project_add"), {"slug": "sneaky", "name": "Sneaky", "key_prefix": "sneaky/"}
    )
    assert added.status_code == 403 and not Project.objects.filter(slug="sneaky").exists()
    deleted = client.post(
        reverse(
            "admin:projects_agent_delete", args=[Agent.objects.create(project=project, slug="a", name="A").pk]
        ),
        {"post": "yes"},
    )
    assert deleted.status_code == 403 and Agent.objects.filter(slug="a").exists()
    assert AuditEvent.objects.count() == events


def _user_form(user, **changes):
    data = {
        "username": user.username,
        "first_name": "",
        "last_name": "",
        "email": "",
        "is_active": "on",
        "date_joined_0": "2026-01-01",
        "date_joined_1": "00:00:00",
        "initial-date_joined_0": "2026-01-01",
        "initial-date_joined_1": "00:00:00",
    }
    data.update(changes)
    return {key: value for key, value in data.items() if value is not None}


def test_making_someone_a_global_admin_in_django_admin_is_audited(client, boss, make_user):
    maria = make_user("maria")
    response = client.post(
        reverse("admin:auth_user_change", args=[maria.pk]),
        _user_form(maria, is_superuser="on", is_staff="on"),
    )
    assert response.status_code == 302
    maria.refresh_from_db()
    assert maria.is_superuser
    event = AuditEvent.objects.get(action="account.change")
    assert event.actor_label == "boss" and event.object_repr == "maria"
    assert event.details["is_superuser"] is True and "is_superuser" in event.details["changed"]


def test_a_look_alike_username_is_refused_in_django_admin_too(client, boss, make_user):
    make_user("maria")
    oleg = make_user("oleg")
    response = client.post(
        reverse("admin:auth_user_change", args=[oleg.pk]), _user_form(oleg, username="m\u0430ria")
    )  # Cyrillic а
    assert response.status_code == 200 and "reads the same" in response.content.decode()
    oleg.refresh_from_db()
    assert oleg.username == "oleg" and not AuditEvent.objects.filter(action="account.change")


def test_accounts_are_not_added_or_deleted_in_django_admin(client, boss, make_user):
    maria = make_user("maria")
    assert client.get(reverse("admin:auth_user_add")).status_code == 403
    assert client.post(reverse("admin:auth_user_delete", args=[maria.pk]), {"post": "yes"}).status_code == 403
    assert get_user_model().objects.filter(username="maria").exists()
