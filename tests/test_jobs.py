"""Erasures and retention runs started from a page run in the events worker
(governance/jobs.py): the page answers at once with the job queued, the worker's step finishes
it and the job's page shows the counts; a job whose worker died is taken up again and does
nothing twice; a failure shows its reason and can be started again."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from projects.audit import Actor
from projects.governance import erasure, holds, jobs, retention
from projects.memory import lifecycle, store
from projects.models import AuditEvent, BackgroundJob, Membership, MemoryFile, Revision

pytestmark = pytest.mark.django_db


def _profile(project, person, text: str = "Maria, maria@example.com\n") -> MemoryFile:
    revision = store.file_create(
        project=project, scope="user", user=person, path="USER.md", content=text, actor=Actor.person(person)
    )
    return MemoryFile.objects.get(pk=revision.file_id)


def _queued_tasks() -> list[int]:
    return [t.task_result.args[0] for t in DBTaskResult.objects.ready().filter(queue_name=jobs.QUEUE)]


def _run_queued() -> int:
    """What the events worker does with the `jobs` queue, in this process (its command closes
    the database connection, which a test's transaction cannot survive on PostgreSQL)."""
    ran = 0
    for task in DBTaskResult.objects.ready().filter(queue_name=jobs.QUEUE):
        task.claim("test")
        task.set_successful(task.task.call(*task.task_result.args))
        ran += 1
    return ran


def _stop_on(call: int, real):
    """`real`, except that its `call`th call dies as a killed worker would (no exception handler
    of the job sees it: a BaseException)."""
    calls = {"n": 0}

    def wrapped(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == call:
            raise KeyboardInterrupt("worker killed")
        return real(*args, **kwargs)

    return wrapped


def _dead(job: BackgroundJob) -> None:
    """The lease of a worker that died runs out (and its task was queued a while ago)."""
    past = timezone.now() - jobs.LEASE - dt.timedelta(seconds=1)
    BackgroundJob.objects.filter(pk=job.pk).update(lease_until=past, enqueued_at=past)


def test_the_erase_page_queues_the_erasure_and_the_job_page_shows_it_done(
    client, s3, project, person, admin, django_capture_on_commit_callbacks
):
    profile = _profile(project, person)
    client.force_login(admin)
    url = reverse("projects:profile_erase", args=[project.slug, person.pk])
    form = {"reason": "request 7", "confirm": "maria", "projects": [project.slug]}
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(url, form)
    job = BackgroundJob.objects.get()
    assert answer.status_code == 302 and answer["Location"] == reverse(
        "projects:job", args=[project.slug, job.pk]
    )
    assert job.state == "queued" and job.kind == "erasure" and _queued_tasks() == [job.pk]
    assert MemoryFile.objects.filter(pk=profile.pk).exists()  # nothing erased in the request
    page = client.get(answer["Location"]).content.decode()
    assert 'data-refresh="3"' in page and "queued" in page
    # Asked again while it is open: the same job, no second one.
    again = client.post(url, form)
    assert again["Location"] == answer["Location"] and BackgroundJob.objects.count() == 1
    assert "under way" in client.get(url).content.decode()

    assert _run_queued() == 1  # the events worker's step: the task on the `jobs` queue
    job.refresh_from_db()
    assert (job.state, job.done, job.total, job.result["files"], job.result["projects"]) == (
        "done",
        1,
        1,
        1,
        [project.slug],
    )
    assert not MemoryFile.objects.filter(pk=profile.pk).exists()
    assert [k for k in s3.keys() if f"users/{person.pk}/" in k] == []
    tombstone = AuditEvent.objects.get(action="profile.erase")
    assert tombstone.actor_user == admin and tombstone.details["reason"] == "request 7"
    page = client.get(answer["Location"]).content.decode()
    assert 'data-refresh="3"' not in page and "Erased maria's profile in incidents" in page
    assert jobs.job_run(job.pk) == "done"  # a second task for it does nothing
    assert AuditEvent.objects.filter(action="profile.erase").count() == 1


def test_an_erasure_whose_worker_died_is_finished_once(s3, project, make_project, person, admin, monkeypatch):
    other = make_project(slug="daily")
    for where in (project, other):
        Membership.objects.get_or_create(project=where, user=person, defaults={"role": "employee"})
        Membership.objects.get_or_create(project=where, user=admin, defaults={"role": "admin"})
        _profile(where, person)
    job, new = jobs.erasure_queue(
        by=admin,
        project=project,
        user=person,
        reason="GDPR",
        projects=erasure.person_projects(person, by=admin),
    )
    assert new
    monkeypatch.setattr(erasure, "purge", _stop_on(2, erasure.purge))
    with pytest.raises(KeyboardInterrupt):
        jobs.job_run(job.pk)
    job.refresh_from_db()
    assert (job.state, job.done, job.total) == ("running", 1, 2)
    assert AuditEvent.objects.filter(action="profile.erase").count() == 1
    assert jobs.job_run(job.pk) == "running"  # its lease stands: nobody else takes it yet
    assert jobs.jobs_due() == 0
    _dead(job)
    assert jobs.jobs_due() == 1 and jobs.jobs_due() == 0  # queued again, once
    assert jobs.job_run(job.pk) == "done"
    job.refresh_from_db()
    assert (
        job.attempts == 2
        and job.result["files"] == 2
        and sorted(job.result["projects"]) == ["daily", "incidents"]
    )
    erased = AuditEvent.objects.filter(action="profile.erase")
    assert sorted(e.project.slug for e in erased) == ["daily", "incidents"]  # one tombstone each
    assert not MemoryFile.objects.filter(user=person).exists()


def test_a_retention_run_from_the_page_runs_in_the_worker_and_goes_on_after_a_crash(
    client, s3, project, admin, reviewer, monkeypatch, django_capture_on_commit_callbacks
):
    for name in ("a", "b", "c"):
        store.file_create(
            project=project,
            scope="workspace",
            path=f"{name}.md",
            content=f"{name}\n",
            actor=Actor.person(admin),
        )
    Revision.objects.filter(file__project=project).update(created_at=timezone.now() - dt.timedelta(days=5))
    retention.rule_add(by=admin, project=project, kind="files", glob="workspace/**", days=1)
    url = reverse("projects:retention", args=[project.slug])
    client.force_login(reviewer)
    assert client.post(url, {"run": "1"}).status_code == 404  # compliance sees the page, admins run
    assert not BackgroundJob.objects.exists()
    client.force_login(admin)
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(url, {"run": "1"})
    job = BackgroundJob.objects.get()
    assert answer.status_code == 302 and job.state == "queued" and _queued_tasks() == [job.pk]
    assert not Revision.objects.filter(expired_rule__gt="").exists()  # nothing expired in the request

    monkeypatch.setattr(lifecycle, "file_expire", _stop_on(2, lifecycle.file_expire))
    with pytest.raises(KeyboardInterrupt):
        jobs.job_run(job.pk)
    job.refresh_from_db()
    assert (job.state, job.done, job.total) == ("running", 1, 3)
    page = client.get(url).content.decode()
    assert "1 of 3 items" in page and 'data-refresh="3"' in page
    _dead(job)
    assert jobs.job_run(job.pk) == "done"
    job.refresh_from_db()
    assert job.result["files"] == 3 and (job.done, job.total) == (3, 3)
    assert Revision.objects.filter(expired_rule__gt="").count() == 3  # each file expired once
    run = AuditEvent.objects.get(action="retention.run")
    assert run.actor_user == admin and run.details["files"] == 3
    page = client.get(reverse("projects:job", args=[project.slug, job.pk])).content.decode()
    assert "Retention run finished" in page and 'data-refresh="3"' not in page


@pytest.mark.db_independent
def test_a_failed_erasure_shows_why_and_started_again_finishes(
    client, s3, project, person, admin, reviewer, django_capture_on_commit_callbacks
):
    _profile(project, person)
    job, _new = jobs.erasure_queue(by=admin, project=project, user=person, reason="GDPR", projects=[project])
    hold, _sweep = holds.hold_place(by=reviewer, project=project, user=person, reason="case 9")
    assert jobs.job_run(job.pk) == "failed"
    client.force_login(admin)
    url = reverse("projects:job", args=[project.slug, job.pk])
    page = client.get(url).content.decode()
    assert f"legal hold #{hold.pk}" in page and "Start it again" in page and 'data-refresh="3"' not in page
    assert MemoryFile.objects.filter(user=person).exists()
    erase = client.get(reverse("projects:profile_erase", args=[project.slug, person.pk])).content.decode()
    assert "stopped before it finished" in erase and url in erase  # not a second erasure from scratch
    holds.hold_release(by=reviewer, hold=hold)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(url)
    job.refresh_from_db()
    assert job.state == "queued" and job.error == "" and _queued_tasks() == [job.pk]
    assert jobs.job_run(job.pk) == "done"
    assert not MemoryFile.objects.filter(user=person).exists()
