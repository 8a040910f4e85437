"""Failures in the middle of a save: S3 answering errors or gone, the database refusing.

Faults are injected on the wire (the proxy in front of the S3 server) or in the database (a
trigger), never by patching the console's functions.
"""

import pytest
from django.db import DatabaseError

from projects.memory import errors, layout, reading, reconcile, store
from projects.models import AuditEvent, Revision
from tests.conftest import reload_file

pytestmark = pytest.mark.django_db(transaction=True)

SNAPSHOT = r"/_history/"
HEAD = r"/workspace/notes/today\.md"


def _assert_old_head_intact(s3, file):
    file = reload_file(file)
    assert file.head.number == 1
    assert Revision.objects.filter(file=file).count() == 1
    assert reading.file_read(file).text == "first\n"
    assert s3.get(file.key) == b"first\n"


def test_snapshot_write_failing_leaves_old_head(s3, workspace_file, actor):
    s3.proxy.inject("PUT", SNAPSHOT, status=503)
    with pytest.raises(errors.StorageUnavailable, match="nothing was changed"):
        store.file_save(file=workspace_file, content="second\n", actor=actor, base_revision=1)
    _assert_old_head_intact(s3, workspace_file)


def test_head_write_failing_leaves_old_head_and_reconcile_removes_orphan(s3, workspace_file, actor):
    s3.proxy.inject("PUT", HEAD, status=500)
    # The save removes its own snapshot once it sees the head was not written; when that
    # delete fails too, the orphan stays for reconcile.
    s3.proxy.inject("DELETE", SNAPSHOT, status=503)
    with pytest.raises(errors.StorageUnavailable, match="nothing was changed"):
        store.file_save(file=workspace_file, content="second\n", actor=actor, base_revision=1)
    _assert_old_head_intact(s3, workspace_file)
    history = layout.history_prefix(workspace_file.project.prefix, workspace_file.pk)
    assert len(s3.keys(history)) == 2  # the orphan snapshot of the failed save
    findings = reconcile.reconcile(project=workspace_file.project, orphan_grace_seconds=0)
    assert [f.kind for f in findings] == ["orphan_snapshot"]
    assert s3.keys(history) == [workspace_file.head.snapshot_key]
    _assert_old_head_intact(s3, workspace_file)


def test_connection_dropped_on_head_write_is_a_clear_error(s3, workspace_file, actor):
    s3.proxy.inject("PUT", HEAD, action="drop")
    with pytest.raises(errors.StorageUnavailable):
        store.file_save(file=workspace_file, content="second\n", actor=actor, base_revision=1)
    _assert_old_head_intact(s3, workspace_file)


def test_s3_down_refuses_save_and_read_clearly(s3, workspace_file, actor):
    s3.proxy.down = True
    with pytest.raises(errors.StorageUnavailable):
        store.file_save(file=workspace_file, content="second\n", actor=actor, base_revision=1)
    with pytest.raises(errors.StorageUnavailable):
        reading.file_read(reload_file(workspace_file))
    s3.proxy.down = False
    _assert_old_head_intact(s3, workspace_file)


def test_slow_s3_times_out_instead_of_hanging(s3, workspace_file, actor):
    s3.proxy.inject("PUT", SNAPSHOT, action="stall", delay=4)  # read timeout is 3 s
    with pytest.raises(errors.StorageUnavailable):
        store.file_save(file=workspace_file, content="second\n", actor=actor, base_revision=1)
    _assert_old_head_intact(s3, workspace_file)


def test_database_failing_after_head_write_keeps_old_head_then_reconcile_finishes_save(
    s3, workspace_file, actor, revision_inserts_fail
):
    with pytest.raises(DatabaseError):
        store.file_save(
            file=workspace_file, content="second\n", actor=actor, base_revision=1, message="half done"
        )
    file = reload_file(workspace_file)
    assert file.head.number == 1 and Revision.objects.filter(file=file).count() == 1
    # S3 holds the new head, but readers still get the recorded head, flagged as drifted.
    assert s3.get(file.key) == b"second\n"
    content = reading.file_read(file)
    assert (content.text, content.drifted) == ("first\n", True)

    revision_inserts_fail.stop()  # the database works again

    findings = reconcile.reconcile(project=file.project, orphan_grace_seconds=0)
    assert [f.kind for f in findings] == ["adopted"]
    revision = Revision.objects.get(file=file, number=2)
    # Finished as the person's own save, from the snapshot's metadata: nothing lost.
    assert (revision.author_kind, revision.author_user, revision.message) == (
        "person",
        actor.user,
        "half done",
    )
    assert reading.file_read(reload_file(file)).text == "second\n"
    assert AuditEvent.objects.filter(action="file.save_recovered").count() == 1


def test_next_save_after_half_done_save_recovers_it_first(s3, workspace_file, actor, revision_inserts_fail):
    with pytest.raises(DatabaseError):
        store.file_save(file=workspace_file, content="second\n", actor=actor, base_revision=1)
    revision_inserts_fail.stop()
    # The editor still shows base 1; saving again finds the unrecorded head and says so.
    with pytest.raises(errors.SaveConflict) as info:
        store.file_save(
            file=reload_file(workspace_file), content="second, edited\n", actor=actor, base_revision=1
        )
    assert info.value.head_text == "second\n"
    assert info.value.your_text == "second, edited\n"
    assert Revision.objects.get(file=workspace_file, number=2).author_kind == "person"
