"""Governance services against the real S3 server: review marks and flags, members,
check_isolation, IAM policies, export and erasure."""

import io
import json
import zipfile
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from projects.audit import Actor, audit_verify
from projects.governance import erasure, exports, isolation, jobs, members, review
from projects.memory import layout, removal, store
from projects.models import (
    AgentSession,
    AuditEvent,
    BackgroundJob,
    Flag,
    IdempotencyRecord,
    Membership,
    MemoryFile,
    Project,
    Proposal,
    Revision,
    SearchText,
    SessionEvent,
)
from projects.runners import bearer, credentials

pytestmark = pytest.mark.django_db


def _profile(project, user, text, actor=None):
    return store.file_create(
        project=project,
        scope="user",
        user=user,
        path="USER.md",
        content=text,
        actor=actor or Actor.person(user),
    )


def _save(file, text, actor):
    file.refresh_from_db()
    return store.file_save(file=file, content=text, actor=actor, base_revision=file.head.number)


# --- Scanner on save -------------------------------------------------------------------------------


def test_a_save_records_scanner_findings_masked_and_audits_their_count(s3, project, person):
    revision = _profile(project, person, "Call me: +7 (916) 123-45-67\nmaria@example.com\n")
    assert [f["kind"] for f in revision.findings] == ["phone", "email"]
    assert all("123-45" not in f["excerpt"] for f in revision.findings)
    event = AuditEvent.objects.get(action="file.save")
    assert event.details["findings"] == "1 phone number, 1 e-mail address"


# --- Review queue -------------------------------------------------------------------------------


def test_queue_lists_unreviewed_changes_agents_first_and_marks_move_forward(
    s3, project, agent, person, reviewer
):
    profile = _profile(project, person, "Prefers short answers.\n")
    file = MemoryFile.objects.get(pk=profile.file_id)
    notes = store.file_create(
        project=project, scope="workspace", path="log.md", content="a\n", actor=Actor.for_agent(agent, "s1")
    )
    queue = list(review.review_queue(reviewer=reviewer, project=project))
    assert [f.pk for f in queue] == [notes.file_id, file.pk]  # the agent's write comes first
    items = review.review_items(queue)
    assert items[0].by_agent and not items[1].by_agent
    assert items[1].since == 0 and "Prefers short answers." in str(items[1].diff.rows[0].new_html)

    review.review_mark(reviewer=reviewer, file=file, number=1)
    assert [f.pk for f in review.review_queue(reviewer=reviewer, project=project)] == [notes.file_id]
    _save(file, "Prefers short answers.\nPassword: hunter2222\n", Actor.person(person))
    [again] = [f for f in review.review_queue(reviewer=reviewer, project=project) if f.pk == file.pk]
    [item] = review.review_items([again])
    assert item.since == 1 and [r.number for r in item.revisions] == [2]
    assert [f["kind"] for f in item.findings] == ["password"]
    # A late submit of an older page does not move the mark back.
    review.review_mark(reviewer=reviewer, file=file, number=2)
    review.review_mark(reviewer=reviewer, file=file, number=1)
    assert file.review_marks.get(reviewer=reviewer).number == 2
    assert list(AuditEvent.objects.filter(action="review.mark").values_list("details", flat=True)) == [
        {"from": 1, "to": 2},
        {"from": 0, "to": 1},
    ]


def test_queues_are_per_reviewer(s3, project, person, reviewer, admin):
    profile = _profile(project, person, "x\n")
    review.review_mark(reviewer=reviewer, file=MemoryFile.objects.get(pk=profile.file_id), number=1)
    assert review.review_queue(reviewer=reviewer, project=project).count() == 0
    assert review.review_queue(reviewer=admin, project=project).count() == 1


def test_flags_need_a_comment_and_are_resolved_once(s3, project, person, reviewer, admin):
    file = MemoryFile.objects.get(pk=_profile(project, person, "x\n").file_id)
    with pytest.raises(ValidationError, match="comment"):
        review.flag_create(by=reviewer, file=file, number=1, comment="   ")
    with pytest.raises(ValidationError, match="does not exist"):
        review.flag_create(by=reviewer, file=file, number=7, comment="why")
    flag = review.flag_create(by=reviewer, file=file, number=1, comment="Health data")
    with pytest.raises(ValidationError, match="how it was resolved"):
        review.flag_resolve(by=admin, flag=flag, note="  ")
    flag.refresh_from_db()
    assert flag.resolved_at is None  # no note, nothing resolved
    review.flag_resolve(by=admin, flag=flag, note="Removed the diagnosis.")
    review.flag_resolve(by=admin, flag=flag, note="again")
    flag.refresh_from_db()
    assert (flag.resolved_by, flag.resolution_note) == (admin, "Removed the diagnosis.")
    assert AuditEvent.objects.filter(action="review.resolve").count() == 1
    assert AuditEvent.objects.get(action="review.flag").details["comment"] == "Health data"


# --- Members --------------------------------------------------------------------------------------


def test_member_changes_are_audited_and_the_last_admin_stays(project, admin, make_user):
    newcomer = make_user("nina")
    members.member_set(by=admin, project=project, user=newcomer, role="employee")
    members.member_set(by=admin, project=project, user=newcomer, role="compliance")
    with pytest.raises(ValidationError, match="last admin"):
        members.member_set(by=admin, project=project, user=admin, role="employee")
    with pytest.raises(ValidationError, match="last admin"):
        members.member_remove(by=admin, membership=Membership.objects.get(user=admin))
    members.member_remove(by=admin, membership=Membership.objects.get(user=newcomer))
    actions = list(AuditEvent.objects.order_by("seq").values_list("action", "details"))
    assert actions == [
        ("member.grant", {"user": "nina", "from": None, "to": "employee"}),
        ("member.role", {"user": "nina", "from": "employee", "to": "compliance"}),
        ("member.remove", {"user": "nina", "role": "compliance"}),
    ]
    assert audit_verify() == []


# --- Isolation ------------------------------------------------------------------------------------


def test_check_isolation_finds_planted_strays_and_missing_objects(s3, project, agent, person, make_project):
    other = make_project(slug="tenders")
    _profile(project, person, "mine\n")
    notes = store.file_create(
        project=project, scope="workspace", path="a.md", content="a\n", actor=Actor.person(person)
    )
    assert isolation.check_isolation() == []

    prefix = project.prefix
    s3.put("loose/at-the-root.md", b"x")  # under no project
    s3.put(f"{prefix}notes.txt", b"x")  # inside the prefix, outside the layout
    s3.put(layout.agent_file_key(prefix, other.pk, "SOUL.md"), b"x")  # an id not of this project
    s3.put(layout.user_file_key(prefix, 99999), b"x")  # a user who is not a member
    theirs = store.file_create(
        project=other, scope="workspace", path="t.md", content="t\n", actor=Actor.person(person)
    ).file
    s3.put(f"{prefix}_history/{theirs.pk}/1-{'0' * 64}.md", b"x")  # history of another's file
    # History of a file with no record anywhere: a first save that never committed (a warning
    # reconcile clears after its grace period; tests/test_reconcile.py).
    s3.put(f"{prefix}_history/{other.pk}/1-{'0' * 64}.md", b"x")
    s3.client.delete_object(Bucket=s3.bucket, Key=notes.file.key)  # a record loses its object
    found = {(f.kind, f.key) for f in isolation.check_isolation()}
    assert found == {
        ("stray", "loose/at-the-root.md"),
        ("outside_layout", f"{prefix}notes.txt"),
        ("foreign", layout.agent_file_key(prefix, other.pk, "SOUL.md")),
        ("foreign", layout.user_file_key(prefix, 99999)),
        ("foreign", f"{prefix}_history/{theirs.pk}/1-{'0' * 64}.md"),
        ("orphan_snapshot", f"{prefix}_history/{other.pk}/1-{'0' * 64}.md"),
        ("missing_object", notes.file.key),
    }
    out = StringIO()
    with pytest.raises(CommandError, match="6 isolation finding"):
        call_command("check_isolation", stdout=out)
    assert "loose/at-the-root.md" in out.getvalue()
    # Per project, the root stray is not this project's business.
    assert ("stray", "loose/at-the-root.md") not in {
        (f.kind, f.key) for f in isolation.check_isolation([project])
    }


def test_overlapping_prefixes_are_reported(s3, make_project):
    make_project(slug="a", key_prefix="teams/a/")
    b = make_project(slug="b", key_prefix="teams/b/")
    # Saving refuses an overlap now; one made before that rule (or by hand in the database):
    Project.objects.filter(pk=b.pk).update(key_prefix="teams/a/b/")
    assert [f.kind for f in isolation.check_isolation()] == ["overlap"]


def test_policies_allow_only_the_projects_prefix(project, agent):
    policy = isolation.project_policy(project)
    resources = [s["Resource"] for s in policy["Statement"]]
    bucket = project.bucket_name
    assert resources[1] == f"arn:aws:s3:::{bucket}/{project.prefix}*"
    assert policy["Statement"][0]["Condition"]["StringLike"]["s3:prefix"] == [project.prefix + "*"]
    runner = credentials.runner_policy(agent)
    read = runner["Statement"][1]["Resource"]
    assert f"arn:aws:s3:::{bucket}/{project.prefix}agents/{agent.pk}/*" in read
    assert all(r.startswith(f"arn:aws:s3:::{bucket}/{project.prefix}") for r in read)
    assert runner["Statement"][2]["Action"] == ["s3:GetObject", "s3:PutObject"]
    out = StringIO()
    call_command("check_isolation", "--project", project.slug, "--policy", "--agent", agent.slug, stdout=out)
    assert json.loads(out.getvalue()) == runner


def test_a_project_with_its_own_bucket_is_checked_there(s3, make_project, person):
    s3.client.create_bucket(Bucket="own-bucket")
    own = make_project(slug="own", bucket="own-bucket")
    Membership.objects.create(user=person, project=own, role="employee")
    _profile(own, person, "x\n")
    assert s3.client.list_objects_v2(Bucket="own-bucket")["KeyCount"] == 2
    assert s3.keys() == []
    assert isolation.project_policy(own)["Statement"][1]["Resource"].startswith("arn:aws:s3:::own-bucket/")
    assert isolation.check_isolation() == []


# --- Export ---------------------------------------------------------------------------------------


def test_export_zips_files_as_they_stand_in_s3_with_a_history_manifest(s3, project, agent, person, admin):
    profile = _profile(project, person, "v1\n")
    _save(MemoryFile.objects.get(pk=profile.file_id), "v2\n", Actor.person(person))
    gone = store.file_create(
        project=project, scope="workspace", path="old.md", content="o\n", actor=Actor.person(admin)
    )
    removal.file_delete(file=gone.file, actor=Actor.person(admin), base_revision=1)
    buffer = io.BytesIO()
    summary = exports.project_export(by=admin, project=project, out=buffer)
    archive = zipfile.ZipFile(buffer)
    assert sorted(archive.namelist()) == ["history.json", "memory/users/maria/USER.md"]
    assert archive.read("memory/users/maria/USER.md") == b"v2\n"
    history = json.loads(archive.read("history.json"))
    by_path = {e["path"]: e for e in history["entries"]}
    assert [r["number"] for r in by_path["users/maria/USER.md"]["revisions"]] == [1, 2]
    assert by_path["users/maria/USER.md"]["matches_head"] is True
    assert by_path["workspace/old.md"]["exported"] is False
    assert by_path["workspace/old.md"]["revisions"][-1]["deletion"] is True
    assert summary["files"] == 2 and summary["revisions"] == 4
    assert AuditEvent.objects.filter(action="project.export", actor_user=admin).count() == 1


# --- Erasure --------------------------------------------------------------------------------------


def _everything_in(s3) -> list[tuple[str, bytes]]:
    """Every object and every stored version in the bucket, with its body."""
    found = []
    for page in s3.client.get_paginator("list_object_versions").paginate(Bucket=s3.bucket):
        for version in page.get("Versions", []):
            body = s3.client.get_object(Bucket=s3.bucket, Key=version["Key"], VersionId=version["VersionId"])[
                "Body"
            ].read()
            found.append((version["Key"], body))
        for marker in page.get("DeleteMarkers", []):
            found.append((marker["Key"], b""))
    return found


@pytest.mark.parametrize("versioned", [False, True], ids=["plain-bucket", "versioned-bucket"])
def test_erasure_leaves_no_object_of_the_user_under_any_prefix(
    s3, project, agent, person, admin, make_project, versioned
):
    if versioned:
        s3.client.put_bucket_versioning(Bucket=s3.bucket, VersioningConfiguration={"Status": "Enabled"})
    second = make_project(slug="reports")
    Membership.objects.create(user=person, project=second, role="employee")
    secret = "Maria's diagnosis: secret-health-fact"
    first = _profile(project, person, secret + "\n")
    _save(first.file, secret + "\nmore\n", Actor.person(person))
    _profile(second, person, secret + " in reports\n")
    # An agent proposed an append that quotes it, and a reviewer flagged it.
    token, raw = bearer.token_create(agent=agent, name="t", created_by=admin)
    session = AgentSession.objects.create(agent=agent, user=person, prompt_sha256="0" * 64)
    Proposal.objects.create(
        project=project, file=first.file, agent=agent, session=session, mode="append", content=secret
    )
    review.flag_create(by=admin, file=first.file, number=2, comment="health data")
    bystander = store.file_create(
        project=project, scope="workspace", path="team.md", content="team notes\n", actor=Actor.person(admin)
    )
    user_keys = [k for k in s3.keys() if f"/users/{person.pk}/" in k]
    assert len(user_keys) == 2

    done = erasure.profile_erase(
        by=admin, user=person, reason="GDPR art. 17 request #42", projects=[project, second]
    )

    assert done.files == 2 and done.revisions == 3 and done.projects == ["incidents", "reports"]
    remaining = _everything_in(s3)
    ids = [str(person.pk)] + [str(first.file_id)]
    assert not [
        key
        for key, _ in remaining
        if f"/users/{person.pk}/" in key or any(f"_history/{i}/" in key for i in ids)
    ]
    assert not [key for key, body in remaining if b"secret-health-fact" in body]
    assert any(key == bystander.file.key for key, _ in remaining)  # others' memory stays
    assert not MemoryFile.objects.filter(user=person).exists()
    assert not Revision.objects.filter(file_id=first.file_id).exists()
    assert not Proposal.objects.filter(content__contains="secret-health-fact").exists()
    assert not SearchText.objects.filter(text__contains="secret-health-fact").exists()
    assert not Flag.objects.exists()
    tombstones = AuditEvent.objects.filter(action="profile.erase").order_by("seq")
    assert [t.project.slug for t in tombstones] == ["incidents", "reports"]
    assert tombstones[0].actor_user == admin
    assert tombstones[0].details["reason"] == "GDPR art. 17 request #42"
    assert not AuditEvent.objects.filter(details__icontains="secret-health-fact").exists()
    assert audit_verify() == []


def _hook(client, path, body, token, key=None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    if key:
        headers["HTTP_IDEMPOTENCY_KEY"] = key
    return client.post(f"/api/v1/hooks/{path}", json.dumps(body), content_type="application/json", **headers)


def test_erasure_takes_the_profile_out_of_kept_prompts_and_stored_answers(
    client, s3, project, agent, person, admin, make_user
):
    secret = "Maria's diagnosis: secret-health-fact"
    _profile(project, person, secret + "\n")
    store.file_create(
        project=project,
        scope="agent",
        agent=agent,
        path="SOUL.md",
        content="You are the analyst.\n",
        actor=Actor.system("t"),
    )
    agent.hook_policy = {"post": {"USER.md": {"modes": ["append", "replace"], "approval": False}}}
    agent.save()
    _, token = bearer.token_create(agent=agent, name="t", created_by=admin)
    ivan = make_user("ivan")
    Membership.objects.create(user=ivan, project=project, role="employee")
    theirs = _hook(client, "pre", {"user": "ivan"}, token).json()  # someone else's receipt
    session = _hook(client, "pre", {"user": person.username}, token).json()
    assert secret in session["prompt"]
    # A stale replace answers with the profile's text (head_text), kept in the session's
    # event and in the idempotency record of the request.
    conflict = _hook(
        client,
        "post",
        {
            "session": session["session"],
            "writes": [{"path": "USER.md", "mode": "replace", "content": "x\n", "base_revision": 0}],
        },
        token,
        key="k1",
    ).json()
    assert conflict["results"][0]["head_text"].startswith(secret)

    done = erasure.profile_erase(by=admin, user=person, reason="GDPR", projects=[project])

    assert not [key for key, body in _everything_in(s3) if b"secret-health-fact" in body]
    assert s3.get(layout.prompt_key(project.prefix, theirs["prompt_sha256"]))  # not hers: stays
    assert not [e.pk for e in SessionEvent.objects.all() if "secret-health-fact" in str(e.payload)]
    assert not [
        r.pk
        for r in IdempotencyRecord.objects.all()
        if "secret-health-fact" in str(r.response) + str(r.partial)
    ]
    assert not AgentSession.objects.get(pk=session["session"]).prompt_stored
    tombstone = AuditEvent.objects.get(action="profile.erase")
    assert (tombstone.details["prompts"], tombstone.details["answers_scrubbed"]) == (1, 2)
    assert done.files == 1
    client.force_login(admin)
    page = client.get(f"/p/{project.slug}/sessions/{session['session']}/")
    assert page.status_code == 200 and b"secret-health-fact" not in page.content


def test_the_profile_of_someone_who_left_the_project_can_be_erased(client, s3, project, person, admin):
    _profile(project, person, "Maria secret\n")
    membership = Membership.objects.get(user=person, project=project)
    client.force_login(admin)
    client.post(f"/p/{project.slug}/members/{membership.pk}/", {"remove": "1"})
    assert MemoryFile.objects.filter(project=project, user=person).exists()  # kept on removal
    people = client.get(f"/p/{project.slug}/people/").content.decode()
    erase = f"/p/{project.slug}/people/{person.pk}/erase/"
    assert erase in people  # listed under the profiles of people who left
    response = client.post(erase, {"reason": "GDPR art. 17", "confirm": "maria", "projects": [project.slug]})
    assert response.status_code == 302
    jobs.job_run(BackgroundJob.objects.get().pk)  # the events worker's step
    assert not MemoryFile.objects.filter(project=project, user=person).exists()


def test_erasure_needs_a_reason(project, person, admin):
    with pytest.raises(ValidationError, match="why"):
        erasure.profile_erase(by=admin, user=person, reason=" ", projects=[project])
