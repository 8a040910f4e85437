"""reconcile: external changes, files written straight to the bucket, and the command."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from projects.memory import layout, reading, reconcile
from projects.models import MemoryFile, RefusedWrite, Revision

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
