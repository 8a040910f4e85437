"""Memory over its whole life, against real SeaweedFS: retention rules that expire exactly what
their preview lists (safe to repeat, safe to stop), legal holds the storage itself enforces
(S3 Object Lock), and erasure of a person in every project."""

import datetime as dt

import pytest
from botocore.exceptions import ClientError
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from projects.audit import Actor, audit_prune, audit_verify
from projects.governance import erasure, holds, retention
from projects.memory import errors, layout, reconcile, store
from projects.models import (
    AgentSession,
    AuditEvent,
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
    for path, age in (("logs/tools.md", 40), ("logs/errors.md", 10), ("notes/old.md", 400),
                      ("notes/fresh.md", 1)):
        revision = store.file_create(project=project, scope="workspace", path=path,
                                     content=f"# {path}\n", actor=system)
        _aged(Revision.objects.filter(pk=revision.pk), age)
        made[path] = revision.file
    store.file_create(project=project, scope="user", user=person, path="USER.md",
                      content="Maria prefers UTC.\n", actor=Actor.person(person))
    return made


def _expired(project) -> set[str]:
    return {f.path for f in MemoryFile.objects.filter(project=project)
            .select_related("head") if f.head and f.head.expired_rule}


def test_a_rule_expires_exactly_what_its_preview_listed_and_a_second_run_does_nothing(
        s3, project, admin, workspace):
    retention.rule_add(by=admin, project=project, kind="files", glob="workspace/logs/**",
                       days=30)
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
        store.revision_read(Revision.objects.get(file=tools, number=1))
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
        store.file_save(file=file, content=f"# v{n}\n", actor=Actor.system("t"),
                        base_revision=n - 1)
    _aged(Revision.objects.filter(file=file), 100)
    retention.rule_add(by=admin, project=project, kind="history", glob="workspace/notes/*.md",
                       keep_revisions=2)
    [row] = retention.preview(project)
    assert [(i.label, i.numbers) for i in row["today"].due] == [("workspace/notes/fresh.md",
                                                                 [1, 2, 3])]
    assert retention.apply(project).revisions == 3
    purged = set(Revision.objects.filter(file=file, purged_at__isnull=False)
                 .values_list("number", flat=True))
    assert purged == {1, 2, 3}
    assert store.file_read(MemoryFile.objects.get(pk=file.pk)).text == "# v5\n"
    assert store.revision_read(Revision.objects.get(file=file, number=4)) == "# v4\n"
    assert retention.apply(project).revisions == 0


def test_a_run_stopped_partway_is_finished_by_the_next_and_nothing_reads_as_external(
        s3, project, admin, workspace):
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
    assert retention.apply(project).as_dict() == {"files": 0, "revisions": 0, "sessions": 0,
                                                   "prompts": 0, "answers": 0, "held": 0,
                                                   "finished": 0}


def test_sessions_prompts_and_answers_expire_and_the_session_page_says_so(
        s3, project, agent, person, admin, workspace, client):
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


def test_the_pages_edit_rules_with_errors_at_the_field_and_show_the_preview(
        client, project, admin, reviewer, workspace):
    client.force_login(admin)
    url = reverse("projects:retention", args=[project.slug])
    refused = client.post(url, {"kind": "files", "glob": "../etc/*", "days": ""})
    assert refused.status_code == 400
    form = refused.context["form"]
    assert form.errors["glob"] and form.errors["days"]
    added = client.post(url, {"kind": "files", "glob": "workspace/logs/**", "days": "30"},
                        follow=True)
    assert "workspace/logs/tools.md" in added.content.decode()
    client.force_login(reviewer)
    assert client.get(url).status_code == 200  # compliance reads the preview
    assert client.post(url, {"kind": "sessions", "days": "1"}).status_code == 404


def test_dry_run_prints_the_preview_and_the_run_applies_it(s3, project, admin, workspace,
                                                           capsys):
    retention.rule_add(by=admin, project=project, kind="files", glob="workspace/logs/**",
                       days=30)
    call_command("retention", "--project", project.slug, "--dry-run")
    preview = capsys.readouterr().out
    assert "files workspace/logs/** 30 days\ttoday 1" in preview
    assert "today\tworkspace/logs/tools.md" in preview and _expired(project) == set()
    call_command("retention", "--project", project.slug)
    assert "files 1" in capsys.readouterr().out and _expired(project) == {"logs/tools.md"}


# --- Legal holds ---------------------------------------------------------------------------------


def _versions(s3, prefix: str) -> list[dict]:
    return [v for v in s3.client.list_object_versions(Bucket=s3.bucket, Prefix=prefix)
            .get("Versions", [])]


def _held(s3, version: dict) -> bool:
    try:
        answer = s3.client.get_object_legal_hold(Bucket=s3.bucket, Key=version["Key"],
                                                 VersionId=version["VersionId"])
    except ClientError:
        return False
    return answer["LegalHold"]["Status"] == "ON"


def test_a_held_person_is_held_by_the_storage_and_nothing_deletes_them_until_release(
        s3, project, make_project, agent, person, admin, reviewer, workspace):
    s3.lock()
    other = make_project(slug="tenders")
    Membership.objects.create(project=other, user=person, role="employee")
    Membership.objects.create(project=other, user=admin, role="admin")
    other_profile = store.file_create(project=other, scope="user", user=person, path="USER.md",
                                      content="Maria, tenders.\n", actor=Actor.person(person)).file
    profile = store.file_lookup(project=project, scope="user", user=person, path="USER.md")
    session, _ = prehook.hook_pre(agent=agent, user=person)

    hold, sweep = holds.hold_place(by=reviewer, project=project, user=person,
                                   reason="litigation", case_reference="case 1")
    assert sweep.enforced and hold.storage_enforced and sweep.versions >= 4
    # Every version of the profile (head, snapshot) in both projects and the kept prompt is
    # held by S3 itself: GetObjectLegalHold says ON ...
    covered = (_versions(s3, layout.user_prefix(project.prefix, person.pk))
               + _versions(s3, layout.history_prefix(project.prefix, profile.pk))
               + _versions(s3, layout.user_prefix(other.prefix, person.pk))
               + _versions(s3, layout.history_prefix(other.prefix, other_profile.pk))
               + _versions(s3, layout.prompt_key(project.prefix, session.prompt_sha256)))
    assert len(covered) >= 5 and all(_held(s3, v) for v in covered)
    # ... and a DeleteObject with VersionId by the console's own keys is AccessDenied.
    with pytest.raises(ClientError) as refused:
        s3.client.delete_object(Bucket=s3.bucket, Key=covered[0]["Key"],
                                VersionId=covered[0]["VersionId"])
    print("\nDeleteObject of a held version:", refused.value.response["Error"])
    assert refused.value.response["Error"]["Code"] == "AccessDenied"
    # What is not covered is not held.
    assert not any(_held(s3, v) for v in _versions(s3, workspace["notes/old.md"].key))
    # A new version written during the hold is held as it is written.
    store.file_save(file=profile, content="Maria prefers UTC. Likes tea.\n",
                    actor=Actor.person(person), base_revision=1)
    assert all(_held(s3, v) for v in _versions(s3, profile.key))

    # Erasure, delete and retention are refused, naming the hold.
    with pytest.raises(errors.Held) as erase_refused:
        erasure.profile_erase(by=admin, user=person, reason="GDPR 17", projects=[project, other])
    print("Erasure under hold:", erase_refused.value.message)
    assert f"legal hold #{hold.pk} on person {person.username} (litigation, case 1)" in \
        erase_refused.value.message
    assert s3.get(profile.key)  # nothing was erased anywhere
    retention.rule_add(by=admin, project=project, kind="files", glob="USER.md", days=1)
    Revision.objects.filter(file=profile).update(created_at=timezone.now() - 10 * DAY)
    assert retention.apply(project).held == 1 and not _expired(project)

    holds.hold_release(by=reviewer, hold=hold, note="settled")
    assert not any(_held(s3, v) for v in _versions(s3, profile.key))
    assert retention.apply(project).files == 1
    done = erasure.profile_erase(by=admin, user=person, reason="GDPR 17",
                                 projects=[project, other])
    assert done.projects == [project.slug, other.slug]
    assert not s3.keys(layout.user_prefix(other.prefix, person.pk))
    assert [e.action for e in AuditEvent.objects.filter(action__startswith="legal_hold")
            .order_by("seq")] == [
        "legal_hold.place", "legal_hold.release"]


def test_a_held_project_refuses_deletes_and_the_console_says_which_hold(
        s3, project, admin, reviewer, workspace, client):
    s3.lock()
    hold, _sweep = holds.hold_place(by=reviewer, project=project, reason="audit 2026")
    notes = MemoryFile.objects.get(pk=workspace["notes/old.md"].pk)
    with pytest.raises(errors.Held) as refused:
        store.file_delete(file=notes, actor=Actor.person(admin), base_revision=1)
    assert f"legal hold #{hold.pk} on project {project.slug}" in refused.value.message
    client.force_login(admin)
    page = client.post(reverse("projects:file_delete", args=[project.slug, notes.pk]),
                       {"base_revision": 1}, follow=True)
    assert "legal hold #" in page.content.decode()
    client.post(reverse("projects:hold_release", args=[project.slug, hold.pk]), {"note": "done"})
    assert LegalHold.objects.get(pk=hold.pk).released_at is not None
    store.file_delete(file=notes, actor=Actor.person(admin), base_revision=1)


def test_a_hold_without_object_lock_is_kept_by_the_console_and_says_so(
        s3, project, reviewer, workspace):
    hold, sweep = holds.hold_place(by=reviewer, project=project, reason="r")
    assert not sweep.enforced and "Object Lock" in sweep.note and not hold.storage_enforced
    with pytest.raises(errors.Held):
        store.file_delete(file=workspace["notes/old.md"], actor=Actor.system("t"),
                          base_revision=1)


def test_legal_hold_command_places_lists_and_releases(s3, project, person, admin, workspace,
                                                      capsys):
    s3.lock()
    call_command("legal_hold", "place", "--project", project.slug, "--user", person.username,
                 "--reason", "case 1")
    assert "placed legal hold" in capsys.readouterr().out
    call_command("legal_hold", "list", "--project", project.slug)
    assert f"standing\tperson {person.username}\tcase 1" in capsys.readouterr().out
    call_command("legal_hold", "release", "--project", project.slug, "--user", person.username)
    assert "released legal hold" in capsys.readouterr().out


# --- Erasure everywhere -------------------------------------------------------------------------


def test_erasing_a_person_everywhere_and_the_session_page_after_it(
        s3, project, make_project, agent, person, admin, client, capsys):
    other = make_project(slug="daily-reports")
    Membership.objects.create(project=other, user=person, role="employee")
    Membership.objects.create(project=other, user=admin, role="admin")
    for where in (project, other):
        store.file_create(project=where, scope="user", user=person, path="USER.md",
                          content=f"Maria in {where.slug}.\n", actor=Actor.person(person))
    session, _ = prehook.hook_pre(agent=agent, user=person)
    call_command("erase_person", "--user", person.username, "--reason", "GDPR request 17",
                 "--by", admin.username)
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


def test_the_erase_page_picks_every_project_and_shows_a_standing_hold(
        s3, project, make_project, person, admin, reviewer, client):
    other = make_project(slug="daily-reports")
    Membership.objects.create(project=other, user=person, role="employee")
    Membership.objects.create(project=other, user=admin, role="admin")
    holds.hold_place(by=reviewer, project=project, user=person, reason="case 7")
    client.force_login(admin)
    url = reverse("projects:profile_erase", args=[project.slug, person.pk])
    page = client.get(url)
    assert sorted(page.context["form"].fields["projects"].initial) == sorted([project.slug,
                                                                             other.slug])
    assert "case 7" in page.content.decode()
    refused = client.post(url, {"reason": "GDPR", "confirm": person.username,
                                "projects": [project.slug, other.slug]})
    assert refused.status_code == 400 and "legal hold #" in refused.content.decode()


# --- The audit trail's own retention ------------------------------------------------------------


def test_a_pruned_audit_trail_still_verifies_from_its_signed_checkpoint(project, admin):
    from projects.audit import audit_record
    from projects.models import AuditCheckpoint

    for n in range(5):
        audit_record(actor=Actor.person(admin), action="review.mark", project=project,
                     details={"n": n})
    AuditEvent.objects.filter(seq__lte=3).update(created_at=timezone.now() - 400 * DAY)
    assert audit_prune(before=timezone.now() - 365 * DAY) == 3
    assert AuditEvent.objects.order_by("seq").first().seq == 4
    assert audit_verify() == []
    checkpoint = AuditCheckpoint.objects.get()
    AuditCheckpoint.objects.filter(pk=checkpoint.pk).update(hash="0" * 64)
    problems = audit_verify()
    assert any("signature" in p for p in problems)
