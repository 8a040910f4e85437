"""Governance pages: audit trail (filters, export), audited compliance reads, review queue,
members, isolation, export and erasure, as the people who use them see them."""

import csv
import io
import json
import zipfile

import pytest
from django.urls import reverse

from projects.audit import Actor, audit_record, audit_verify
from projects.governance import erasure, jobs
from projects.memory import store
from projects.models import AuditEvent, BackgroundJob, Membership, MemoryFile

pytestmark = pytest.mark.django_db


@pytest.fixture
def profile_with_email(s3, project, person) -> MemoryFile:
    revision = store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="Maria, e-mail maria@example.com\n",
        actor=Actor.person(person),
    )
    return MemoryFile.objects.select_related("head").get(pk=revision.file_id)


# --- Audited reads -----------------------------------------------------------------------------


def test_compliance_reads_of_memory_are_audited_and_admin_reads_are_not(
    client, project, profile_with_email, reviewer, admin
):
    client.force_login(reviewer)
    pages = [
        ("projects:file_detail", [project.slug, profile_with_email.pk], "read.file"),
        ("projects:file_history", [project.slug, profile_with_email.pk], "read.history"),
        ("projects:revision_detail", [project.slug, profile_with_email.pk, 1], "read.revision"),
        ("projects:revision_raw", [project.slug, profile_with_email.pk, 1], "read.download"),
        ("projects:file_diff", [project.slug, profile_with_email.pk], "read.diff"),
    ]
    for name, args, action in pages:
        assert client.get(reverse(name, args=args)).status_code == 200
        event = AuditEvent.objects.order_by("-seq").first()
        assert (event.action, event.actor_user, event.object_id) == (
            action,
            reviewer,
            str(profile_with_email.pk),
        )
    client.force_login(admin)
    before = AuditEvent.objects.count()
    client.get(reverse("projects:file_detail", args=[project.slug, profile_with_email.pk]))
    assert AuditEvent.objects.count() == before
    assert audit_verify() == []


def test_a_compliance_simulation_is_audited_with_whom_it_was_for(
    client, project, agent, profile_with_email, reviewer, person
):
    client.force_login(reviewer)
    url = reverse("projects:simulate", args=[project.slug]) + f"?agent={agent.slug}&user={person.pk}"
    assert client.get(url).status_code == 200
    event = AuditEvent.objects.get(action="read.simulate")
    assert event.details["user"] == "maria" and len(event.details["prompt_sha256"]) == 64


# --- Audit page -------------------------------------------------------------------------------


@pytest.fixture
def trail(project, make_project, person, admin):
    other = make_project(slug="secret", name="Secret")
    audit_record(actor=Actor.person(admin), action="token.create", project=project)
    audit_record(
        actor=Actor.person(person),
        action="file.save",
        project=project,
        details={"message": '=HYPERLINK("http://evil")'},
    )
    audit_record(actor=Actor.person(admin), action="file.save", project=other)
    audit_record(actor=Actor.system("boot"), action="console.start")
    return other


def test_audit_page_shows_only_reviewable_projects_events(client, trail, reviewer, project):
    client.force_login(reviewer)
    response = client.get(reverse("projects:audit_log"))
    assert response.status_code == 200
    rows = response.context["page"].object_list
    assert [e.action for e in rows] == ["file.save", "token.create"]
    assert b"Secret" not in response.content and b"console.start" not in response.content


def test_audit_filters_by_actor_action_and_time(client, trail, reviewer, project):
    client.force_login(reviewer)
    url = reverse("projects:audit_log")
    by_actor = client.get(url, {"actor": "MAR"}).context["page"].object_list
    assert [e.actor_label for e in by_actor] == ["maria"]
    by_group = client.get(url, {"action": "token."}).context["page"].object_list
    assert [e.action for e in by_group] == ["token.create"]
    future = client.get(url, {"since": "2999-01-01T00:00"}).context["page"].object_list
    assert list(future) == []
    empty = client.get(url, {"since": "2999-01-01T00:00"})
    assert b"No event matches these filters." in empty.content


def test_audit_filter_errors_are_said_not_500(client, trail, reviewer):
    client.force_login(reviewer)
    url = reverse("projects:audit_log")
    response = client.get(url, {"since": "yesterday-ish"})
    assert response.status_code == 400 and b"Enter a valid date/time" in response.content
    response = client.get(url, {"since": "2026-12-02T00:00", "until": "2026-12-01T00:00"})
    assert response.status_code == 400 and b"must be before" in response.content
    response = client.get(url, {"project": "secret"})
    assert response.status_code == 400  # not a project this person may review


def test_audit_export_csv_and_jsonl_follow_the_filters_and_defuse_formulas(client, trail, reviewer, project):
    client.force_login(reviewer)
    url = reverse("projects:audit_log")
    response = client.get(url, {"project": project.slug, "export": "csv"})
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [r["action"] for r in rows] == ["token.create", "file.save"]  # oldest first
    assert json.loads(rows[1]["details"]) == {"message": '=HYPERLINK("http://evil")'}
    assert rows[0]["seq"] == "1" and len(rows[0]["hash"]) == 64
    response = client.get(url, {"action": "file.save", "export": "jsonl"})
    lines = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert [(e["action"], e["project"]) for e in lines] == [("file.save", "incidents")]
    assert lines[0]["details"]["message"].startswith("=")  # JSON keeps the value as it was
    exports = AuditEvent.objects.filter(action="audit.export", actor_user=reviewer)
    assert exports.count() == 2


def test_csv_cells_that_start_a_formula_are_quoted():
    from projects.governance.trail import _cell

    assert _cell("=1+1") == "'=1+1" and _cell("@SUM(A1)") == "'@SUM(A1)"
    assert _cell("plain") == "plain" and _cell(None) == "" and _cell(3) == "3"


def test_employees_have_no_audit_page(client, person, trail):
    client.force_login(person)
    assert client.get(reverse("projects:audit_log")).status_code == 404


def test_audit_page_query_count_does_not_grow_with_events(
    client, reviewer, project, django_assert_max_num_queries
):
    for n in range(60):
        audit_record(actor=Actor.person(reviewer), action="read.file", project=project, details={"n": n})
    client.force_login(reviewer)
    with django_assert_max_num_queries(12):
        response = client.get(reverse("projects:audit_log"))
    assert len(response.context["page"].object_list) == 50


# --- Review queue -----------------------------------------------------------------------------


def test_review_queue_mark_and_flag_from_the_page(client, project, agent, profile_with_email, reviewer):
    client.force_login(reviewer)
    url = reverse("projects:review_queue", args=[project.slug])
    html = client.get(url).content.decode()
    assert "users/maria/USER.md" in html and "e-mail address" in html
    assert "maria@example.com" not in html.split("findings")[1].split("</ul>")[0]
    response = client.post(
        reverse("projects:flag_create", args=[project.slug, profile_with_email.pk]),
        {"number": 1, "comment": "Private e-mail in the profile"},
    )
    assert response.status_code == 302
    html = client.get(url).content.decode()
    assert "Private e-mail in the profile" in html and "Open flags (1)" in html
    client.post(reverse("projects:review_mark", args=[project.slug, profile_with_email.pk]), {"number": 1})
    html = client.get(url).content.decode()
    assert "Nothing to review" in html and "Open flags (1)" in html
    response = client.post(
        reverse("projects:review_mark", args=[project.slug, profile_with_email.pk]),
        {"number": "x"},
        follow=True,
    )
    assert b"The form was incomplete" in response.content


def test_review_queue_refuses_cross_site_next(client, project, profile_with_email, reviewer):
    client.force_login(reviewer)
    response = client.post(
        reverse("projects:review_mark", args=[project.slug, profile_with_email.pk]),
        {"number": 1, "next": "https://evil.example/"},
    )
    assert response.url == reverse("projects:review_queue", args=[project.slug])


# --- Members ----------------------------------------------------------------------------------


def test_admin_adds_changes_and_removes_members(client, project, admin, make_user):
    make_user("nina")
    client.force_login(admin)
    url = reverse("projects:members", args=[project.slug])
    response = client.post(url, {"username": "nobody", "role": "employee"})
    assert response.status_code == 400 and b"No active account is called nobody" in response.content
    client.post(url, {"username": "nina", "role": "employee"})
    membership = Membership.objects.get(user__username="nina")
    client.post(reverse("projects:member_change", args=[project.slug, membership.pk]), {"role": "compliance"})
    membership.refresh_from_db()
    assert membership.role == "compliance"
    me = Membership.objects.get(user=admin)
    response = client.post(
        reverse("projects:member_change", args=[project.slug, me.pk]), {"remove": "1"}, follow=True
    )
    assert b"last admin" in response.content and Membership.objects.filter(pk=me.pk).exists()
    client.post(reverse("projects:member_change", args=[project.slug, membership.pk]), {"remove": "1"})
    assert not Membership.objects.filter(pk=membership.pk).exists()
    assert list(AuditEvent.objects.order_by("seq").values_list("action", flat=True)) == [
        "member.grant",
        "member.role",
        "member.remove",
    ]


# --- Isolation, export, erasure -----------------------------------------------------------------


def test_isolation_page_and_policy_downloads(client, project, agent, admin):
    client.force_login(admin)
    url = reverse("projects:isolation", args=[project.slug])
    html = client.get(url).content.decode()
    assert project.prefix in html and "ReadWriteOwnPrefix" in html
    policy = client.get(url, {"policy": agent.slug})
    assert policy["Content-Disposition"].endswith('-runner-policy.json"')
    assert json.loads(policy.content)["Statement"][1]["Sid"] == "ReadOwnMemory"
    assert client.get(url, {"policy": "nope"}).status_code == 404


def test_export_download_is_a_zip(client, project, profile_with_email, reviewer):
    client.force_login(reviewer)
    response = client.get(reverse("projects:project_export", args=[project.slug]))
    assert response["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert "memory/users/maria/USER.md" in archive.namelist()


def test_export_when_storage_is_down_says_so(client, s3, project, profile_with_email, reviewer):
    client.force_login(reviewer)
    s3.proxy.inject("GET", "users/", status=503, times=5)
    response = client.get(reverse("projects:project_export", args=[project.slug]), follow=True)
    assert b"No export was made" in response.content


def test_erasure_page_needs_the_username_typed(client, s3, project, profile_with_email, admin, person):
    client.force_login(admin)
    url = reverse("projects:profile_erase", args=[project.slug, person.pk])
    page = client.get(url)
    assert b"1 revision" in page.content
    response = client.post(url, {"reason": "request 7", "confirm": "mari"})
    assert response.status_code == 400 and b"Type maria exactly" in response.content
    assert MemoryFile.objects.filter(pk=profile_with_email.pk).exists()
    response = client.post(
        url, {"reason": "request 7", "confirm": "maria", "projects": [project.slug]}, follow=True
    )
    assert b"Erasure of maria" in response.content  # queued: the events worker erases
    jobs.job_run(BackgroundJob.objects.get().pk)  # the worker's step (tests/test_jobs.py)
    assert b"Erased maria" in client.get(response.redirect_chain[-1][0]).content
    assert not MemoryFile.objects.filter(pk=profile_with_email.pk).exists()
    assert [k for k in s3.keys() if f"users/{person.pk}/" in k] == []
    assert erasure.profile_erase  # the page used the service (tombstone below)
    assert AuditEvent.objects.get(action="profile.erase").details["reason"] == "request 7"


# --- Projects and agents ----------------------------------------------------------------------


def test_superuser_creates_a_project_and_becomes_its_admin(client, make_user, s3):
    boss = make_user("boss", is_superuser=True)
    client.force_login(boss)
    url = reverse("projects:project_new")
    bad = client.post(url, {"slug": "x", "name": "X", "key_prefix": "../escape/"})
    assert bad.status_code == 400 and b"key prefix" in bad.content
    response = client.post(url, {"slug": "legal", "name": "Legal", "key_prefix": "teams/legal/"})
    assert response.status_code == 302
    assert Membership.objects.get(project__slug="legal").user == boss
    assert [e.action for e in AuditEvent.objects.order_by("seq")] == ["project.create", "member.grant"]
    duplicate = client.post(url, {"slug": "legal", "name": "Again"})
    assert duplicate.status_code == 400 and b"exists" in duplicate.content


def test_admin_creates_an_agent_and_edits_the_project(client, project, admin):
    client.force_login(admin)
    url = reverse("projects:agent_new", args=[project.slug])
    assert client.post(url, {"slug": "scout", "name": "Scout"}).status_code == 302
    again = client.post(url, {"slug": "scout", "name": "Scout 2"})
    assert again.status_code == 400 and b"already has an agent called scout" in again.content
    client.post(
        reverse("projects:project_settings", args=[project.slug]),
        {"name": "Incidents (renamed)", "description": "d"},
    )
    project.refresh_from_db()
    assert project.name == "Incidents (renamed)"
    assert list(AuditEvent.objects.order_by("seq").values_list("action", flat=True)) == [
        "agent.create",
        "project.update",
    ]


def test_membership_changes_in_django_admin_are_audited_too(client, project, make_user):
    boss = make_user("boss", is_superuser=True, is_staff=True)
    nina = make_user("nina")
    client.force_login(boss)
    response = client.post(
        reverse("admin:projects_membership_add"),
        {"user": nina.pk, "project": project.pk, "role": "compliance"},
    )
    assert response.status_code == 302, response.content[:2000]
    membership = Membership.objects.get(user=nina)
    client.post(reverse("admin:projects_membership_delete", args=[membership.pk]), {"post": "yes"})
    assert not Membership.objects.filter(user=nina).exists()
    assert [(e.action, e.actor_user) for e in AuditEvent.objects.order_by("seq")] == [
        ("member.grant", boss),
        ("member.remove", boss),
    ]
