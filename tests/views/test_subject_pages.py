"""The pages of subjects' requests: who sees which requests, a person's own ask, registering
one, the background jobs through the worker's task, downloads audited, a correction linked
from the editor."""

import io
import json
import zipfile

import pytest
from django.test import override_settings
from django.urls import reverse

from projects.audit import Actor
from projects.governance import subjects
from projects.memory import store
from projects.models import AuditEvent, Membership, MemoryFile, SubjectRequest

IMMEDIATE = {"default": {"BACKEND": "django.tasks.backends.immediate.ImmediateBackend", "QUEUES": []}}


@pytest.fixture
def people(make_user, make_project):
    root = make_user("root", is_superuser=True)
    one, two = make_project(slug="one"), make_project(slug="two")
    officer, other_officer = make_user("officer"), make_user("officer2")
    Membership.objects.create(user=officer, project=one, role="compliance")
    Membership.objects.create(user=other_officer, project=two, role="compliance")
    anna, boris = make_user("anna", first_name="Anna", last_name="Smith"), make_user("boris")
    for user in (anna, boris):
        Membership.objects.create(user=user, project=one, role="employee")
        Membership.objects.create(user=user, project=two, role="employee")
    requests = {
        "anna_one": subjects.request_open(by=officer, user=anna, project=one, kind="access", law="152-fz"),
        "boris_two": subjects.request_open(
            by=other_officer, user=boris, project=two, kind="copy", law="gdpr"
        ),
        "anna_register": subjects.request_open(by=root, user=anna, kind="erasure", law="both"),
        "boris_register": subjects.request_open(by=root, user=boris, kind="access", law="both"),
    }
    return {
        "root": root,
        "officer": officer,
        "anna": anna,
        "boris": boris,
        "one": one,
        "two": two,
        **requests,
    }


def _listed(client, url) -> set[int]:
    page = client.get(url)
    assert page.status_code == 200
    return {r.pk for r in page.context["page"].object_list}


def test_an_employee_sees_only_their_own_requests(client, people):
    client.force_login(people["anna"])
    assert _listed(client, reverse("projects:subject_requests") + "?state=") == {
        people["anna_one"].pk,
        people["anna_register"].pk,
    }
    assert client.get(reverse("projects:subject_request", args=[people["boris_two"].pk])).status_code == 404
    own = client.get(reverse("projects:subject_request", args=[people["anna_one"].pk]))
    assert own.status_code == 200 and not own.context["handles"]
    assert b"Find what is held" not in own.content
    # No step, no download, no job status for the person themselves.
    step = reverse("projects:subject_request_step", args=[people["anna_one"].pk, "refuse"])
    assert client.post(step, {"text": "no"}).status_code == 404
    assert client.get(reverse("projects:project_subject_requests", args=["one"])).status_code == 404


def test_a_project_compliance_officer_sees_only_that_projects_requests(client, people):
    client.force_login(people["officer"])
    assert _listed(client, reverse("projects:subject_requests")) == {people["anna_one"].pk}
    assert _listed(client, reverse("projects:project_subject_requests", args=["one"])) == {
        people["anna_one"].pk
    }
    assert client.get(reverse("projects:project_subject_requests", args=["two"])).status_code == 404
    for other in ("boris_two", "anna_register", "boris_register"):
        assert client.get(reverse("projects:subject_request", args=[people[other].pk])).status_code == 404
    # The register's handlers see every request.
    client.force_login(people["root"])
    assert len(_listed(client, reverse("projects:subject_requests"))) == 4


def test_a_person_asks_from_their_dashboard(client, people):
    client.force_login(people["boris"])
    dashboard = client.get(reverse("projects:dashboard"))
    assert reverse("projects:subject_ask").encode() in dashboard.content
    answer = client.post(
        reverse("projects:subject_ask"), {"kind": "access", "law": "152-fz", "language": "ru"}
    )
    asked = SubjectRequest.objects.filter(user=people["boris"], created_by=people["boris"]).get()
    assert answer.status_code == 302 and answer["Location"] == reverse(
        "projects:subject_request", args=[asked.pk]
    )
    assert asked.state == SubjectRequest.State.IDENTITY_CHECKED and asked.handler is None
    assert asked.project is None and asked.language == "ru"
    assert f"#{asked.pk}".encode() in client.get(reverse("projects:dashboard")).content
    # An employee cannot register one for someone else.
    form = client.post(
        reverse("projects:subject_requests"), {"person": "anna", "kind": "access", "law": "gdpr"}
    )
    assert form.status_code == 404


def test_registering_needs_the_person_and_says_what_is_missing(client, people):
    client.force_login(people["officer"])
    url = reverse("projects:subject_requests")
    base = {"project": "one", "kind": "access", "law": "152-fz", "channel": "email", "language": "en"}
    refused = client.post(url, base)
    assert refused.status_code == 400 and b"their name and e-mail" in refused.content
    done = client.post(
        url, {**base, "name": "Pat Doe", "email": "pat@example.com", "received_at": "2026-01-12T10:00"}
    )
    opened = SubjectRequest.objects.get(email="pat@example.com")
    assert done.status_code == 302 and opened.project == people["one"]
    assert opened.due_on.isoformat() == "2026-01-26"
    # Not in the register: only its handlers may register there.
    assert client.post(url, {**base, "project": "", "name": "X", "email": "x@example.com"}).status_code == 400


@override_settings(TASKS=IMMEDIATE)
def test_the_package_is_made_by_the_task_and_each_download_is_audited(
    client, people, s3, django_capture_on_commit_callbacks
):
    project = people["one"]
    store.file_create(
        project=project,
        scope="user",
        user=people["anna"],
        path="USER.md",
        content="# Anna\n",
        actor=Actor.person(people["anna"]),
    )
    store.file_create(
        project=project,
        scope="workspace",
        path="notes.md",
        content="Anna Smith wrote this.\n",
        actor=Actor.person(people["boris"]),
    )
    request = people["anna_one"]
    client.force_login(people["officer"])
    step = lambda name: reverse("projects:subject_request_step", args=[request.pk, name])  # noqa: E731
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(step("search")).status_code == 302
    request.refresh_from_db()
    assert request.job_state == "done" and request.inventory["counts"]["mentions"] == 1
    page = client.get(reverse("projects:subject_request", args=[request.pk]))
    assert b"Anna Smith wrote this." in page.content and b"Make the answer package" in page.content
    status = client.get(reverse("projects:subject_request_status", args=[request.pk])).json()
    assert status == {"job": "search", "state": "done", "running": False}
    with django_capture_on_commit_callbacks(execute=True):
        client.post(step("package"))
    request.refresh_from_db()
    assert request.state == SubjectRequest.State.ANSWERED, request.job_error
    document = request.documents.get()
    for _ in range(2):
        download = client.get(reverse("projects:subject_document", args=[request.pk, document.pk]))
        assert download.status_code == 200 and download["Content-Type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(download.content)) as archive:
        answer = json.loads(archive.read("answer.json"))
    assert (
        answer["profiles"][0]["project"] == "one"
        and answer["mentions"][0]["text"] == "Anna Smith wrote this."
    )
    assert AuditEvent.objects.filter(action="subject_request.download").count() == 2
    # Closing sends subject_request.closed (and the step is audited).
    client.post(step("close"), {"text": "sent by post"})
    request.refresh_from_db()
    assert request.state == SubjectRequest.State.CLOSED


def test_a_correction_opened_from_the_request_links_the_saved_revision(client, people, s3, make_user):
    project = people["one"]
    admin = make_user("adminone")
    Membership.objects.create(user=admin, project=project, role="admin")
    revision = store.file_create(
        project=project,
        scope="user",
        user=people["anna"],
        path="USER.md",
        content="# Anna\n- Team: billing\n",
        actor=Actor.person(people["anna"]),
    )
    request = subjects.request_open(
        by=admin, user=people["anna"], project=project, kind="correction", law="152-fz"
    )
    assert request.deadlines["152-fz"]["article"] == "152-FZ art. 20(3)"
    client.force_login(admin)
    page = client.get(reverse("projects:subject_request", args=[request.pk]))
    edit = reverse("projects:file_edit", args=["one", revision.file_id]) + f"?request={request.pk}"
    assert edit.encode() in page.content.replace(b"&amp;", b"&")
    form = client.get(edit)
    assert f'name="subject_request" value="{request.pk}"'.encode() in form.content
    saved = client.post(
        edit,
        {
            "content": "# Anna\n- Team: payments\n",
            "base_revision": 1,
            "message": "as asked",
            "subject_request": request.pk,
        },
    )
    assert saved.status_code == 302
    linked = request.revisions.get()
    assert linked.number == 2 and linked.file_id == revision.file_id
    step = reverse("projects:subject_request_step", args=[request.pk, "answer"])
    client.post(step, {"text": "Team corrected to payments."})
    request.refresh_from_db()
    assert request.state == SubjectRequest.State.ANSWERED
    assert MemoryFile.objects.get(pk=revision.file_id).head.number == 2
