"""The example runner, run as a separate process against a live test server: the whole
memory cycle (pre, sandbox pull, edits, tool, push through post, next pre sees it)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from projects.audit import Actor
from projects.memory import store
from projects.models import MemoryFile, Proposal, Revision
from projects.runners import bearer
from runnerkit import Client, Sandbox

pytestmark = [pytest.mark.db_independent, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def setup(s3, project, agent, person, make_user):
    system = Actor.system("t")
    store.file_create(
        project=project, scope="agent", agent=agent, path="SOUL.md", content="You are calm.\n", actor=system
    )
    store.file_create(
        project=project,
        scope="agent",
        agent=agent,
        path="AGENTS.md",
        content="- Cite sources.\n",
        actor=system,
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
        project=project, scope="workspace", path="incidents/a.md", content="# Incident A\n", actor=system
    )
    _, raw = bearer.token_create(agent=agent, name="example", created_by=make_user("ops"))
    return raw


def test_example_runner_completes_the_memory_cycle(live_server, setup, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "MGC_"))}
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "runner.py"),
            "--url",
            live_server.url,
            "--token",
            setup,
            "--user",
            "maria",
            "--workdir",
            str(tmp_path / "box"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "new memory is in the prompt" in result.stdout
    appended = MemoryFile.objects.get(path="incidents/a.md")
    assert appended.head.number == 2 and appended.head.author_kind == "agent"
    assert appended.head.session_ref  # each change carries its session id
    assert MemoryFile.objects.filter(path__startswith="runs/").count() == 1
    # AGENTS.md and USER.md are proposals per the default policy, waiting for a person.
    assert sorted(Proposal.objects.values_list("file__path", flat=True)) == ["AGENTS.md", "USER.md"]
    assert MemoryFile.objects.get(path="AGENTS.md").head.number == 1


def test_sandbox_keeps_local_copy_on_conflict_and_marks_read_only(live_server, setup, agent, tmp_path):
    agent.hook_policy["post"]["workspace/**.md"] = {"modes": ["replace"], "approval": False}
    agent.save()
    client = Client(live_server.url, setup)
    session = client.pre(user="maria")["session"]
    box = Sandbox(client, session, tmp_path)
    box.pull()
    soul = tmp_path / "SOUL.md"
    assert not os.access(soul, os.W_OK) or os.geteuid() == 0
    assert soul.stat().st_mode & 0o222 == 0  # read-only: the policy does not allow writes
    local = tmp_path / "workspace" / "incidents" / "a.md"
    local.write_text("# Incident A\n\nlocal analysis\n", encoding="utf-8")
    file = MemoryFile.objects.select_related("head", "project").get(path="incidents/a.md")
    store.file_save(
        file=file,
        content="# Incident A\n\nchanged in the console\n",
        actor=Actor.system("t"),
        base_revision=1,
    )
    report = box.push(summary="analysis")
    assert [(r["path"], r["status"]) for r in report] == [("workspace/incidents/a.md", "conflict")]
    assert local.read_text(encoding="utf-8") == "# Incident A\n\nlocal analysis\n"
    assert Revision.objects.filter(file=file).count() == 2
