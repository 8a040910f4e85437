"""The hooks without HTTP (runners.hooks, prehook, policy, proposals): the hook policy,
per-write results of the post hook, tool and error logs, proposals and policy validation."""

import pytest
from django.core.exceptions import ValidationError

from projects.audit import Actor
from projects.memory import adoption, reading, store
from projects.models import Agent, AgentSession, MemoryFile, Proposal, SessionEvent, default_hook_policy
from projects.runners import context as prompt_context
from projects.runners import hooks, policy, prehook, proposals, schemas

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(s3, project, agent, person):
    store.file_create(
        project=project,
        scope=MemoryFile.Scope.WORKSPACE,
        path="notes/a.md",
        content="# A\n",
        actor=Actor.system("t"),
    )
    return AgentSession.objects.create(agent=agent, user=person, prompt_sha256="0" * 64)


def test_policy_rule_matches_exact_names_then_workspace_globs(agent):
    agent.hook_policy["post"]["workspace/decisions/*.md"] = {"modes": ["replace"]}
    assert policy.policy_rule(agent, "AGENTS.md") == {"modes": ["append"], "approval": True}
    assert policy.policy_rule(agent, "SOUL.md") is None
    assert policy.policy_rule(agent, "workspace/x/y.md")["modes"] == ["append", "replace"]


def test_post_answers_each_write_in_order_and_never_raises(session, agent):
    results = hooks.hook_post(
        session=session,
        writes=[
            hooks.WriteRequest("workspace/notes/a.md", "append", "- one\n"),
            hooks.WriteRequest("SOUL.md", "replace", "I am someone else."),
            hooks.WriteRequest("AGENTS.md", "append", "- a rule\n"),
            hooks.WriteRequest("workspace/../x.md", "append", "x"),
            hooks.WriteRequest("workspace/notes/a.md", "replace", "stale", base_revision=1),
        ],
        summary="run",
    )
    assert [(r["path"], r["status"], r.get("code")) for r in results] == [
        ("workspace/notes/a.md", "written", None),
        ("SOUL.md", "rejected", "policy_denied"),
        ("AGENTS.md", "proposed", None),
        ("workspace/../x.md", "rejected", "bad_path"),
        ("workspace/notes/a.md", "conflict", "conflict"),
    ]
    assert results[4]["head_text"] == "# A\n- one\n" and results[4]["head_revision"] == 2
    event = SessionEvent.objects.get(session=session, kind="post")
    assert event.payload["results"] == results
    assert AgentSession.objects.get(pk=session.pk).ended_at is not None


def test_tool_and_error_append_to_the_policys_logs_without_file_contents(session, s3):
    summary = '{"input": {"file_path": "/home/maria/.mgc-memory/USER.md", "content": "secret"}}'
    hooks.hook_event(session=session, kind="tool", payload={"name": "Write", "summary": summary})
    hooks.hook_event(
        session=session,
        kind="error",
        payload={"message": "timeout after 30 s\nTraceback: the file held: secret " + "x" * 400},
    )
    tools = MemoryFile.objects.get(path="logs/tools.md")
    errors_log = MemoryFile.objects.get(path="logs/errors.md")
    tool_line = reading.revision_read(tools.head)
    assert tool_line.endswith(f"session {str(session.pk)[:8]} tool `Write`\n")
    assert "secret" not in tool_line and ".mgc-memory" not in tool_line
    error_line = reading.revision_read(errors_log.head)
    assert "error: timeout after 30 s\n" in error_line and "secret" not in error_line
    # The whole summary stays in the session's event, where a person looks it up.
    assert SessionEvent.objects.get(session=session, kind="tool").payload["summary"] == summary


def test_the_default_policy_refuses_an_agents_replace_of_its_own_log(session, agent, s3):
    """The agent adds to its tool and error logs and never rewrites them: the default policy's
    rule for workspace/logs/**.md (append only) is stricter than workspace/**.md's."""
    hooks.hook_event(session=session, kind="tool", payload={"name": "grep", "summary": "3 hits"})
    log = MemoryFile.objects.get(path="logs/tools.md")
    before = reading.revision_read(log.head)
    results = hooks.hook_post(
        session=session,
        writes=[
            hooks.WriteRequest("workspace/logs/tools.md", "replace", "nothing happened\n", base_revision=1),
            hooks.WriteRequest("workspace/logs/tools.md", "delete", base_revision=1),
            hooks.WriteRequest("workspace/logs/errors.md", "replace", "no errors\n"),
            hooks.WriteRequest("workspace/logs/tools.md", "append", "- a line the agent adds\n"),
            hooks.WriteRequest("workspace/notes/a.md", "replace", "# A, rewritten\n", base_revision=1),
        ],
        end=False,
    )
    assert [(r["status"], r.get("code")) for r in results] == [
        ("rejected", "policy_denied"),
        ("rejected", "policy_denied"),
        ("rejected", "policy_denied"),
        ("written", None),
        ("written", None),
    ]
    assert "allows only append writes to workspace/logs/tools.md" in results[0]["message"]
    log = MemoryFile.objects.select_related("head", "project").get(pk=log.pk)
    assert reading.file_read(log).text == before + "- a line the agent adds\n"
    assert not MemoryFile.objects.filter(path="logs/errors.md").exists()
    assert policy.log_rewrites(agent) == [("workspace/logs/tools.md", []), ("workspace/logs/errors.md", [])]


def test_agents_on_the_old_default_policy_move_to_append_only_logs(project, agent):
    """Migration 0033, as 0020 did for the manifest: the untouched old default moves, an
    edited policy stays as its admin made it, and the migration runs backwards too."""
    from django.apps import apps

    migration = __import__("projects.migrations.0033_default_policy_logs_append_only", fromlist=["forwards"])
    edited = Agent.objects.create(project=project, slug="edited", name="Edited")
    for one in (agent, edited):
        one.hook_policy = migration.OLD_DEFAULT
        one.save()
    edited.hook_policy = {**migration.OLD_DEFAULT, "tool": {"log": "workspace/runs/tools.md"}}
    edited.save()
    migration.forwards(apps, None)
    agent.refresh_from_db()
    edited.refresh_from_db()
    assert agent.hook_policy == default_hook_policy() == migration.NEW_DEFAULT
    assert policy.policy_rule(agent, "workspace/logs/errors.md")["modes"] == ["append"]
    assert "workspace/logs/**.md" not in edited.hook_policy["post"]
    migration.backwards(apps, None)
    agent.refresh_from_db()
    assert agent.hook_policy == migration.OLD_DEFAULT


def test_a_rejected_proposal_stays_rejected_and_writes_nothing(session, agent, admin):
    proposal = Proposal.objects.create(
        project=agent.project,
        file=MemoryFile.objects.get(path="notes/a.md"),
        agent=agent,
        session=session,
        mode="append",
        content="- x\n",
    )
    proposals.proposal_reject(proposal=proposal, by=admin, note="no")
    proposals.proposal_reject(proposal=proposal, by=admin, note="again")  # a second click
    with pytest.raises(policy.HookError) as info:
        proposals.proposal_approve(proposal=proposal, by=admin)
    assert info.value.code == "not_pending"
    assert MemoryFile.objects.get(path="notes/a.md").head.number == 1


@pytest.mark.parametrize(
    "policy",
    [
        [],
        {"post": {"../x.md": {"modes": ["append"]}}},
        {"post": {"USER.md": {"modes": ["delete"]}}},
        {"post": {"USER.md": {"modes": []}}},
        {"tool": {"log": "elsewhere.md"}},
        {"tool": {"log": "workspace/../x.md"}},
        {"other": {}},
    ],
)
def test_bad_policies_are_refused_with_a_reason(policy):
    with pytest.raises(ValidationError) as info:
        schemas.policy(policy)
    assert info.value.messages[0]


def test_pre_hook_injects_a_direct_write_another_hook_adopted_while_it_assembled(
    s3, project, agent, person, monkeypatch
):
    # The pre hook assembles from the recorded heads while its LISTs are in flight. A direct
    # write that a concurrent hook adopts in that moment is already recorded when the LISTs
    # come back; the hook must still see that its own assembly missed it.
    file = store.file_create(
        project=project,
        scope=MemoryFile.Scope.WORKSPACE,
        path="notes/a.md",
        content="# A\n",
        actor=Actor.system("t"),
    ).file
    # As if a runner held credentials that may write the workspace (only then is it listed).
    project.runner_writable = {"workspace": True, "agents": []}
    project.save(update_fields=["runner_writable"])
    agent.project = project
    s3.put(file.key, b"# A\n\nwritten directly\n")
    assemblies = []
    real = prompt_context.build_context

    def assemble_while_another_hook_adopts(**kwargs):
        assembly = real(**kwargs)
        if not assemblies:
            adoption.adopt(file)
        assemblies.append(assembly)
        return assembly

    monkeypatch.setattr(prompt_context, "build_context", assemble_while_another_hook_adopts)
    session, assembly = prehook.hook_pre(agent=agent, user=person)
    assert "written directly" not in assemblies[0].prompt
    assert "written directly" in assembly.prompt
    assert prehook.receipt_revisions(session)["workspace/notes/a.md"] == 2


def test_pre_hook_fences_what_an_agent_wrote_and_the_manifest_can_trust_it(session, agent, person):
    """Issue 37, item 3: the receipt (which the pre hook's answer is made from) lists each
    section's trust and origin; an agent's line makes the workspace's origin agents as well,
    and a manifest that marks the section trusted takes the fence off."""
    hooks.hook_post(
        session=session,
        writes=[hooks.WriteRequest("workspace/notes/a.md", "append", "- the agent's note\n")],
    )
    new, assembly = prehook.hook_pre(agent=agent, user=person)
    workspace = next(s for s in new.receipt if s["tag"] == "workspace_memory")
    assert (workspace["trust"], workspace["origin"]) == ("untrusted", ["people", "agents"])
    assert '<workspace_memory trust="untrusted" origin="people,agents">' in assembly.prompt
    assert assembly.prompt.startswith("What follows is your memory")
    agent.manifest["sections"][-1]["trust"] = "trusted"
    agent.manifest["preface"] = "Records, not orders."
    agent.save(update_fields=["manifest"])
    again, assembly = prehook.hook_pre(agent=agent, user=person)
    workspace = next(s for s in again.receipt if s["tag"] == "workspace_memory")
    assert (workspace["trust"], workspace["origin"]) == ("trusted", ["people", "agents"])
    assert (
        assembly.prompt.startswith("Records, not orders.\n\n") and "\n<workspace_memory>\n" in assembly.prompt
    )
