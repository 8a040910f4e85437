"""Memory over its whole life, against real SeaweedFS: retention rules that expire exactly what
their preview lists (safe to repeat, safe to stop), legal holds the storage itself enforces
(S3 Object Lock), and erasure of a person in every project."""

import datetime as dt
import json

import pytest
from botocore.exceptions import ClientError
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from projects.audit import Actor, audit_prune, audit_verify
from projects.governance import erasure, holds, retention
from projects.memory import errors, layout, reading, reconcile, records, removal, store
from projects.models import (
    AgentSession,
    AuditEvent,
    IdempotencyRecord,
    LegalHold,
    Membership,
    MemoryFile,
    Revision,
)
from projects.runners import prehook

pytestmark = pytest.mark.django_db

DAY = dt.timedelta(days=1)


def _aged(file_or_revision_qs, days: int) -> None:
    """Make revisions look `days` old (retention reads created_at)."""
    file_or_revision_qs.update(created_at=timezone.now() - dt.timedelta(days=days))


@pytest.fixture
def workspace(s3, project, agent, person, admin):
    system = Actor.system("test")
    made = {}
    for path, age in (
        ("logs/tools.md", 40),
        ("logs/errors.md", 10),
        ("notes/old.md", 400),
        ("notes/fresh.md", 1),
    ):
        revision = store.file_create(
            project=project, scope="workspace", path=path, content=f"# {path}\n", actor=system
        )
        _aged(Revision.objects.filter(pk=revision.pk), age)
        made[path] = revision.file
    store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="Maria prefers UTC.\n",
        actor=Actor.person(person),
    )
    return made


def _expired(project) -> set[str]:
    return {
        f.path
        for f in MemoryFile.objects.filter(project=project).select_related("head")
        if f.head and f.head.expired_rule
    }


def test_a_rule_expires_exactly_what_its_preview_listed_and_a_second_run_does_nothing(
    s3, project, admin, workspace
):
    retention.rule_add(by=admin, project=project, kind="files", glob="workspace/logs/**", days=30)
    [row] = retention.preview(project)
    listed = {item.label for item in row["today"].due}
    assert listed == {"workspace/logs/tools.md"}
    assert {item.label for item in row["soon"]} == {"workspace/logs/errors.md"}

    run = retention.apply(project)
    assert run.files == 1 and _expired(project) == {"logs/tools.md"}
    tools = MemoryFile.objects.get(pk=workspace["logs/tools.md"].pk)
    head = tools.head
    assert head.is_deletion and head.expired_rule == "files workspace/logs/** 30 days"
    assert head.message.startswith("Expired under the retention rule files workspace/logs/**")
    # Every object of the file is gone: head and snapshot; the records stay, texts purged.
    assert tools.key not in s3.keys(project.prefix)
    assert not [k for k in s3.keys(layout.history_prefix(project.prefix, tools.pk))]
    assert Revision.objects.get(file=tools, number=1).purged_at is not None
    with pytest.raises(errors.RevisionExpired):
        reading.revision_read(Revision.objects.get(file=tools, number=1))
    # Nothing else was touched.
    assert s3.get(workspace["notes/old.md"].key) == b"# notes/old.md\n"
    assert AuditEvent.objects.filter(action="file.expire").count() == 1
    assert AuditEvent.objects.get(action="retention.run").details["files"] == 1

    again = retention.apply(project)
    assert (again.files, again.revisions, again.finished) == (0, 0, 0)
    assert _expired(project) == {"logs/tools.md"}
    assert reconcile.reconcile(project=project) == []


def test_history_keeps_the_newest_revisions_and_the_head(s3, project, admin, workspace):
    file = workspace["notes/fresh.md"]
    for n in range(2, 6):
        store.file_save(file=file, content=f"# v{n}\n", actor=Actor.system("t"), base_revision=n - 1)
    _aged(Revision.objects.filter(file=file), 100)
    retention.rule_add(
        by=admin, project=project, kind="history", glob="workspace/notes/*.md", keep_revisions=2
    )
    [row] = retention.preview(project)
    assert [(i.label, i.numbers) for i in row["today"].due] == [("workspace/notes/fresh.md", [1, 2, 3])]
    assert retention.apply(project).revisions == 3
    purged = set(Revision.objects.filter(file=file, purged_at__isnull=False).values_list("number", flat=True))
    assert purged == {1, 2, 3}
    assert reading.file_read(MemoryFile.objects.get(pk=file.pk)).text == "# v5\n"
    assert reading.revision_read(Revision.objects.get(file=file, number=4)) == "# v4\n"
    assert retention.apply(project).revisions == 0


def test_a_run_stopped_partway_is_finished_by_the_next_and_nothing_reads_as_external(
    s3, project, admin, workspace
):
    """The expiry's tombstone commits first; S3 then refuses the deletes (the proxy answers
    503): the run stops. The next pre hook and reconcile see a known leftover, not someone's
    write; the next run finishes it."""
    retention.rule_add(by=admin, project=project, kind="files", glob="workspace/**", days=30)
    s3.proxy.inject("DELETE", r"/", times=100)
    with pytest.raises(errors.StorageUnavailable):
        retention.apply(project)
    s3.proxy.heal()
    # The oldest first: notes/old.md's tombstone committed, its deletions refused.
    stopped = MemoryFile.objects.get(pk=workspace["notes/old.md"].pk)
    assert stopped.head.expired_rule and stopped.head_etag  # deletions not done
    assert stopped.key in s3.keys(project.prefix)
    assert reconcile.reconcile(project=project) == []  # not an external change
    assert not Revision.objects.filter(author_kind="external").exists()

    run = retention.apply(project)
    assert run.finished >= 1
    assert _expired(project) == {"logs/tools.md", "notes/old.md"}
    for path in ("logs/tools.md", "notes/old.md"):
        assert workspace[path].key not in s3.keys(project.prefix)
    assert reconcile.reconcile(project=project) == []
    assert retention.apply(project).as_dict() == {
        "files": 0,
        "revisions": 0,
        "sessions": 0,
        "prompts": 0,
        "answers": 0,
        "profiles": 0,
        "held": 0,
        "finished": 0,
    }


def test_a_deleted_file_expires_after_its_delete_and_a_stopped_expiry_of_it_is_finished(
    s3, project, admin, workspace
):
    """A deleted file's texts stay in history; a rule takes them `days` after the delete. The
    run that expires it is stopped (S3 refuses the deletes): the next run finishes it."""
    old = MemoryFile.objects.get(pk=workspace["notes/old.md"].pk)
    removal.file_delete(file=old, actor=Actor.person(admin), base_revision=1)
    retention.rule_add(by=admin, project=project, kind="files", glob="workspace/notes/old.md", days=30)
    [row] = retention.preview(project)
    assert not row["today"].due and {i.label for i in row["soon"]} == {"workspace/notes/old.md"}
    assert retention.apply(project).files == 0  # deleted today: kept as long as any change

    later = timezone.now() + 31 * DAY
    s3.proxy.inject("DELETE", r"/", times=100)
    with pytest.raises(errors.StorageUnavailable):
        retention.apply(project, now=later)
    s3.proxy.heal()
    stopped = MemoryFile.objects.select_related("head").get(pk=old.pk)
    assert stopped.head.expired_rule and stopped.head.number == 3
    assert s3.keys(layout.history_prefix(project.prefix, old.pk))  # the texts are still there
    assert reconcile.reconcile(project=project) == []

    run = retention.apply(project, now=later)
    assert (run.finished, run.files) == (1, 0)
    assert _expired(project) == {"notes/old.md"}
    assert not s3.keys(layout.history_prefix(project.prefix, old.pk))
    assert not Revision.objects.filter(file=old, is_deletion=False, purged_at__isnull=True)
    assert retention.apply(project, now=later).as_dict() == {
        "files": 0,
        "revisions": 0,
        "sessions": 0,
        "prompts": 0,
        "answers": 0,
        "profiles": 0,
        "held": 0,
        "finished": 0,
    }


def test_sessions_prompts_and_answers_expire_and_the_session_page_says_so(
    s3, project, agent, person, admin, workspace, client
):
    session, _assembly = prehook.hook_pre(agent=agent, user=person)
    old, _again = prehook.hook_pre(agent=agent, user=person)
    AgentSession.objects.filter(pk=old.pk).update(created_at=timezone.now() - 200 * DAY)
    AgentSession.objects.filter(pk=session.pk).update(created_at=timezone.now() - 100 * DAY)
    retention.rule_add(by=admin, project=project, kind="prompts", days=90)
    run = retention.apply(project)
    assert run.prompts == 1  # both sessions got the same prompt: gone when both are old
    key = layout.prompt_key(project.prefix, session.prompt_sha256)
    assert key not in s3.keys(project.prefix)
    client.force_login(admin)
    page = client.get(reverse("projects:session_detail", args=[project.slug, session.pk]))
    text = page.content.decode()
    assert "expired on" in text and "prompts 90 days" in text and "does not match" not in text

    retention.rule_add(by=admin, project=project, kind="sessions", days=150)
    assert retention.apply(project).sessions == 1
    assert not AgentSession.objects.filter(pk=old.pk).exists()


def test_stored_runner_answers_expire_as_their_preview_said_and_young_ones_stay(
    s3, project, agent, admin, workspace, token, client
):
    """The `idempotency` rule: answers kept for retries under an Idempotency-Key, taken from
    real post hooks, go once older than the rule; the preview counts exactly those."""
    session = client.post(
        "/api/v1/hooks/pre", data="{}", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    ).json()["session"]
    for key in ("old-1", "old-2", "young"):
        body = {
            "session": session,
            "end": False,
            "writes": [{"path": "workspace/notes/fresh.md", "mode": "append", "content": f"- {key}\n"}],
        }
        answer = client.post(
            "/api/v1/hooks/post",
            data=json.dumps(body),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
            HTTP_IDEMPOTENCY_KEY=key,
        )
        assert answer.status_code == 200, answer.content
    IdempotencyRecord.objects.filter(key__startswith="old-").update(created_at=timezone.now() - 40 * DAY)
    retention.rule_add(by=admin, project=project, kind="idempotency", days=30)

    [row] = retention.preview(project)
    [due] = row["today"].due
    assert (due.label, due.count) == ("stored runner answers", 2)
    assert sorted(IdempotencyRecord.objects.filter(pk__in=due.ids).values_list("key", flat=True)) == [
        "old-1",
        "old-2",
    ]
    assert row["soon_count"] == 1  # the young one, in 30 days
    run = retention.apply(project)
    assert run.answers == 2 and run.as_dict()["files"] == 0
    assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == ["young"]
    assert AuditEvent.objects.get(action="retention.run").details["answers"] == 2
    assert retention.apply(project).answers == 0
    # The young key still answers a retry from its stored answer.
    body = {
        "session": session,
        "end": False,
        "writes": [{"path": "workspace/notes/fresh.md", "mode": "append", "content": "- young\n"}],
    }
    again = client.post(
        "/api/v1/hooks/post",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
        HTTP_IDEMPOTENCY_KEY="young",
    )
    assert again["Idempotent-Replayed"] == "true"


def test_the_history_page_shows_an_expired_file_and_its_expired_texts_as_such(
    s3, project, admin, workspace, client
):
    retention.rule_add(by=admin, project=project, kind="files", glob="workspace/logs/**", days=30)
    retention.apply(project)
    tools = workspace["logs/tools.md"]
    client.force_login(admin)
    history = client.get(reverse("projects:file_history", args=[project.slug, tools.pk]))
    rows = history.content.decode()
    assert '<span class="badge warn" title="files workspace/logs/** 30 days">expired</span>' in rows
    assert '<span class="badge">text expired</span>' in rows  # revision 1: its text is gone
    assert "Expired under the retention rule files workspace/logs/** 30 days" in rows
    detail = client.get(reverse("projects:file_detail", args=[project.slug, tools.pk]))
    text = " ".join(detail.content.decode().split())
    assert 'id="expired"' in text
    assert "under the retention rule files workspace/logs/** 30 days: its texts are gone" in text
    # A file that did not expire shows no such badge.
    fresh = client.get(reverse("projects:file_history", args=[project.slug, workspace["notes/fresh.md"].pk]))
    assert "expired</span>" not in fresh.content.decode()


def test_the_pages_edit_rules_with_errors_at_the_field_and_show_the_preview(
    client, project, admin, reviewer, workspace
):
    client.force_login(admin)
    url = reverse("projects:retention", args=[project.slug])
    refused = client.post(url, {"kind": "files", "glob": "../etc/*", "days": ""})
    assert refused.status_code == 400
    form = refused.context["form"]
    assert form.errors["glob"] and form.errors["days"]
    added = client.post(url, {"kind": "files", "glob": "workspace/logs/**", "days": "30"}, follow=True)
    assert "workspace/logs/tools.md" in added.content.decode()
    client.force_login(reviewer)
    assert client.get(url).status_code == 200  # compliance reads the preview
    assert client.post(url, {"kind": "sessions", "days": "1"}).status_code == 404


def test_dry_run_prints_the_preview_and_the_run_applies_it(s3, project, admin, workspace, capsys):
    retention.rule_add(by=admin, project=project, kind="files", glob="workspace/logs/**", days=30)
    call_command("retention", "--project", project.slug, "--dry-run")
    preview = capsys.readouterr().out
    assert "files workspace/logs/** 30 days\ttoday 1" in preview
    assert "today\tworkspace/logs/tools.md" in preview and _expired(project) == set()
    call_command("retention", "--project", project.slug)
    assert "files 1" in capsys.readouterr().out and _expired(project) == {"logs/tools.md"}


# --- Legal holds ---------------------------------------------------------------------------------


def _versions(s3, prefix: str) -> list[dict]:
    return [v for v in s3.client.list_object_versions(Bucket=s3.bucket, Prefix=prefix).get("Versions", [])]


def _held(s3, version: dict) -> bool:
    try:
        answer = s3.client.get_object_legal_hold(
            Bucket=s3.bucket, Key=version["Key"], VersionId=version["VersionId"]
        )
    except ClientError:
        return False
    return answer["LegalHold"]["Status"] == "ON"


def test_a_held_person_is_held_by_the_storage_and_nothing_deletes_them_until_release(
    s3, project, make_project, agent, person, admin, reviewer, workspace
):
    s3.lock()
    other = make_project(slug="tenders")
    Membership.objects.create(project=other, user=person, role="employee")
    Membership.objects.create(project=other, user=admin, role="admin")
    other_profile = store.file_create(
        project=other,
        scope="user",
        user=person,
        path="USER.md",
        content="Maria, tenders.\n",
        actor=Actor.person(person),
    ).file
    profile = records.file_lookup(project=project, scope="user", user=person, path="USER.md")
    session, _ = prehook.hook_pre(agent=agent, user=person)

    hold, sweep = holds.hold_place(
        by=reviewer, project=project, user=person, reason="litigation", case_reference="case 1"
    )
    assert sweep.enforced and hold.storage_enforced and sweep.versions >= 4
    # Every version of the profile (head, snapshot) in both projects and the kept prompt is
    # held by S3 itself: GetObjectLegalHold says ON ...
    covered = (
        _versions(s3, layout.user_prefix(project.prefix, person.pk))
        + _versions(s3, layout.history_prefix(project.prefix, profile.pk))
        + _versions(s3, layout.user_prefix(other.prefix, person.pk))
        + _versions(s3, layout.history_prefix(other.prefix, other_profile.pk))
        + _versions(s3, layout.prompt_key(project.prefix, session.prompt_sha256))
    )
    assert len(covered) >= 5 and all(_held(s3, v) for v in covered)
    # ... and a DeleteObject with VersionId by the console's own keys is AccessDenied.
    with pytest.raises(ClientError) as refused:
        s3.client.delete_object(Bucket=s3.bucket, Key=covered[0]["Key"], VersionId=covered[0]["VersionId"])
    print("\nDeleteObject of a held version:", refused.value.response["Error"])
    assert refused.value.response["Error"]["Code"] == "AccessDenied"
    # What is not covered is not held.
    assert not any(_held(s3, v) for v in _versions(s3, workspace["notes/old.md"].key))
    # A new version written during the hold is held as it is written.
    store.file_save(
        file=profile, content="Maria prefers UTC. Likes tea.\n", actor=Actor.person(person), base_revision=1
    )
    assert all(_held(s3, v) for v in _versions(s3, profile.key))

    # Erasure, delete and retention are refused, naming the hold.
    with pytest.raises(errors.Held) as erase_refused:
        erasure.profile_erase(by=admin, user=person, reason="GDPR 17", projects=[project, other])
    print("Erasure under hold:", erase_refused.value.message)
    assert (
        f"legal hold #{hold.pk} on person {person.username} (litigation, case 1)"
        in erase_refused.value.message
    )
    assert s3.get(profile.key)  # nothing was erased anywhere
    retention.rule_add(by=admin, project=project, kind="files", glob="USER.md", days=1)
    Revision.objects.filter(file=profile).update(created_at=timezone.now() - 10 * DAY)
    assert retention.apply(project).held == 1 and not _expired(project)

    holds.hold_release(by=reviewer, hold=hold, note="settled")
    assert not any(_held(s3, v) for v in _versions(s3, profile.key))
    assert retention.apply(project).files == 1
    done = erasure.profile_erase(by=admin, user=person, reason="GDPR 17", projects=[project, other])
    assert done.projects == [project.slug, other.slug]
    assert not s3.keys(layout.user_prefix(other.prefix, person.pk))
    assert [e.action for e in AuditEvent.objects.filter(action__startswith="legal_hold").order_by("seq")] == [
        "legal_hold.place",
        "legal_hold.release",
    ]


def test_a_held_project_refuses_deletes_and_the_console_says_which_hold(
    s3, project, admin, reviewer, workspace, client
):
    s3.lock()
    hold, _sweep = holds.hold_place(by=reviewer, project=project, reason="audit 2026")
    notes = MemoryFile.objects.get(pk=workspace["notes/old.md"].pk)
    with pytest.raises(errors.Held) as refused:
        removal.file_delete(file=notes, actor=Actor.person(admin), base_revision=1)
    assert f"legal hold #{hold.pk} on project {project.slug}" in refused.value.message
    client.force_login(admin)
    page = client.post(
        reverse("projects:file_delete", args=[project.slug, notes.pk]), {"base_revision": 1}, follow=True
    )
    assert "legal hold #" in page.content.decode()
    client.post(reverse("projects:hold_release", args=[project.slug, hold.pk]), {"note": "done"})
    assert LegalHold.objects.get(pk=hold.pk).released_at is not None
    removal.file_delete(file=notes, actor=Actor.person(admin), base_revision=1)


def _file_versions(s3, project, file) -> list[dict]:
    """Every stored version of a file: its head object's and its snapshots'."""
    return _versions(s3, file.key) + _versions(s3, layout.history_prefix(project.prefix, file.pk))


def _refused_by_s3(s3, version: dict) -> str:
    try:
        s3.client.delete_object(Bucket=s3.bucket, Key=version["Key"], VersionId=version["VersionId"])
    except ClientError as exc:
        return exc.response["Error"]["Code"]
    return ""


def test_a_hold_on_one_file_holds_its_versions_and_nothing_else_until_release(
    s3, project, admin, reviewer, workspace
):
    s3.lock()
    notes = MemoryFile.objects.get(pk=workspace["notes/old.md"].pk)
    store.file_save(file=notes, content="# v2\n", actor=Actor.system("t"), base_revision=1)
    hold, sweep = holds.hold_place(
        by=reviewer, project=project, file=notes, reason="litigation", case_reference="case 2"
    )
    assert sweep.enforced and hold.storage_enforced and hold.target == "file workspace/notes/old.md"
    held = _file_versions(s3, project, notes)
    # The head's first version was written before the bucket kept versions ("null"), and is
    # no longer current: SeaweedFS holds no "null" version, and it cannot be moved without
    # changing the head. It stays (nothing of a held file is deleted; its text is also the held
    # snapshot 1-...), and the console refuses to delete it.
    before_versions = [v for v in held if v["VersionId"] == "null"]
    assert [v["Key"] for v in before_versions] == [notes.key]
    assert (
        s3.client.get_object(Bucket=s3.bucket, Key=notes.key, VersionId="null")["Body"].read()
        == b"# notes/old.md\n"
    )
    held = [v for v in held if v["VersionId"] != "null"]
    assert len(held) >= 3 and all(_held(s3, v) for v in held)  # head, both snapshots
    others = [
        v
        for path in ("notes/fresh.md", "logs/tools.md", "logs/errors.md")
        for v in _file_versions(s3, project, workspace[path])
    ]
    assert others and not any(_held(s3, v) for v in others)
    # S3 refuses to delete a held version, even to the console's own keys.
    assert {_refused_by_s3(s3, v) for v in held} == {"AccessDenied"}
    # The console refuses to delete it, naming the hold; the file next to it is not held.
    with pytest.raises(errors.Held) as refused:
        removal.file_delete(file=notes, actor=Actor.person(admin), base_revision=2)
    assert (
        f"legal hold #{hold.pk} on file workspace/notes/old.md (litigation, case 2)" in refused.value.message
    )
    fresh = workspace["notes/fresh.md"]
    removal.file_delete(file=fresh, actor=Actor.person(admin), base_revision=1)
    assert MemoryFile.objects.get(pk=fresh.pk).is_deleted
    # Overwriting is a new version, held as it is written; the held ones stay as they were.
    head_version = next(v for v in _versions(s3, notes.key) if v["IsLatest"])
    store.file_save(file=notes, content="# v3\n", actor=Actor.person(admin), base_revision=2)
    assert all(_held(s3, v) for v in _file_versions(s3, project, notes) if v["VersionId"] != "null")
    assert (
        s3.client.get_object(Bucket=s3.bucket, Key=notes.key, VersionId=head_version["VersionId"])[
            "Body"
        ].read()
        == b"# v2\n"
    )
    # Retention skips it and expires the rest.
    retention.rule_add(by=admin, project=project, kind="files", glob="workspace/**", days=5)
    _aged(Revision.objects.filter(file=notes), 400)
    run = retention.apply(project)
    assert (run.files, run.held) == (2, 1) and _expired(project) == {"logs/tools.md", "logs/errors.md"}

    holds.hold_release(by=reviewer, hold=hold, note="settled")
    assert not any(_held(s3, v) for v in _file_versions(s3, project, notes))
    assert retention.apply(project).files == 1 and "notes/old.md" in _expired(project)


def test_a_hold_on_a_workspace_glob_holds_what_matches_now_and_later_and_nothing_else(
    s3, project, admin, reviewer, workspace
):
    s3.lock()
    hold, sweep = holds.hold_place(
        by=admin, project=project, glob="workspace/logs/*.md", reason="incident 12", case_reference="INC-12"
    )
    assert sweep.enforced and hold.target == "files workspace/logs/*.md"
    logs = [workspace["logs/tools.md"], workspace["logs/errors.md"]]
    notes = [workspace["notes/old.md"], workspace["notes/fresh.md"]]
    held = [v for f in logs for v in _file_versions(s3, project, f)]
    assert len(held) >= 4 and all(_held(s3, v) for v in held)
    assert not any(_held(s3, v) for f in notes for v in _file_versions(s3, project, f))
    # A file made under the glob while the hold stands is held from its first version.
    new = store.file_create(
        project=project, scope="workspace", path="logs/new.md", content="# new\n", actor=Actor.system("t")
    ).file
    assert all(_held(s3, v) for v in _file_versions(s3, project, new))
    assert _versions(s3, new.key)
    # Deleting what the glob covers is refused by the console and by S3; the rest is not held.
    for file in logs:
        with pytest.raises(errors.Held) as refused:
            removal.file_delete(file=file, actor=Actor.person(admin), base_revision=1)
        assert (
            f"legal hold #{hold.pk} on files workspace/logs/*.md (incident 12, INC-12)"
            in refused.value.message
        )
    removal.file_delete(file=notes[1], actor=Actor.person(admin), base_revision=1)
    retention.rule_add(by=admin, project=project, kind="files", glob="workspace/**", days=5)
    run = retention.apply(project)
    assert (run.files, run.held) == (1, 2) and _expired(project) == {"notes/old.md"}
    version = next(v for v in _versions(s3, logs[0].key) if v["IsLatest"])
    assert _refused_by_s3(s3, version) == "AccessDenied"
    # Someone with the bucket's keys writes over the key: a new version; the held one stays.
    s3.put(logs[0].key, b"overwritten\n")
    assert (
        s3.client.get_object(Bucket=s3.bucket, Key=logs[0].key, VersionId=version["VersionId"])["Body"].read()
        == b"# logs/tools.md\n"
    )
    assert _refused_by_s3(s3, version) == "AccessDenied"

    holds.hold_release(by=admin, hold=hold, note="closed")
    assert not any(_held(s3, v) for f in (*logs, new) for v in _file_versions(s3, project, f))
    assert _refused_by_s3(s3, version) == ""  # released: S3 lets it go


def test_ensure_bucket_makes_a_new_bucket_with_object_lock_and_turns_it_on_for_an_old_one(s3, capsys):
    def lock_and_versioning(bucket: str) -> tuple:
        try:
            lock = s3.client.get_object_lock_configuration(Bucket=bucket)["ObjectLockConfiguration"].get(
                "ObjectLockEnabled"
            )
        except ClientError:
            lock = None
        return lock, s3.client.get_bucket_versioning(Bucket=bucket).get("Status")

    s3._point_at("mgc-ensure-new")  # no such bucket yet
    call_command("ensure_bucket")
    assert "Created bucket mgc-ensure-new with Object Lock." in capsys.readouterr().out
    assert lock_and_versioning("mgc-ensure-new") == ("Enabled", "Enabled")
    call_command("ensure_bucket")  # again: nothing to do
    assert capsys.readouterr().out == "Bucket mgc-ensure-new exists.\n"

    s3.client.create_bucket(Bucket="mgc-ensure-old")  # made before, without Object Lock
    s3.client.put_object(Bucket="mgc-ensure-old", Key="p/old.md", Body=b"old\n")
    assert lock_and_versioning("mgc-ensure-old") == (None, None)
    s3._point_at("mgc-ensure-old")
    call_command("ensure_bucket")
    assert "Turned on versioning and Object Lock for mgc-ensure-old." in capsys.readouterr().out
    assert lock_and_versioning("mgc-ensure-old") == ("Enabled", "Enabled")


def test_a_hold_without_object_lock_is_kept_by_the_console_and_says_so(s3, project, reviewer, workspace):
    hold, sweep = holds.hold_place(by=reviewer, project=project, reason="r")
    assert not sweep.enforced and "Object Lock" in sweep.note and not hold.storage_enforced
    with pytest.raises(errors.Held):
        removal.file_delete(file=workspace["notes/old.md"], actor=Actor.system("t"), base_revision=1)


def test_legal_hold_command_places_lists_and_releases(s3, project, person, admin, workspace, capsys):
    s3.lock()
    call_command(
        "legal_hold", "place", "--project", project.slug, "--user", person.username, "--reason", "case 1"
    )
    assert "placed legal hold" in capsys.readouterr().out
    call_command("legal_hold", "list", "--project", project.slug)
    assert f"standing\tperson {person.username}\tcase 1" in capsys.readouterr().out
    call_command("legal_hold", "release", "--project", project.slug, "--user", person.username)
    assert "released legal hold" in capsys.readouterr().out


# --- Erasure everywhere -------------------------------------------------------------------------


def test_erasing_a_person_everywhere_and_the_session_page_after_it(
    s3, project, make_project, agent, person, admin, client, capsys
):
    other = make_project(slug="daily-reports")
    Membership.objects.create(project=other, user=person, role="employee")
    Membership.objects.create(project=other, user=admin, role="admin")
    for where in (project, other):
        store.file_create(
            project=where,
            scope="user",
            user=person,
            path="USER.md",
            content=f"Maria in {where.slug}.\n",
            actor=Actor.person(person),
        )
    session, _ = prehook.hook_pre(agent=agent, user=person)
    call_command(
        "erase_person", "--user", person.username, "--reason", "GDPR request 17", "--by", admin.username
    )
    out = capsys.readouterr().out
    assert f"in {project.slug}, {other.slug}" in out
    for where in (project, other):
        assert not s3.keys(layout.user_prefix(where.prefix, person.pk))
        assert not MemoryFile.objects.filter(project=where, user=person).exists()
    assert AuditEvent.objects.filter(action="profile.erase").count() == 2
    client.force_login(admin)
    page = client.get(reverse("projects:session_detail", args=[project.slug, session.pk]))
    text = page.content.decode()
    assert "erased on" in text and f"by {admin.username} (GDPR request 17)" in text
    assert "does not match" not in text and "not in storage" not in text


def test_the_erase_command_under_a_hold_names_it_and_does_not_ask_to_run_again(
    s3, project, person, admin, reviewer
):
    store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="Maria.\n",
        actor=Actor.person(person),
    )
    holds.hold_place(by=reviewer, project=project, user=person, reason="litigation", case_reference="case 1")
    with pytest.raises(CommandError) as refused:
        call_command(
            "erase_person", "--user", person.username, "--reason", "GDPR request 17", "--by", admin.username
        )
    assert "legal hold #" in str(refused.value) and "Run it again" not in str(refused.value)
    assert MemoryFile.objects.filter(project=project, user=person).exists()


def test_the_erase_page_picks_every_project_and_shows_a_standing_hold(
    s3, project, make_project, person, admin, reviewer, client
):
    other = make_project(slug="daily-reports")
    Membership.objects.create(project=other, user=person, role="employee")
    Membership.objects.create(project=other, user=admin, role="admin")
    holds.hold_place(by=reviewer, project=project, user=person, reason="case 7")
    client.force_login(admin)
    url = reverse("projects:profile_erase", args=[project.slug, person.pk])
    page = client.get(url)
    assert sorted(page.context["form"].fields["projects"].initial) == sorted([project.slug, other.slug])
    assert "case 7" in page.content.decode()
    refused = client.post(
        url, {"reason": "GDPR", "confirm": person.username, "projects": [project.slug, other.slug]}
    )
    assert refused.status_code == 400 and "legal hold #" in refused.content.decode()


# --- The audit trail's own retention ------------------------------------------------------------


def test_a_pruned_audit_trail_still_verifies_from_its_signed_checkpoint(project, admin):
    from projects.audit import audit_record
    from projects.models import AuditCheckpoint

    for n in range(5):
        audit_record(actor=Actor.person(admin), action="review.mark", project=project, details={"n": n})
    AuditEvent.objects.filter(seq__lte=3).update(created_at=timezone.now() - 400 * DAY)
    assert audit_prune(before=timezone.now() - 365 * DAY) == 3
    assert AuditEvent.objects.order_by("seq").first().seq == 4
    assert audit_verify() == []
    checkpoint = AuditCheckpoint.objects.get()
    AuditCheckpoint.objects.filter(pk=checkpoint.pk).update(hash="0" * 64)
    problems = audit_verify()
    assert any("signature" in p for p in problems)
