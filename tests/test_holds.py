"""Legal holds that hold, against real SeaweedFS behind the fault proxy: placing a hold is
finished or undone as a unit whatever the storage does (recorded "being placed", refused over
at once, finished by the same placement again, reconcile or the periodic sweep, never doubled),
large sweeps go on in the events worker with their progress on the page, and a version written
straight to the bucket under a standing hold is held as soon as the console learns of it: by
the change feed, the next pre hook's catch-up, the periodic sweep or reconcile. (The storage
enforcing a placed hold, and holds over persons, files and globs: tests/test_lifecycle.py.)"""

from __future__ import annotations

import datetime as dt
import time

import pytest
from botocore.exceptions import ClientError
from django.core.management import CommandError, call_command
from django.test import override_settings
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from projects.audit import Actor
from projects.governance import erasure, holds, retention
from projects.governance.tasks import QUEUE
from projects.memory import adoption, errors, feed, holding, layout, lifecycle, reconcile, removal, store
from projects.models import AgentSession, AuditEvent, LegalHold, MemoryFile, RefusedWrite, Revision
from projects.runners import bearer, credentials, prehook
from runnerkit.direct import DirectStorage

pytestmark = [pytest.mark.django_db, pytest.mark.db_independent]

# docs/DEPLOY.md states these bounds ("How long a direct write stays unheld").
FEED_BOUND_SECONDS = 5.0


def _versions(s3, prefix: str) -> list[dict]:
    """Every stored version under a prefix, read straight from the server (not the proxy)."""
    pages = s3.client.get_paginator("list_object_versions").paginate(Bucket=s3.bucket, Prefix=prefix)
    return [v for page in pages for v in page.get("Versions", [])]


def _held(s3, version: dict) -> bool:
    try:
        answer = s3.client.get_object_legal_hold(
            Bucket=s3.bucket, Key=version["Key"], VersionId=version["VersionId"]
        )
    except ClientError:
        return False
    return answer["LegalHold"]["Status"] == "ON"


def _unheld(s3, prefix: str) -> list[dict]:
    return [v for v in _versions(s3, prefix) if not _held(s3, v)]


def _quiet(follower, prefix: str) -> None:
    """Until the stream has reported every write made so far (no change for 0.2 s)."""
    last, since = follower.count(prefix), time.monotonic()
    while time.monotonic() - since < 0.2:
        time.sleep(0.01)
        if follower.count(prefix) != last:
            last, since = follower.count(prefix), time.monotonic()


def _run_hold_tasks() -> int:
    """What the events worker does with the holds queue, in this process: run what is queued."""
    ran = 0
    for task in DBTaskResult.objects.ready().filter(queue_name=QUEUE):
        task.claim("test")
        result = task.task_result
        task.set_successful(task.task.call(*result.args))
        ran += 1
    return ran


@pytest.fixture
def memory(s3, project, agent, person):
    """A locked bucket with the project's memory: a profile, workspace notes with history, a
    session's kept prompt."""
    s3.lock()
    system = Actor.system("t")
    profile = store.file_create(
        project=project, scope="user", user=person, path="USER.md", content="Maria.\n", actor=system
    ).file
    notes = store.file_create(
        project=project, scope="workspace", path="notes/a.md", content="# A\n", actor=system
    ).file
    store.file_save(file=notes, content="# A\n\nv2\n", actor=system, base_revision=1)
    session, _ = prehook.hook_pre(agent=agent, user=person)
    return {"profile": profile, "notes": notes, "session": session}


# --- Placing is finished or undone as a unit ---------------------------------------------------


def test_a_hold_placed_while_the_storage_fails_every_third_request_is_finished_by_running_it_again(
    s3, project, admin, person, memory, monkeypatch, capsys
):
    # About 130 versions: the console's own, and many more a runner's sandbox wrote directly.
    for n in range(12):
        key = layout.workspace_file_key(project.prefix, f"sandbox/{n}.md")
        for version in range(10):
            s3.client.put_object(Bucket=s3.bucket, Key=key, Body=f"{n}.{version}\n".encode())
    covered = _versions(s3, project.prefix)
    assert len(covered) > 120 and not any(_held(s3, v) for v in covered[:5])
    monkeypatch.setattr(holding, "PAGE", 10)  # a dozen listing pages, as thousands would make
    place = ["legal_hold", "place", "--project", project.slug, "--reason", "litigation", "--case", "C-7"]

    s3.proxy.inject("*", r".*", "status", status=503, times=10**6, every=3)
    with pytest.raises(CommandError, match="not yet placed in storage everywhere"):
        call_command(*place)
    out = capsys.readouterr().out
    print("\nFirst placement, every third request failing:\n", out)
    assert "It is being placed" in out and "already refuse what it covers" in out
    hold = LegalHold.objects.get()
    assert hold.state == LegalHold.State.PLACING and not hold.storage_enforced
    assert 0 < hold.swept_versions < len(covered)
    assert _unheld(s3, project.prefix)  # honestly not held everywhere yet
    s3.proxy.heal()

    # In between, the console already refuses what the hold covers.
    with pytest.raises(errors.Held) as refused:
        erasure.profile_erase(by=admin, user=person, reason="GDPR 17", projects=[project])
    assert f"legal hold #{hold.pk} on project {project.slug} (litigation, C-7)" in refused.value.message
    with pytest.raises(errors.Held):
        removal.file_delete(file=memory["notes"], actor=Actor.person(admin), base_revision=2)
    call_command("legal_hold", "list", "--project", project.slug)
    listed = capsys.readouterr().out
    assert "\tstanding\tproject" in listed and "being placed:" in listed

    # The same placement again: the same hold, finished; nothing is placed twice.
    started = time.monotonic()
    call_command(*place)
    took = time.monotonic() - started
    out = capsys.readouterr().out
    print(f"Placed again ({took:.2f} s):", out)
    assert f"placed legal hold #{hold.pk} on project {project.slug} (the hold recorded before" in out
    hold.refresh_from_db()
    assert hold.state == LegalHold.State.PLACED and hold.storage_enforced and hold.swept_through
    assert LegalHold.objects.count() == 1
    assert AuditEvent.objects.filter(action="legal_hold.place").count() == 1
    assert f"{hold.swept_versions} version(s) held in storage" in out
    now = _versions(s3, project.prefix)
    assert len(now) == len(covered) and all(_held(s3, v) for v in now)
    with pytest.raises(ClientError) as denied:
        s3.client.delete_object(Bucket=s3.bucket, Key=now[0]["Key"], VersionId=now[0]["VersionId"])
    assert denied.value.response["Error"]["Code"] == "AccessDenied"


def test_while_a_hold_is_being_placed_every_way_of_deleting_refuses_and_reconcile_finishes_it(
    s3, project, agent, admin, person, memory, capsys
):
    notes, profile, session = memory["notes"], memory["profile"], memory["session"]
    other = store.file_create(
        project=project, scope="workspace", path="notes/b.md", content="# B\n", actor=Actor.system("t")
    ).file
    s3.proxy.inject("PUT", r"legal-hold", "status", status=503, times=10**6)  # holds never land
    hold, sweep = holds.hold_place(by=admin, project=project, reason="audit", case_reference="A-1")
    assert not sweep.finished and sweep.failed and hold.state == LegalHold.State.PLACING
    assert "already refuse what it covers" in holds.sweep_summary(sweep)
    s3.proxy.heal()
    assert _unheld(s3, project.prefix)
    named = f"legal hold #{hold.pk}"

    checks = {
        "erase": lambda: erasure.profile_erase(by=admin, user=person, reason="r", projects=[project]),
        "delete": lambda: removal.file_delete(file=notes, actor=Actor.person(admin), base_revision=2),
        "rename": lambda: removal.file_rename(
            file=notes, target=other, actor=Actor.person(admin), base_revision=2
        ),
        "expire": lambda: lifecycle.file_expire(file=notes, rule="files 1 days"),
        "prune": lambda: lifecycle.revisions_purge(file=notes, numbers=[1]),
    }
    for name, attempt in checks.items():
        with pytest.raises(errors.Held) as refused:
            attempt()
        assert named in refused.value.message, name
    # Retention of files, history, sessions and kept prompts leaves all of it.
    retention.rule_add(by=admin, project=project, kind="files", glob="workspace/**", days=1)
    retention.rule_add(by=admin, project=project, kind="history", glob="workspace/**", keep_revisions=1)
    retention.rule_add(by=admin, project=project, kind="sessions", days=1)
    retention.rule_add(by=admin, project=project, kind="prompts", days=1)
    Revision.objects.filter(file__project=project).update(created_at=session.created_at.replace(year=2020))
    AgentSession.objects.filter(pk=session.pk).update(created_at=session.created_at.replace(year=2020))
    run = retention.apply(project)
    assert (run.files, run.revisions, run.sessions, run.prompts) == (0, 0, 0, 0) and run.held >= 4
    assert AgentSession.objects.filter(pk=session.pk, prompt_stored=True).exists()
    assert s3.keys(layout.prompt_key(project.prefix, session.prompt_sha256))
    # A restore writes, it deletes nothing: its new version is held from birth.
    store.file_restore(file=notes, number=1, actor=Actor.person(admin), base_revision=2)
    newest = next(v for v in _versions(s3, notes.key) if v["IsLatest"])
    assert _held(s3, newest)

    # reconcile finishes the placement.
    call_command("reconcile", "--project", project.slug)
    out = capsys.readouterr().out
    print("\nreconcile:", out)
    assert f"{project.slug}\tlegal_hold\t#{hold.pk}\t" in out
    hold.refresh_from_db()
    assert hold.state == LegalHold.State.PLACED and not _unheld(s3, project.prefix)
    assert profile.pk and LegalHold.objects.count() == 1
    # A write the console refused to adopt (not text) is kept like the rest while it stands.
    s3.put(other.key, b"caf\xe9\n")
    reconcile.reconcile(project=project)
    refused = RefusedWrite.objects.get(file=other)
    with pytest.raises(errors.Held):
        adoption.refused_write_delete(refused=refused, by=admin)
    assert not _unheld(s3, other.key)


def test_a_hold_released_while_it_is_being_placed_lifts_what_it_held(s3, project, admin, memory):
    # The notes' head versions cannot be held; the rest can.
    s3.proxy.inject("PUT", r"workspace/notes/a\.md\?legal-hold", "status", status=503, times=10**6)
    hold, sweep = holds.hold_place(by=admin, project=project, reason="r")
    assert not sweep.finished and sweep.versions > 0 and sweep.failed == 2
    s3.proxy.heal()
    assert any(_held(s3, v) for v in _versions(s3, project.prefix))
    sweep = holds.hold_release(by=admin, hold=hold, note="wrong project")
    hold.refresh_from_db()
    assert sweep.finished and sweep.releasing and hold.state == LegalHold.State.RELEASED
    assert not any(_held(s3, v) for v in _versions(s3, project.prefix))
    removal.file_delete(file=memory["notes"], actor=Actor.person(admin), base_revision=2)


# --- Large sweeps: a background task with its progress on the page --------------------------------


def test_a_large_hold_goes_on_in_the_background_with_its_progress_on_the_holds_page(
    s3, project, admin, memory, client, monkeypatch
):
    monkeypatch.setattr(holding, "PAGE", 10)
    monkeypatch.setattr(holds, "INLINE_VERSIONS", 10)
    monkeypatch.setattr(holds, "TASK_VERSIONS", 10)
    for n in range(25):
        s3.client.put_object(
            Bucket=s3.bucket, Key=layout.workspace_file_key(project.prefix, "big/log.md"), Body=b"%d\n" % n
        )
    total = len(_versions(s3, project.prefix))
    client.force_login(admin)
    url = reverse("projects:holds", args=[project.slug])
    page = client.post(url, {"reason": "inquiry", "case_reference": "Q-1"}, follow=True)
    text = page.content.decode()
    assert "is being placed" in text and "goes on in the background" in text
    hold = LegalHold.objects.get()
    assert hold.state == LegalHold.State.PLACING and 0 < hold.swept_versions < total
    assert f'id="hold-state-{hold.pk}" data-refresh=' in text  # the row follows the sweep
    assert "js/refresh.js" in text
    progress = [hold.swept_versions]
    while _run_hold_tasks():  # each task sweeps a part and queues the next
        hold.refresh_from_db()
        progress.append(hold.swept_versions)
        if hold.state == LegalHold.State.PLACING:
            assert "being placed" in client.get(url).content.decode()
    print("\nVersions held after each background task:", progress)
    assert progress == sorted(progress) and len(progress) >= 3
    assert hold.state == LegalHold.State.PLACED and hold.swept_versions == total
    assert not _unheld(s3, project.prefix)
    done = client.get(url).content.decode()
    assert f"held in storage ({total} versions)" in done and "data-refresh" not in done
    # The same page in Russian.
    client.cookies["django_language"] = "ru"
    russian = client.get(url).content.decode()
    assert "в хранилище" in russian


# --- Direct writes under a standing hold ---------------------------------------------------------


@pytest.fixture
def runner(s3, project, agent, admin, memory):
    token, raw = bearer.token_create(agent=agent, name="direct", created_by=admin)
    credential, secret = credentials.credentials_issue(token=token, by=admin)
    direct = DirectStorage(
        endpoint_url=s3.direct_url, access_key_id=credential.access_key_id, secret_access_key=secret
    )
    return {"token": raw, "direct": direct}


def _write(runner, s3, file: MemoryFile, session, body: bytes, etag: str | None) -> str:
    written = runner["direct"].write(
        s3.bucket,
        file.key,
        body,
        etag=etag,
        agent=str(session.agent_id),
        session=str(session.pk),
        token=runner["token"],
    )
    assert written.status == "written", written
    return s3.client.head_object(Bucket=s3.bucket, Key=file.key)["ETag"]


def test_a_version_a_runner_writes_and_overwrites_before_any_hook_is_held_by_the_next_pre_hook(
    s3, project, agent, person, admin, memory, runner
):
    hold, sweep = holds.hold_place(by=admin, project=project, reason="litigation")
    assert sweep.finished
    notes, session = memory["notes"], memory["session"]
    notes.refresh_from_db()
    first = _write(runner, s3, notes, session, b"# A\n\nwritten by the runner\n", notes.head_etag)
    _write(runner, s3, notes, session, b"# A\n\nwritten again\n", first)
    gap = _unheld(s3, notes.key)
    assert len(gap) == 2  # both direct versions: the storage was not told
    started = time.monotonic()
    _session, assembly = prehook.hook_pre(agent=agent, user=person)
    took = time.monotonic() - started
    print(f"\nHeld by the next pre hook (its catch-up), which took {took * 1000:.0f} ms")
    assert "written again" in assembly.prompt
    assert not _unheld(s3, notes.key)  # the overwritten one too, not only the head
    assert not _unheld(s3, layout.history_prefix(project.prefix, notes.pk))


def test_with_the_change_feed_a_direct_write_is_held_within_the_stated_bound(
    s3, project, agent, admin, memory, runner
):
    holds.hold_place(by=admin, project=project, reason="litigation")
    notes, session = memory["notes"], memory["session"]
    notes.refresh_from_db()
    with override_settings(MGC_S3_CHANGE_FEED="seaweedfs", MGC_S3_FILER_ADDRESS=s3.server.filer_address):
        try:
            holder = holding.FeedHolder()  # what the events worker runs
            holder.refresh()
            follower = feed.feed_for(s3.bucket)
            deadline = time.monotonic() + 20
            while not follower.following and time.monotonic() < deadline:
                time.sleep(0.01)
            assert follower.following
            # The stream is live and the worker's pool warm once a first write is held.
            warm = layout.workspace_file_key(project.prefix, "warm.md")
            s3.client.put_object(Bucket=s3.bucket, Key=warm, Body=b"warm\n")
            while _unheld(s3, warm) and time.monotonic() < deadline:
                time.sleep(0.01)
            _quiet(follower, project.prefix)
            gaps = []
            etag = notes.head_etag
            for n in range(5):
                before = holder.held
                written = time.monotonic()
                etag = _write(runner, s3, notes, session, b"# A\n\nrun %d\n" % n, etag)
                while holder.held == before and time.monotonic() - written < FEED_BOUND_SECONDS:
                    time.sleep(0.001)
                gaps.append(time.monotonic() - written)
                assert not _unheld(s3, notes.key), f"write {n} not held within {FEED_BOUND_SECONDS} s"
            print("\nWith the change feed, direct writes held after (ms):", [round(g * 1000) for g in gaps])
            assert holder.held >= 5
        finally:
            feed.stop_all()


def test_a_write_no_hook_lists_is_held_by_the_periodic_sweep_and_by_reconcile(
    s3, project, admin, person, memory, capsys
):
    hold, _sweep = holds.hold_place(by=admin, project=project, reason="litigation")
    profile = memory["profile"]
    # Someone with the console's own keys writes the profile twice (no runner may write
    # profiles, so no pre hook lists them).
    s3.client.put_object(Bucket=s3.bucket, Key=profile.key, Body=b"Maria, edited by hand.\n")
    s3.client.put_object(Bucket=s3.bucket, Key=profile.key, Body=b"Maria, edited again.\n")
    assert len(_unheld(s3, profile.key)) == 2
    with override_settings(MGC_HOLD_SWEEP_SECONDS=0):
        assert holds.holds_due() == 1  # the worker's thread, every MGC_HOLD_SWEEP_SECONDS
    started = time.monotonic()
    assert _run_hold_tasks() == 1
    took = time.monotonic() - started
    versions = len(_versions(s3, project.prefix))
    with capsys.disabled():
        print(f"\nThe periodic sweep of a hold over {versions} versions took {took * 1000:.0f} ms")
    assert not _unheld(s3, profile.key)
    hold.refresh_from_db()
    assert hold.state == LegalHold.State.PLACED and hold.swept_versions >= 2

    s3.client.put_object(Bucket=s3.bucket, Key=profile.key, Body=b"Maria, a third time.\n")
    assert _unheld(s3, profile.key)
    call_command("reconcile", "--project", project.slug)
    assert f"legal_hold\t#{hold.pk}\t" in capsys.readouterr().out
    assert not _unheld(s3, profile.key)
    assert MemoryFile.objects.get(pk=profile.pk).head.author_kind == "external"  # adopted as well


# --- After a restore ---------------------------------------------------------------------------


def test_after_a_restore_that_lost_the_s3_holds_legal_hold_sweep_puts_every_one_back_and_is_counted(
    s3, project, admin, memory, capsys
):
    from prometheus_client import REGISTRY

    from projects.governance import restore

    def sample(name: str, **labels) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    hold, _sweep = holds.hold_place(by=admin, project=project, reason="litigation")
    versions = _versions(s3, project.prefix)
    assert hold.state == LegalHold.State.PLACED and all(_held(s3, v) for v in versions)
    # A bucket restored from a copy that kept the versions but not their legal holds.
    for version in versions:
        s3.client.put_object_legal_hold(
            Bucket=s3.bucket, Key=version["Key"], VersionId=version["VersionId"], LegalHold={"Status": "OFF"}
        )
    report = restore.restore_check()
    lost = [f for f in report.disagreements if f.check == "holds"]
    assert len(lost) == len(versions) and "legal_hold sweep puts it back" in lost[0].problem

    # The periodic sweep looks only at versions written since the hold's last sweep: not enough.
    # (Here they were written seconds before it, in a restored console long before: the hold's
    # mark is moved an hour on, as if they were.)
    LegalHold.objects.filter(pk=hold.pk).update(swept_through=hold.swept_through + dt.timedelta(hours=1))
    refreshed = sample("mgc_sweeps_total", kind="hold_refresh", outcome="done")
    holds.hold_finish(hold)
    assert sample("mgc_sweeps_total", kind="hold_refresh", outcome="done") == refreshed + 1
    assert len(_unheld(s3, project.prefix)) == len(versions)

    placed = sample("mgc_sweeps_total", kind="hold_place", outcome="done")
    held = sample("mgc_swept_total", kind="versions_held")
    call_command("legal_hold", "sweep", "--project", project.slug)
    out = capsys.readouterr().out
    assert f"swept legal hold #{hold.pk} on project {project.slug}: {len(versions)} version(s) held" in out
    assert not _unheld(s3, project.prefix)
    hold.refresh_from_db()
    assert hold.state == LegalHold.State.PLACED and hold.storage_enforced
    assert hold.swept_versions == len(versions) and LegalHold.objects.count() == 1
    assert sample("mgc_sweeps_total", kind="hold_place", outcome="done") == placed + 1
    assert sample("mgc_swept_total", kind="versions_held") == held + len(versions)
    assert not [f for f in restore.restore_check().disagreements if f.check == "holds"]
