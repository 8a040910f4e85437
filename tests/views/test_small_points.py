"""The smaller points of a person's day, each as they would expect it: their profile one click
from the dashboard, no storage keys or raw runner JSON for employees, sessions that say when
they ended."""

from html import unescape

import pytest
from django.urls import reverse

from projects.audit import Actor
from projects.memory import store
from projects.runners import hooks, prehook

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


def test_the_employee_dashboard_has_edit_my_profile(client, person, profile, project, make_project):
    from projects.models import Membership

    other = make_project(slug="tenders", name="Tenders")
    Membership.objects.create(user=person, project=other, role="employee")
    client.force_login(person)
    page = client.get(reverse("projects:dashboard")).content.decode()
    assert "Edit my profile" in page
    assert reverse("projects:file_edit", args=[project.slug, profile.pk]) in page
    # No profile yet in the other project: a button writes one.
    assert "Write my profile" in page and reverse("projects:file_open", args=[other.slug]) in page


def test_employees_see_no_storage_keys_and_no_raw_runner_json(
    client, s3, person, reviewer, profile, project, agent
):
    session, _ = prehook.hook_pre(agent=agent, user=person)
    hooks.hook_event(
        session=session, kind="tool", payload={"name": "grafana", "summary": "latency p99", "secret": "x"}
    )
    hooks.hook_post(session=session, writes=[], summary="done")
    client.force_login(person)
    file_page = client.get(reverse("projects:file_detail", args=[project.slug, profile.pk]))
    assert profile.key not in file_page.content.decode()
    assert (
        project.prefix
        not in client.get(reverse("projects:project_detail", args=[project.slug])).content.decode()
    )
    session_page = client.get(reverse("projects:session_detail", args=[project.slug, session.pk]))
    html = session_page.content.decode()
    assert "Tool grafana: latency p99" in html and "Summary: done" in html
    assert '"secret"' not in html and 'pre class="payload"' not in html
    client.force_login(reviewer)  # staff keep the storage key and the JSON, one click away
    assert (
        profile.key
        in client.get(reverse("projects:file_detail", args=[project.slug, profile.pk])).content.decode()
    )
    staff = client.get(reverse("projects:session_detail", args=[project.slug, session.pk]))
    assert "&quot;secret&quot;" in staff.content.decode()


def test_the_session_list_says_the_day_a_session_ended(client, s3, person, admin, project, agent):
    session, _ = prehook.hook_pre(agent=agent, user=person)
    hooks.hook_post(session=session, writes=[])
    session.refresh_from_db()
    client.force_login(admin)
    page = client.get(reverse("projects:session_list", args=[project.slug])).content.decode()
    assert session.ended_at.strftime("%Y-%m-%d %H:%M") in page


def test_add_member_on_an_existing_member_asks_and_says_from_what_to_what(client, admin, person, project):
    from projects.models import AuditEvent, Membership

    client.force_login(admin)
    url = reverse("projects:members", args=[project.slug])
    asked = client.post(url, {"username": person.username, "role": "compliance"})
    assert asked.status_code == 409
    html = asked.content.decode()
    assert "maria is already a member, as Employee. Change their role to Compliance?" in html
    assert Membership.objects.get(user=person).role == "employee"  # nothing changed yet
    done = client.post(
        url, {"username": person.username, "role": "compliance", "confirm_role": "compliance"}, follow=True
    )
    assert "Changed maria's role from Employee to Compliance." in unescape(done.content.decode())
    assert Membership.objects.get(user=person).role == "compliance"
    same = client.post(url, {"username": person.username, "role": "compliance"}, follow=True)
    assert "maria is already Compliance" in same.content.decode()
    assert AuditEvent.objects.filter(action="member.role").count() == 1
    change = client.post(
        reverse("projects:member_change", args=[project.slug, Membership.objects.get(user=person).pk]),
        {"role": "employee"},
        follow=True,
    )
    assert "Changed maria's role from Compliance to Employee." in unescape(change.content.decode())


def test_an_admin_sends_a_new_set_password_link_to_who_never_chose_one(
    client, admin, project, person, mailoutbox, settings
):
    from django.contrib.auth import get_user_model

    from projects.governance import members
    from projects.models import AuditEvent, Membership

    settings.MGC_SENDS_EMAIL = True
    newcomer = members.account_create(
        by=admin, project=project, username="nina", role="employee", email="nina@example.com"
    )
    client.force_login(admin)
    page = client.get(reverse("projects:members", args=[project.slug])).content.decode()
    reinvite = reverse("projects:member_reinvite", args=[project.slug, newcomer.pk])
    assert reinvite in page  # nina never chose a password
    mine = Membership.objects.get(user=person)
    assert reverse("projects:member_reinvite", args=[project.slug, mine.pk]) not in page
    answer = client.post(reinvite)
    html = answer.content.decode()
    assert answer.status_code == 200 and "A new set-password link for nina" in html
    assert answer["Cache-Control"] == "no-store"
    link = html.split('id="invite-link">', 1)[1].split("<", 1)[0]
    assert "/accounts/set-password/" in link and link in mailoutbox[-1].body
    assert AuditEvent.objects.get(action="account.invite").details["user"] == "nina"
    # Maria has a password: no link for her (it would let this admin take her account over).
    refused = client.post(reverse("projects:member_reinvite", args=[project.slug, mine.pk]), follow=True)
    assert "has chosen a password already" in refused.content.decode()
    assert get_user_model().objects.get(username="nina").has_usable_password() is False


def test_an_empty_file_is_saved_only_when_the_person_says_so(client, admin, project, s3):
    from projects.models import MemoryFile

    client.force_login(admin)
    url = reverse("projects:file_new", args=[project.slug]) + "?path=notes/empty.md"
    asked = client.post(url, {"content": "  \n", "message": ""})
    assert asked.status_code == 400 and 'id="save-empty"' in asked.content.decode()
    assert not MemoryFile.objects.filter(path="notes/empty.md").exists()  # nothing made yet
    saved = client.post(url, {"content": "", "message": "", "allow_empty": "1"})
    assert saved.status_code == 302
    file = MemoryFile.objects.select_related("head").get(path="notes/empty.md")
    assert file.head.number == 1 and file.head.size == 0


def test_the_audit_object_is_a_link_and_details_read_as_words(client, admin, profile, project, person):
    store.file_save(
        file=profile, content="# Maria\n- tea\n", actor=Actor.person(person), base_revision=1, message="tea"
    )
    client.force_login(admin)
    page = client.get(reverse("projects:audit_log")).content.decode()
    file_url = reverse("projects:file_detail", args=[project.slug, profile.pk])
    assert f'<a href="{file_url}">users/maria/USER.md</a>' in page
    assert "<dt>revision</dt><dd>2</dd>" in page and "<dt>message</dt><dd>tea</dd>" in page
    assert '{"message"' not in page and "&quot;message&quot;" not in page


def test_projects_and_agents_are_archived_hidden_refused_and_brought_back(
    client, admin, project, agent, person, s3
):
    import json as _json

    from projects.models import AuditEvent
    from projects.runners import bearer

    _, raw = bearer.token_create(agent=agent, name="t", created_by=admin)
    pre = lambda: client.post(  # noqa: E731
        "/api/v1/hooks/pre",
        data=_json.dumps({"user": person.username}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {raw}",
    )
    client.force_login(admin)
    settings_url = reverse("projects:agent_settings", args=[project.slug, agent.slug])
    client.post(settings_url, {"which": "archive", "archive": "1"})
    detail = client.get(reverse("projects:project_detail", args=[project.slug])).content.decode()
    assert reverse("projects:agent_detail", args=[project.slug, agent.slug]) + '"' not in detail
    assert "1 archived agent" in detail
    refused = pre()
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "agent_archived"
    client.post(settings_url, {"which": "archive", "archive": "0"})
    assert pre().status_code == 200
    project_settings = reverse("projects:project_settings", args=[project.slug])
    client.post(project_settings, {"archive": "1"})
    listed = client.get(reverse("projects:project_list")).content.decode()
    assert f'href="{reverse("projects:project_detail", args=[project.slug])}"' not in listed
    assert "1 archived project" in listed
    assert (
        f'href="{reverse("projects:project_detail", args=[project.slug])}"'
        not in client.get(reverse("projects:dashboard")).content.decode()
    )
    assert pre().json()["error"]["code"] == "project_archived"
    client.post(project_settings, {"archive": "0"})
    assert pre().status_code == 200
    assert [e.action for e in AuditEvent.objects.filter(action__contains="archive").order_by("seq")] == [
        "agent.archive",
        "agent.unarchive",
        "project.archive",
        "project.unarchive",
    ]
