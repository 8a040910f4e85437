"""reconcile: external changes, files written straight to the bucket, and the command."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from projects.memory import layout, reconcile, store
from projects.models import MemoryFile, Revision

pytestmark = pytest.mark.django_db


def test_external_change_becomes_an_external_revision(s3, workspace_file):
    s3.put(workspace_file.key, b"edited in the bucket\n")
    findings = reconcile.reconcile(project=workspace_file.project)
    assert [f.kind for f in findings] == ["adopted"]
    revision = Revision.objects.get(file=workspace_file, number=2)
    assert revision.author_kind == Revision.AuthorKind.EXTERNAL
    assert store.revision_read(revision) == "edited in the bucket\n"
    assert reconcile.reconcile(project=workspace_file.project) == []  # idempotent


def test_external_delete_becomes_a_tombstone(s3, workspace_file):
    s3.client.delete_object(Bucket=s3.bucket, Key=workspace_file.key)
    reconcile.reconcile(project=workspace_file.project)
    head = MemoryFile.objects.get(pk=workspace_file.pk).head
    assert head.is_deletion and head.author_kind == "external"


def test_non_utf8_external_content_is_kept_and_marked(s3, workspace_file):
    s3.put(workspace_file.key, b"caf\xe9\n")
    reconcile.reconcile(project=workspace_file.project)
    revision = Revision.objects.get(file=workspace_file, number=2)
    assert s3.get(revision.snapshot_key) == b"caf\xe9\n"


def test_new_files_written_by_a_sandbox_are_adopted(s3, project, agent, person):
    s3.put(layout.workspace_file_key(project.prefix, "sandbox/new.md"), b"from the sandbox\n")
    s3.put(layout.user_file_key(project.prefix, person.pk), b"# Maria\n")
    s3.put(f"{project.prefix}stray.bin", b"\x00")
    s3.put(layout.user_file_key(project.prefix, 999), b"# nobody\n")
    findings = {f.key.removeprefix(project.prefix): f.kind
                for f in reconcile.reconcile(project=project)}
    assert findings == {
        "workspace/sandbox/new.md": "untracked_adopted",
        f"users/{person.pk}/USER.md": "untracked_adopted",
        "stray.bin": "outside_layout",
        # check_isolation calls it foreign too: both ask reconcile.classify now
        "users/999/USER.md": "foreign",
    }
    adopted = MemoryFile.objects.get(project=project, path="sandbox/new.md")
    assert adopted.head.author_kind == "external"
    assert store.file_read(adopted).text == "from the sandbox\n"


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
