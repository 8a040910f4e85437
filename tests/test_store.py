"""The store against a real S3-speaking server over HTTP (moto's server on 127.0.0.1)."""

import hashlib

import pytest
from django.core.exceptions import ValidationError

from projects.audit import Actor
from projects.memory import errors, history, layout, reading, removal, store
from projects.memory.storage import storage_for
from projects.models import AuditEvent, MemoryFile, Revision, SearchText
from tests.conftest import reload_file

pytestmark = pytest.mark.django_db


def test_create_writes_head_and_snapshot_objects(s3, project, actor):
    revision = store.file_create(
        project=project,
        scope="workspace",
        path="events/2026-12-01.md",
        content="# Outage\n",
        actor=actor,
        message="first",
    )
    file = revision.file
    assert file.key == f"projects/{project.id}/workspace/events/2026-12-01.md"
    assert s3.get(file.key) == b"# Outage\n"
    sha = hashlib.sha256(b"# Outage\n").hexdigest()
    assert revision.snapshot_key == f"projects/{project.id}/_history/{file.id}/1-{sha}.md"
    assert s3.get(revision.snapshot_key) == b"# Outage\n"
    assert (revision.number, revision.size, revision.sha256) == (1, 9, sha)
    assert revision.author_user.username == "maria"


def test_save_history_and_read_any_revision(s3, workspace_file, actor):
    store.file_save(file=workspace_file, content="second\n", actor=actor, base_revision=1)
    store.file_save(file=workspace_file, content="third\n", actor=actor, base_revision=2, message="more")
    page = history.file_history(workspace_file)
    assert [r.number for r in page] == [3, 2, 1]
    assert [reading.revision_read(r) for r in page] == ["third\n", "second\n", "first\n"]
    content = reading.file_read(reload_file(workspace_file))
    assert (content.text, content.revision.number, content.drifted) == ("third\n", 3, False)
    assert s3.get(workspace_file.key) == b"third\n"


def test_the_search_head_follows_saves_deletion_and_revival(s3, workspace_file, actor):
    def heads():
        rows = SearchText.objects.filter(file=workspace_file).order_by("number")
        return [(row.number, row.is_head) for row in rows]

    store.file_save(file=workspace_file, content="second\n", actor=actor, base_revision=1)
    store.file_append(file=reload_file(workspace_file), addition="more", actor=actor)
    assert heads() == [(1, False), (2, False), (3, True)]
    removal.file_delete(file=reload_file(workspace_file), actor=actor, base_revision=3)
    assert heads() == [(1, False), (2, False), (3, False)]
    store.file_create(
        project=workspace_file.project,
        scope="workspace",
        path="notes/today.md",
        content="back\n",
        actor=actor,
    )
    assert heads() == [(1, False), (2, False), (3, False), (5, True)]
    other = store.file_create(
        project=workspace_file.project, scope="workspace", path="notes/other.md", content="x\n", actor=actor
    )
    assert SearchText.objects.get(file_id=other.file_id).is_head  # another file's head stays
    assert heads()[-1] == (5, True)


def test_history_is_paginated(s3, workspace_file, actor):
    for n in range(2, 8):
        store.file_save(file=workspace_file, content=f"v{n}\n", actor=actor, base_revision=n - 1)
    page = history.file_history(workspace_file, page=2, per_page=3)
    assert [r.number for r in page] == [4, 3, 2]
    assert page.paginator.num_pages == 3
    assert [r.number for r in history.file_history(workspace_file, page="nonsense", per_page=3)] == [7, 6, 5]


def test_restore_writes_a_new_revision_with_old_content(s3, workspace_file, actor):
    store.file_save(file=workspace_file, content="oops\n", actor=actor, base_revision=1)
    revision = store.file_restore(file=workspace_file, number=1, actor=actor, base_revision=2)
    assert (revision.number, revision.restored_from) == (3, 1)
    assert reading.file_read(reload_file(workspace_file)).text == "first\n"
    assert s3.get(workspace_file.key) == b"first\n"
    assert AuditEvent.objects.filter(action="file.restore", details__revision=3).exists()


def test_restore_of_unknown_revision_is_refused(s3, workspace_file, actor):
    with pytest.raises(ValidationError):
        store.file_restore(file=workspace_file, number=42, actor=actor, base_revision=1)


def test_delete_is_a_tombstone_and_keeps_history(s3, workspace_file, actor):
    first_snapshot = workspace_file.head.snapshot_key
    tomb = removal.file_delete(file=workspace_file, actor=actor, base_revision=1, message="obsolete")
    assert tomb.is_deletion and tomb.number == 2
    assert workspace_file.key not in s3.keys()
    assert first_snapshot in s3.keys()
    assert reading.file_read(reload_file(workspace_file)).text == ""
    with pytest.raises(errors.FileDeleted):
        removal.file_delete(file=reload_file(workspace_file), actor=actor, base_revision=2)
    # Re-creating writes revision 3 on top of the tombstone.
    again = store.file_create(
        project=workspace_file.project,
        scope="workspace",
        path="notes/today.md",
        content="back\n",
        actor=actor,
    )
    assert again.number == 3 and s3.get(workspace_file.key) == b"back\n"


def test_cyrillic_content_round_trips(s3, project, actor):
    text = "# Профиль\n\nПредпочитает краткие отчёты на русском. Часовой пояс: Москва.\n"
    revision = store.file_create(
        project=project, scope="workspace", path="заметки/итоги.md", content=text, actor=actor
    )
    assert s3.get(revision.file.key).decode("utf-8") == text
    assert reading.file_read(reload_file(revision.file)).text == text
    assert revision.size == len(text.encode("utf-8"))


def test_size_cap_is_enforced(s3, workspace_file, actor, settings):
    settings.MGC_MAX_FILE_BYTES = 1024
    store.file_save(file=workspace_file, content="x" * 1024, actor=actor, base_revision=1)
    with pytest.raises(errors.ContentRejected, match="limit is 1,024 bytes"):
        store.file_save(file=workspace_file, content="я" * 513, actor=actor, base_revision=2)
    assert reload_file(workspace_file).head.number == 2


def test_non_utf8_and_binary_content_is_refused(s3, workspace_file, actor):
    with pytest.raises(errors.ContentRejected, match="not UTF-8"):
        store.file_save(file=workspace_file, content=b"caf\xe9\n", actor=actor, base_revision=1)
    with pytest.raises(errors.ContentRejected, match="NUL"):
        store.file_save(file=workspace_file, content=b"\x89PNG\x00\x00", actor=actor, base_revision=1)
    assert s3.get(workspace_file.key) == b"first\n"
    assert Revision.objects.filter(file=workspace_file).count() == 1


def test_stale_base_revision_gets_conflict_and_keeps_text(s3, workspace_file, actor):
    store.file_save(file=workspace_file, content="theirs\n", actor=actor, base_revision=1)
    with pytest.raises(errors.SaveConflict) as info:
        store.file_save(file=workspace_file, content="mine\n", actor=actor, base_revision=1)
    conflict = info.value
    assert conflict.reason == "stale_base"
    assert (conflict.head_text, conflict.your_text) == ("theirs\n", "mine\n")
    assert conflict.head.number == 2 and conflict.base_revision == 1
    assert s3.get(workspace_file.key) == b"theirs\n"
    assert Revision.objects.filter(file=workspace_file).count() == 2


def test_direct_write_to_bucket_is_recorded_as_external_then_conflict(s3, workspace_file, actor):
    s3.put(workspace_file.key, b"sandbox wrote this\n")
    with pytest.raises(errors.SaveConflict) as info:
        store.file_save(file=workspace_file, content="mine\n", actor=actor, base_revision=1)
    conflict = info.value
    assert conflict.reason == "external_change"
    assert (conflict.head_text, conflict.your_text) == ("sandbox wrote this\n", "mine\n")
    external = Revision.objects.get(file=workspace_file, number=2)
    assert external.author_kind == Revision.AuthorKind.EXTERNAL
    assert reading.revision_read(external) == "sandbox wrote this\n"
    assert s3.get(workspace_file.key) == b"sandbox wrote this\n"
    # No orphan snapshot of the refused save is left behind.
    history = s3.keys(layout.history_prefix(workspace_file.project.prefix, workspace_file.pk))
    assert len(history) == 2
    # Saving on top of the external revision now works.
    store.file_save(file=workspace_file, content="merged\n", actor=actor, base_revision=2)
    assert s3.get(workspace_file.key) == b"merged\n"


def test_saving_the_heads_own_text_makes_no_revision_and_writes_nothing(s3, workspace_file, actor):
    history = layout.history_prefix(workspace_file.project.prefix, workspace_file.pk)
    etag = s3.client.head_object(Bucket=s3.bucket, Key=workspace_file.key)["ETag"]
    audited = AuditEvent.objects.count()
    revision = store.file_save(file=workspace_file, content="first\n", actor=actor, base_revision=1)
    assert revision.number == 1  # the head, returned: its number is the base
    assert Revision.objects.filter(file=workspace_file).count() == 1
    assert s3.client.head_object(Bucket=s3.bucket, Key=workspace_file.key)["ETag"] == etag
    assert len(s3.keys(history)) == 1
    assert AuditEvent.objects.count() == audited
    # A restore of that same text is a person's decision: it is recorded.
    assert store.file_restore(file=workspace_file, number=1, actor=actor, base_revision=1).number == 2


def test_the_heads_text_over_a_direct_write_is_a_conflict_not_a_silent_no_op(s3, workspace_file, actor):
    s3.put(workspace_file.key, b"sandbox wrote this\n")
    with pytest.raises(errors.SaveConflict) as info:
        store.file_save(file=workspace_file, content="first\n", actor=actor, base_revision=1)
    assert info.value.reason == "external_change"
    assert s3.get(workspace_file.key) == b"sandbox wrote this\n"
    assert Revision.objects.get(file=workspace_file, number=2).author_kind == "external"


def test_read_serves_recorded_head_while_bucket_drifted(s3, workspace_file):
    s3.put(workspace_file.key, b"direct\n")
    content = reading.file_read(reload_file(workspace_file))
    assert (content.text, content.drifted) == ("first\n", True)


def test_create_over_an_untracked_object_adopts_it_and_conflicts(s3, project, actor):
    key = layout.workspace_file_key(project.prefix, "found.md")
    s3.put(key, b"already here\n")
    with pytest.raises(errors.SaveConflict) as info:
        store.file_create(project=project, scope="workspace", path="found.md", content="new\n", actor=actor)
    assert info.value.head_text == "already here\n"
    assert s3.get(key) == b"already here\n"


def test_bad_workspace_path_is_refused_before_any_write(s3, project, actor):
    with pytest.raises(ValidationError):
        store.file_create(project=project, scope="workspace", path="../other/x.md", content="x", actor=actor)
    assert s3.keys() == []
    assert not MemoryFile.objects.exists()


def test_agent_and_user_files_use_their_layout_keys(s3, project, agent, person, actor):
    soul = store.file_create(
        project=project, scope="agent", agent=agent, path="SOUL.md", content="# Soul\n", actor=actor
    )
    profile = store.file_create(
        project=project, scope="user", user=person, path="USER.md", content="# Maria\n", actor=actor
    )
    assert soul.file.key == f"projects/{project.id}/agents/{agent.id}/SOUL.md"
    assert profile.file.key == f"projects/{project.id}/users/{person.id}/USER.md"


def test_every_write_is_audited(s3, workspace_file, actor):
    store.file_save(file=workspace_file, content="2\n", actor=actor, base_revision=1)
    store.file_restore(file=workspace_file, number=1, actor=actor, base_revision=2)
    removal.file_delete(file=reload_file(workspace_file), actor=actor, base_revision=3)
    events = list(
        AuditEvent.objects.filter(object_id=str(workspace_file.pk))
        .order_by("id")
        .values_list("action", "details__revision", "actor_label")
    )
    assert events == [
        ("file.save", 1, "maria"),
        ("file.save", 2, "maria"),
        ("file.restore", 3, "maria"),
        ("file.delete", 4, "maria"),
    ]


def test_agent_author_carries_session(s3, project, agent):
    revision = store.file_create(
        project=project,
        scope="workspace",
        path="log.md",
        content="x\n",
        actor=Actor.for_agent(agent, "sess-1"),
    )
    assert (revision.author_kind, revision.author_agent, revision.session_ref) == ("agent", agent, "sess-1")
    assert revision.author_label == "agent:analyst"


def test_project_with_own_bucket_writes_there(s3, make_project, actor):
    s3.client.create_bucket(Bucket="tenders-own")
    own = make_project(bucket="tenders-own", key_prefix="tenders/")
    revision = store.file_create(project=own, scope="workspace", path="a.md", content="a\n", actor=actor)
    assert revision.file.key == "tenders/workspace/a.md"
    assert s3.client.get_object(Bucket="tenders-own", Key="tenders/workspace/a.md")["Body"].read() == b"a\n"
    assert s3.keys() == []


def test_the_pre_hooks_lean_requests_name_and_read_objects_as_the_client_does(s3, project):
    # The pre hook's LISTs and snapshot GETs skip botocore's client (storage.etags and
    # storage.body); keys S3 would send URL-encoded, a missing object and a refusal must come
    # out as with the client.
    storage = storage_for(project)
    prefix = f"{project.prefix}workspace/"
    for name in ("a b+c%20d.md", "é/ü.md", "x\x01y.md", "plain.md"):
        s3.put(prefix + name, name.encode())
    s3.put(f"{project.prefix}workspaces.md", b"outside the prefix")
    assert storage.etags(prefix) == {o["Key"]: o["ETag"] for o in storage.listing(prefix)}
    assert len(storage.etags(prefix)) == 4
    assert storage.body(prefix + "é/ü.md") == "é/ü.md".encode()  # the snapshot reads' path
    assert storage.body(prefix + "a b+c%20d.md") == b"a b+c%20d.md"
    assert storage.body(prefix + "missing.md") is None is storage.read(prefix + "missing.md")
    storage.bucket_name = "no-such-bucket"
    try:
        with pytest.raises(errors.StorageUnavailable):
            storage.etags(prefix)
    finally:
        storage.bucket_name = s3.bucket
