"""reconcile: external changes, files written straight to the bucket, and the command."""

import os
import signal
import subprocess
import sys
import time
import uuid
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from projects.audit import Actor
from projects.governance import holds, isolation
from projects.memory import errors, layout, reading, reconcile, store
from projects.models import AgentSession, LegalHold, MemoryFile, RefusedWrite, Revision
from projects.runners import hooks
from tests.conftest import ACCESS_KEY, SECRET_KEY

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.django_db


def test_external_change_becomes_an_external_revision(s3, workspace_file):
    s3.put(workspace_file.key, b"edited in the bucket\n")
    findings = reconcile.reconcile(project=workspace_file.project)
    assert [f.kind for f in findings] == ["adopted"]
    revision = Revision.objects.get(file=workspace_file, number=2)
    assert revision.author_kind == Revision.AuthorKind.EXTERNAL
    assert reading.revision_read(revision) == "edited in the bucket\n"
    assert reconcile.reconcile(project=workspace_file.project) == []  # idempotent


def test_external_delete_becomes_a_tombstone(s3, workspace_file):
    s3.client.delete_object(Bucket=s3.bucket, Key=workspace_file.key)
    reconcile.reconcile(project=workspace_file.project)
    head = MemoryFile.objects.get(pk=workspace_file.pk).head
    assert head.is_deletion and head.author_kind == "external"


def test_non_utf8_external_content_is_refused_and_the_head_stays(s3, workspace_file):
    """A save would refuse bytes that are not UTF-8; adoption refuses them too (it used to
    adopt them marked not_utf8): recorded as a refused write, the head unchanged."""
    head = workspace_file.head
    s3.put(workspace_file.key, b"caf\xe9\n")
    reconcile.reconcile(project=workspace_file.project)
    file = MemoryFile.objects.get(pk=workspace_file.pk)
    assert file.head == head and not Revision.objects.filter(file=file, number=2).exists()
    refused = RefusedWrite.objects.get(file=file)
    assert (refused.reason, refused.size, refused.writer_label) == ("not_text", 5, "external")
    assert refused.detail == {"position": 3} and file.refused_etag == refused.etag
    assert reading.file_read(file).text == reading.revision_read(head)
    kinds = {
        item.key: item.kind
        for item in reconcile.classify(
            file.project, s3.client.list_objects_v2(Bucket=s3.bucket, Prefix=file.project.prefix)["Contents"]
        )
    }
    assert kinds[file.key] == "refused"


def test_new_files_written_by_a_sandbox_are_adopted(s3, project, agent, person):
    s3.put(layout.workspace_file_key(project.prefix, "sandbox/new.md"), b"from the sandbox\n")
    s3.put(layout.user_file_key(project.prefix, person.pk), b"# Maria\n")
    s3.put(f"{project.prefix}stray.bin", b"\x00")
    s3.put(layout.user_file_key(project.prefix, 999), b"# nobody\n")
    findings = {f.key.removeprefix(project.prefix): f.kind for f in reconcile.reconcile(project=project)}
    assert findings == {
        "workspace/sandbox/new.md": "untracked_adopted",
        f"users/{person.pk}/USER.md": "untracked_adopted",
        "stray.bin": "outside_layout",
        # check_isolation calls it foreign too: both ask reconcile.classify now
        "users/999/USER.md": "foreign",
    }
    adopted = MemoryFile.objects.get(project=project, path="sandbox/new.md")
    assert adopted.head.author_kind == "external"
    assert reading.file_read(adopted).text == "from the sandbox\n"


def test_recent_orphan_snapshot_is_left_for_a_running_save(s3, workspace_file):
    orphan = layout.snapshot_key(workspace_file.project.prefix, workspace_file.pk, 2, "b" * 64)
    s3.put(orphan, b"in flight\n")
    findings = reconcile.reconcile(project=workspace_file.project, orphan_grace_seconds=600)
    assert [(f.kind, f.detail) for f in findings] == [("orphan_snapshot", "recent, left for now")]
    assert orphan in s3.keys()


def test_reconcile_command_reports_findings(s3, workspace_file):
    s3.put(workspace_file.key, b"direct\n")
    out = StringIO()
    call_command("reconcile", "--project", workspace_file.project.slug, stdout=out)
    assert "adopted" in out.getvalue() and "1 finding(s)" in out.getvalue()
    with pytest.raises(CommandError):
        call_command("reconcile", "--project", "no-such-project", stdout=out)


# --- A first save that never committed (issue 35, point 7) ----------------------------------------


def _history_of_unrecorded(s3, project) -> list[str]:
    known = {str(pk) for pk in MemoryFile.objects.values_list("pk", flat=True)}
    history = layout.history_root(project.prefix)
    return [key for key in s3.keys(history) if key[len(history) :].split("/")[0] not in known]


def _repairs(project) -> dict[str, tuple[str, str]]:
    return {f.key: (f.kind, f.detail) for f in reconcile.reconcile(project=project, orphan_grace_seconds=0)}


def _findings(project) -> list[tuple[str, str]]:
    return [(f.kind, f.severity) for f in isolation.check_isolation([project])]


@pytest.mark.db_independent
def test_a_first_save_whose_snapshot_answer_was_lost_leaves_an_orphan_that_reconcile_clears(
    s3, project, agent, person, capsys
):
    """The post hook makes a new file's record in the save's own transaction, so a worker
    that dies after the snapshot PUT (here: its answer dropped on the way back, and the
    request aborted) leaves a snapshot of a file id that has no record at all."""
    s3.lock()  # every version must go, not only the current one
    session = AgentSession.objects.create(agent=agent, user=person, prompt_sha256="0" * 64)
    s3.proxy.inject("PUT", r"/_history/", "lose")
    with pytest.raises(errors.StorageUnavailable):
        hooks.hook_post(
            session=session, writes=[hooks.WriteRequest("workspace/new/first.md", "replace", "x\n")]
        )
    assert not MemoryFile.objects.filter(path="new/first.md").exists()
    [orphan] = _history_of_unrecorded(s3, project)
    assert _findings(project) == [("orphan_snapshot", "warning")]  # a leftover, not a breach

    # A save still running looks the same: the grace period leaves it alone.
    findings = reconcile.reconcile(project=project, orphan_grace_seconds=600)
    assert [(f.kind, f.key, f.detail) for f in findings] == [
        ("orphan_snapshot", orphan, "recent, left for now")
    ]
    call_command("reconcile", "--project", project.slug, "--orphan-grace", "0")
    assert f"orphan_snapshot\t{orphan}\tdeleted: no revision uses it" in capsys.readouterr().out
    assert s3.client.list_object_versions(Bucket=s3.bucket, Prefix=orphan).get("Versions", []) == []
    assert _findings(project) == []


@pytest.mark.db_independent
def test_an_orphan_under_a_hold_and_another_projects_snapshot_are_left_alone(
    s3, project, make_project, admin, workspace_file
):
    s3.lock()
    other = make_project(slug="tenders")
    theirs = store.file_create(
        project=other, scope="workspace", path="a.md", content="theirs\n", actor=Actor.system("t")
    ).file
    # A key under this project's prefix naming the other project's file (written by hand).
    foreign = layout.snapshot_key(project.prefix, theirs.pk, 1, "c" * 64)
    s3.put(foreign, b"not ours\n")
    never = layout.snapshot_key(project.prefix, uuid.uuid4(), 1, "d" * 64)
    s3.put(never, b"a first save that never committed\n")
    holds.hold_place(by=admin, project=project, reason="litigation")
    findings = {
        f.key: (f.kind, f.detail) for f in reconcile.reconcile(project=project, orphan_grace_seconds=0)
    }
    assert findings[foreign][0] == "foreign"
    assert findings[never] == ("orphan_snapshot", f"kept: legal hold #{LegalHold.objects.get().pk} covers it")
    assert foreign in s3.keys() and never in s3.keys()
    holds.hold_release(by=admin, hold=LegalHold.objects.get())
    findings = {
        f.key: (f.kind, f.detail) for f in reconcile.reconcile(project=project, orphan_grace_seconds=0)
    }
    assert findings[never] == ("orphan_snapshot", "deleted: no revision uses it")
    assert findings[foreign][0] == "foreign" and foreign in s3.keys()  # never touched


KILLED_SAVE = """
import sys
import django
django.setup()
from projects.models import AgentSession
from projects.runners import hooks
session = AgentSession.objects.select_related("agent__project").get(pk=sys.argv[1])
hooks.hook_post(session=session, writes=[hooks.WriteRequest("workspace/new/first.md", "replace", "first\\n")])
"""


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="a second process needs a database it can reach"
)
@pytest.mark.parametrize("head", ["never written", "written after the worker died"])
def test_a_worker_killed_during_a_files_first_save_leaves_nothing_reconcile_cannot_clear(
    s3, project, agent, person, head
):
    """A real process runs a post hook creating a file and is SIGKILLed while its head PUT is
    held up at the proxy, after its snapshot landed: the head is either never written, or
    written when the proxy lets the request through after the worker is gone."""
    session = AgentSession.objects.create(agent=agent, user=person, prompt_sha256="0" * 64)
    target = layout.workspace_file_key(project.prefix, "new/first.md")
    if head == "never written":
        s3.proxy.inject("PUT", rf"/{target}$", "stall", delay=20)
    else:
        s3.proxy.inject("PUT", rf"/{target}$", "delay", delay=1.0)
    db = connection.settings_dict
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MGC_", "DJANGO_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="memoryadmin.settings",
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        MGC_S3_ENDPOINT_URL=s3.proxy.url,
        MGC_S3_BUCKET=s3.bucket,
        MGC_S3_ACCESS_KEY_ID=ACCESS_KEY,
        MGC_S3_SECRET_ACCESS_KEY=SECRET_KEY,
        MGC_S3_MAX_ATTEMPTS="1",
        MGC_S3_READ_TIMEOUT="60",
        MGC_LOG_LEVEL="ERROR",
    )
    worker = subprocess.Popen([sys.executable, "-c", KILLED_SAVE, str(session.pk)], cwd=ROOT, env=env)
    try:
        deadline = time.monotonic() + 60
        while ("PUT", f"/{s3.bucket}/{target}") not in s3.proxy.requests:
            assert worker.poll() is None and time.monotonic() < deadline, (
                "the save never reached its head PUT"
            )
            time.sleep(0.01)
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
    finally:
        if worker.poll() is None:
            worker.kill()
    if head != "never written":
        deadline = time.monotonic() + 10
        while target not in s3.keys():  # the proxy sends it on after the worker died
            assert time.monotonic() < deadline
            time.sleep(0.05)
    s3.proxy.heal()
    assert not MemoryFile.objects.filter(path="new/first.md").exists()  # its record died with it
    assert len(_history_of_unrecorded(s3, project)) == 1
    reconcile.reconcile(project=project, orphan_grace_seconds=0)
    assert isolation.check_isolation([project]) == []
    assert _history_of_unrecorded(s3, project) == []
    if head != "never written":  # what reached the bucket is adopted, not lost
        adopted = MemoryFile.objects.get(path="new/first.md")
        assert reading.file_read(adopted).text == "first\n"
