"""Delete and rename as governed writes of the post hook: the hook policy says, per path,
whether each goes directly, as a proposal, or never; history records both (a rename is a
tombstone at the old path that names the new one, and a revision at the new path that names
the old); restore and "rename back" undo them; retries with the same Idempotency-Key, and
answers lost on the way from S3, write nothing twice."""

import datetime as dt
import json

import pytest
from django.urls import reverse
from django.utils import timezone

from projects.audit import Actor
from projects.governance import retention, review
from projects.memory import errors, layout, reading, records, removal, store
from projects.models import AuditEvent, MemoryFile, Proposal, Revision
from projects.runners import proposals, schemas
from tests.conftest import reload_file

pytestmark = pytest.mark.django_db

OLD, NEW = "workspace/drafts/plan.md", "workspace/decisions/plan.md"


@pytest.fixture
def memory(s3, project, agent, person):
    system = Actor.system("t")
    store.file_create(
        project=project, scope="agent", agent=agent, path="SOUL.md", content="You plan.\n", actor=system
    )
    store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="Maria prefers UTC.\n",
        actor=Actor.person(person),
    )
    store.file_create(
        project=project,
        scope="workspace",
        path="drafts/plan.md",
        content="# Plan\n- ship on Monday\n",
        actor=system,
    )
    store.file_create(
        project=project, scope="workspace", path="drafts/old.md", content="# Old\n", actor=system
    )
    del agent.hook_policy["post"]["workspace/**.md"]
    agent.hook_policy["post"].update(
        {
            "workspace/drafts/*.md": {"modes": ["append", "replace"], "delete": "direct", "rename": "direct"},
            "workspace/decisions/*.md": {"modes": ["replace"]},
            "workspace/archive/*.md": {"modes": ["append"], "approval": True},
            "USER.md": {"modes": ["append"], "approval": True, "delete": "proposal"},
        }
    )
    agent.save()
    return project


def _api(client, path, body, token, key=None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    if key:
        headers["HTTP_IDEMPOTENCY_KEY"] = key
    return client.post(f"/api/v1/{path}", data=json.dumps(body), content_type="application/json", **headers)


def _session(client, token) -> str:
    return _api(client, "hooks/pre", {"user": "maria"}, token).json()["session"]


def _post(client, token, session, writes, key=None, **extra):
    response = _api(client, "hooks/post", {"session": session, "writes": writes, **extra}, token, key)
    assert response.status_code == 200, response.content
    return response


def _file(project, path) -> MemoryFile:
    return MemoryFile.objects.select_related("head", "project").get(
        project=project, path=path.removeprefix("workspace/")
    )


def test_a_rename_is_a_tombstone_here_and_a_revision_there_that_names_it(client, memory, token, agent, s3):
    session = _session(client, token)
    result = _post(client, token, session, [{"path": OLD, "mode": "rename", "new_path": NEW}]).json()[
        "results"
    ][0]
    assert result == {
        "path": OLD,
        "mode": "rename",
        "new_path": NEW,
        "status": "written",
        "revision": 2,
        "new_revision": 1,
        **{
            k: None
            for k in ("unchanged", "proposal", "head_revision", "head_text", "code", "findings", "message")
        },
    }
    old, new = _file(memory, OLD), _file(memory, NEW)
    assert old.is_deleted and old.head.renamed_to == new
    assert new.head.renamed_from == old and new.head.sha256 == Revision.objects.get(file=old, number=1).sha256
    assert (new.head.author_agent, new.head.session_ref) == (agent, session)
    assert s3.keys(old.key) == [] and s3.get(new.key) == b"# Plan\n- ship on Monday\n"
    assert reading.file_read(new).text == "# Plan\n- ship on Monday\n"
    actions = list(AuditEvent.objects.filter(actor_agent=agent).values_list("action", flat=True))
    assert "file.rename" in actions and "file.rename_in" in actions
    # The next prompt carries it at its new path only.
    prompt = _api(client, "hooks/pre", {"user": "maria"}, token).json()["prompt"]
    assert f"### file: {NEW}" in prompt and f"### file: {OLD}" not in prompt


def test_rename_back_from_the_tombstone_undoes_it(client, memory, token, admin):
    session = _session(client, token)
    _post(client, token, session, [{"path": OLD, "mode": "rename", "new_path": NEW}])
    old, new = _file(memory, OLD), _file(memory, NEW)
    client.force_login(admin)
    page = client.get(reverse("projects:revision_detail", args=[memory.slug, old.pk, 2]))
    assert b"Rename back" in page.content and NEW.encode() in page.content
    response = client.post(
        reverse("projects:file_rename_undo", args=[memory.slug, old.pk, 2]),
        {"base_revision": 1, "message": ""},
    )
    assert response.status_code == 302
    old, new = reload_file(old), reload_file(new)
    assert not old.is_deleted and old.head.number == 3 and old.head.renamed_from == new
    assert new.is_deleted and new.head.renamed_to == old
    assert reading.file_read(old).text == "# Plan\n- ship on Monday\n"
    history = client.get(reverse("projects:file_history", args=[memory.slug, old.pk]))
    assert f"renamed to {NEW}".encode() in history.content
    assert f"renamed from {NEW}".encode() in history.content


def test_a_delete_is_a_tombstone_and_restore_brings_the_text_back(client, memory, token, person):
    session = _session(client, token)
    result = _post(client, token, session, [{"path": "workspace/drafts/old.md", "mode": "delete"}]).json()[
        "results"
    ][0]
    assert (result["status"], result["revision"]) == ("written", 2)
    file = _file(memory, "workspace/drafts/old.md")
    assert file.is_deleted and file.head.author_kind == "agent"
    assert AuditEvent.objects.filter(action="file.delete", object_id=str(file.pk)).exists()
    store.file_restore(file=file, number=1, actor=Actor.person(person), base_revision=2)
    assert reading.file_read(reload_file(file)).text == "# Old\n"
    # Deleting what is gone, or what never was, is refused with a reason.
    again = _post(
        client,
        token,
        session,
        [
            {"path": "workspace/drafts/nothing.md", "mode": "delete"},
            {"path": "workspace/drafts/old.md", "mode": "delete", "base_revision": 2},
        ],
    ).json()
    assert [(r["status"], r["code"]) for r in again["results"]] == [
        ("rejected", "not_found"),
        ("conflict", "conflict"),
    ]


def test_the_policy_decides_per_path_and_old_rules_mean_never(client, memory, token):
    session = _session(client, token)
    results = _post(
        client,
        token,
        session,
        [
            {"path": "workspace/decisions/x.md", "mode": "append", "content": "x"},  # replace only
            {"path": "SOUL.md", "mode": "delete"},  # no rule
            {"path": "AGENTS.md", "mode": "delete"},  # an old rule: no delete key, never
            {"path": OLD, "mode": "rename", "new_path": "workspace/elsewhere/x/plan.md"},
            {"path": OLD, "mode": "rename", "new_path": "workspace/drafts/old.md"},  # taken
            {"path": OLD, "mode": "rename", "new_path": "USER.md"},
        ],
    ).json()["results"]
    assert [(r["status"], r["code"]) for r in results] == [
        ("rejected", "policy_denied"),
        ("rejected", "policy_denied"),
        ("rejected", "policy_denied"),
        ("rejected", "policy_denied"),
        ("rejected", "target_exists"),
        ("rejected", "bad_path"),
    ]
    assert "rename workspace/drafts/plan.md" not in results[3]["message"]
    assert "elsewhere" in results[3]["message"]
    assert not _file(memory, OLD).is_deleted


def test_a_rename_into_a_path_that_needs_approval_is_a_proposal_applied_on_approval(
    client, memory, token, admin
):
    session = _session(client, token)
    result = _post(
        client, token, session, [{"path": OLD, "mode": "rename", "new_path": "workspace/archive/plan.md"}]
    ).json()["results"][0]
    assert result["status"] == "proposed"
    proposal = Proposal.objects.get(pk=result["proposal"])
    assert (proposal.mode, proposal.new_path, proposal.base_revision) == (
        "rename",
        "workspace/archive/plan.md",
        1,
    )
    assert not _file(memory, OLD).is_deleted  # nothing moved yet
    client.force_login(admin)
    page = client.get(reverse("projects:proposal_list", args=[memory.slug]))
    assert b"rename workspace/drafts/plan.md to workspace/archive/plan.md" in page.content
    revision = proposals.proposal_approve(proposal=proposal, by=admin)
    moved = _file(memory, "workspace/archive/plan.md")
    assert revision == moved.head and moved.head.renamed_from == _file(memory, OLD)
    assert revision.author_kind == "agent" and _file(memory, OLD).is_deleted
    assert proposals.proposal_approve(proposal=proposal, by=admin) == revision  # a double click


def test_deleting_a_profile_is_the_persons_to_consent_to(client, memory, token, person, admin):
    session = _session(client, token)
    result = _post(client, token, session, [{"path": "USER.md", "mode": "delete"}]).json()["results"][0]
    assert result["status"] == "proposed"
    client.force_login(person)
    page = client.get(reverse("projects:proposal_list", args=[memory.slug]))
    assert b"delete users/maria/USER.md" in page.content
    proposal = Proposal.objects.get(pk=result["proposal"])
    response = client.post(
        reverse("projects:proposal_decide", args=[memory.slug, proposal.pk]), {"decision": "approve"}
    )
    assert response.status_code == 302
    profile = MemoryFile.objects.select_related("head").get(scope="user", user=person)
    assert profile.is_deleted and profile.head.author_kind == "agent"


def test_a_retried_rename_with_the_same_key_moves_once_and_answers_the_same(client, memory, token):
    session = _session(client, token)
    writes = [
        {"path": OLD, "mode": "rename", "new_path": NEW},
        {"path": "workspace/drafts/old.md", "mode": "delete"},
    ]
    first = _post(client, token, session, writes, key="k-move")
    again = _post(client, token, session, writes, key="k-move")
    assert again["Idempotent-Replayed"] == "true" and again.json() == first.json()
    assert Revision.objects.filter(file__path="decisions/plan.md").count() == 1
    assert Revision.objects.filter(file__path="drafts/plan.md").count() == 2
    assert Revision.objects.filter(file__path="drafts/old.md").count() == 2


def test_a_rename_whose_delete_answer_was_lost_is_recorded_once(s3, memory, agent):
    old = _file(memory, OLD)
    new = records.workspace_file_new(project=memory, path="decisions/plan.md")
    s3.proxy.inject("DELETE", r"/workspace/drafts/plan\.md$", "lose")
    tombstone, moved = removal.file_rename(
        file=old, target=new, actor=Actor.for_agent(agent, "s"), base_revision=1
    )
    assert tombstone.is_deletion and moved.renamed_from == old
    assert s3.keys(old.key) == [] and s3.get(new.key) == b"# Plan\n- ship on Monday\n"


def test_a_rename_that_failed_halfway_is_finished_by_its_retry(s3, memory, agent):
    """The copy landed, the old object's DELETE never arrived (nothing changed there): the
    rename answers 503; the same rename again adopts its own copy and finishes."""
    old = _file(memory, OLD)
    new = records.workspace_file_new(project=memory, path="decisions/plan.md")
    actor = Actor.for_agent(agent, "s-1")
    s3.proxy.inject("DELETE", r"/workspace/drafts/plan\.md$", "drop")
    with pytest.raises(errors.StorageUnavailable) as info:
        removal.file_rename(file=old, target=new, actor=actor, base_revision=1)
    assert info.value.outcome == "unknown"  # not "nothing was changed": the copy is there
    assert s3.get(old.key) and s3.get(new.key)  # two copies for a moment, never none
    tombstone, moved = removal.file_rename(
        file=reload_file(old), target=reload_file(new), actor=actor, base_revision=1
    )
    assert (tombstone.number, moved.number) == (2, 1)
    assert moved.renamed_from == old and moved.author_agent == agent
    assert s3.keys(old.key) == []
    # Someone else's file at the target is never overwritten.
    other = records.workspace_file_new(project=memory, path="decisions/other.md")
    store.file_save(file=other, content="theirs\n", actor=Actor.system("t"), base_revision=None)
    store.file_create(
        project=memory, scope="workspace", path="drafts/plan.md", content="again\n", actor=Actor.system("t")
    )
    with pytest.raises(errors.TargetExists):
        removal.file_rename(file=_file(memory, OLD), target=reload_file(other), actor=actor, base_revision=3)
    assert s3.get(other.key) == b"theirs\n"


def test_a_runners_delete_and_rename_wait_for_review_like_any_write(client, memory, token, reviewer):
    """A reviewer who read everything finds the runner's delete and both ends of its rename
    in the queue, first (agents' writes), shown for what they are; marking them empties it."""
    for file in MemoryFile.objects.filter(project=memory).select_related("head"):
        review.review_mark(reviewer=reviewer, file=file, number=file.head.number)
    assert not review.review_queue(reviewer=reviewer, project=memory).exists()
    session = _session(client, token)
    _post(
        client,
        token,
        session,
        [
            {"path": "workspace/drafts/old.md", "mode": "delete"},
            {"path": OLD, "mode": "rename", "new_path": NEW},
        ],
    )

    queue = list(review.review_queue(reviewer=reviewer, project=memory))
    assert {f.source_path: f.by_agent for f in queue} == {
        "workspace/drafts/old.md": True,
        OLD: True,
        NEW: True,
    }
    client.force_login(reviewer)
    page = client.get(reverse("projects:review_queue", args=[memory.slug]))
    items = {item.file.source_path: item for item in page.context["items"]}
    assert [r.number for r in items["workspace/drafts/old.md"].revisions] == [2]
    assert items["workspace/drafts/old.md"].revisions[0].is_deletion
    assert (
        items[OLD].revisions[0].renamed_to.source_path,
        items[NEW].revisions[0].renamed_from.source_path,
    ) == (NEW, OLD)
    text = page.content.decode()
    assert "deleted</span>" in text
    assert f"renamed to {NEW}" in text and f"renamed from {OLD}" in text
    for file in queue:
        response = client.post(
            reverse("projects:review_mark", args=[memory.slug, file.pk]), {"number": file.head.number}
        )
        assert response.status_code == 302
    assert not review.review_queue(reviewer=reviewer, project=memory).exists()


def test_retention_counts_a_runners_delete_or_rename_as_the_files_last_change(
    client, memory, token, admin, s3
):
    """Everything was written 100 days ago; today the runner renames one file and deletes
    another. A 30-day rule expires only the untouched file now; in 31 days the renamed file
    at its new path, and the deleted and renamed-away paths (their texts) go too."""
    Revision.objects.filter(file__project=memory).update(created_at=timezone.now() - dt.timedelta(days=100))
    store.file_create(
        project=memory, scope="workspace", path="drafts/kept.md", content="# Kept\n", actor=Actor.system("t")
    )
    Revision.objects.filter(file__path="drafts/kept.md").update(
        created_at=timezone.now() - dt.timedelta(days=100)
    )
    session = _session(client, token)
    _post(
        client,
        token,
        session,
        [
            {"path": "workspace/drafts/old.md", "mode": "delete"},
            {"path": OLD, "mode": "rename", "new_path": NEW},
        ],
    )
    retention.rule_add(by=admin, project=memory, kind="files", glob="workspace/**", days=30)

    [row] = retention.preview(memory)
    assert {item.label for item in row["today"].due} == {"workspace/drafts/kept.md"}
    assert {item.label for item in row["soon"]} == {NEW, OLD, "workspace/drafts/old.md"}
    assert retention.apply(memory).files == 1

    later = timezone.now() + dt.timedelta(days=31)
    run = retention.apply(memory, now=later)
    assert run.files == 3
    for path in (NEW, OLD, "workspace/drafts/old.md"):
        file = _file(memory, path)
        assert file.head.expired_rule == "files workspace/** 30 days", path
        assert not s3.keys(file.key) and not s3.keys(layout.history_prefix(memory.prefix, file.pk)), path
    assert retention.apply(memory, now=later).files == 0


def test_policies_with_delete_and_rename_are_checked():
    ok = schemas.policy(
        {
            "post": {
                "workspace/a/*.md": {"modes": [], "delete": "proposal", "rename": "never"},
                "AGENTS.md": {"modes": ["append"], "approval": True},
            }
        }
    ).stored()
    assert ok["post"]["workspace/a/*.md"]["delete"] == "proposal"
    for rule in ({"modes": [], "delete": "sometimes"}, {"modes": []}, {"modes": ["delete"]}):
        with pytest.raises(Exception, match="rule"):
            schemas.policy({"post": {"workspace/a.md": rule}})
    with pytest.raises(Exception, match="renamed"):
        schemas.policy({"post": {"USER.md": {"modes": ["append"], "rename": "direct"}}})


def test_the_schema_refuses_a_rename_without_a_target_and_a_delete_with_content(client, memory, token):
    session = _session(client, token)
    for write in (
        {"path": OLD, "mode": "rename"},
        {"path": OLD, "mode": "delete", "content": ""},
        {"path": OLD, "mode": "append"},
        {"path": OLD, "mode": "append", "content": "x", "new_path": NEW},
    ):
        response = _api(client, "hooks/post", {"session": session, "writes": [write]}, token)
        assert response.status_code == 422, write
    spec = client.get("/api/v1/openapi.json").json()["components"]["schemas"]
    variants = {name: spec[name] for name in ("AppendIn", "ReplaceIn", "DeleteIn", "RenameIn")}
    assert {v["properties"]["mode"]["const"] for v in variants.values()} == {
        "append",
        "replace",
        "delete",
        "rename",
    }
    assert variants["RenameIn"]["required"] == ["path", "mode", "new_path"]
    assert "content" not in variants["DeleteIn"]["properties"]


def test_the_settings_form_sets_delete_and_rename_per_rule(client, memory, admin, agent):
    client.force_login(admin)
    url = reverse("projects:agent_settings", args=[memory.slug, agent.slug])
    page = client.get(url)
    assert b'name="policy-rules-0-delete"' in page.content
    data = {
        "which": "policy",
        "policy-rules-TOTAL_FORMS": "2",
        "policy-rules-INITIAL_FORMS": "0",
        "policy-rules-0-path": "workspace/notes/*.md",
        "policy-rules-0-append": "on",
        "policy-rules-0-approval": "direct",
        "policy-rules-0-delete": "proposal",
        "policy-rules-0-rename": "direct",
        "policy-rules-1-path": "USER.md",
        "policy-rules-1-approval": "proposal",
        "policy-rules-1-rename": "direct",
        "policy-tool_log": "",
        "policy-error_log": "",
    }
    refused = client.post(url, data)
    assert refused.status_code == 400
    assert "rename" in refused.context["policy"].rules.forms[1].errors
    data.update({"policy-rules-1-rename": "never", "policy-rules-1-delete": "proposal"})
    assert client.post(url, data).status_code == 302
    agent.refresh_from_db()
    assert agent.hook_policy["post"] == {
        "workspace/notes/*.md": {
            "modes": ["append"],
            "approval": False,
            "delete": "proposal",
            "rename": "direct",
        },
        "USER.md": {"modes": [], "approval": True, "delete": "proposal"},
    }
    page = client.get(url)  # shown again as saved
    shown = {f.initial.get("path"): f.initial for f in page.context["policy"].rules.forms}
    assert shown["workspace/notes/*.md"]["rename"] == "direct"
    assert (shown["USER.md"]["delete"], shown["USER.md"]["rename"]) == ("proposal", "never")


def test_the_export_keeps_both_ends_of_a_rename(client, memory, token, admin):
    import io
    import zipfile

    from projects.governance import exports

    session = _session(client, token)
    _post(client, token, session, [{"path": OLD, "mode": "rename", "new_path": NEW}])
    buffer = io.BytesIO()
    exports.project_export(by=admin, project=memory, out=buffer)
    history = json.loads(zipfile.ZipFile(buffer).read("history.json"))
    by_path = {e["path"]: e for e in history["entries"]}
    assert by_path[OLD]["revisions"][-1]["renamed_to"] == NEW
    assert by_path[NEW]["revisions"][0]["renamed_from"] == OLD
    assert by_path[NEW]["exported"] and not by_path[OLD]["exported"]
