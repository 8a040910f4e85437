"""seed_demo fills the bucket with exactly the keys the layout gives, and nothing else."""

from io import StringIO

import pytest
from django.core.management import call_command

from projects.demo.content import PROJECTS
from projects.memory import layout
from projects.models import Agent, AgentSession, MemoryFile, Project, Proposal, Revision

pytestmark = pytest.mark.django_db


def test_bucket_after_seed_holds_exactly_the_layout_keys(s3):
    out = StringIO()
    call_command("seed_demo", "--password", "demo-pass-123", stdout=out)
    assert "Password: demo-pass-123" in out.getvalue()

    expected = set()
    for spec in PROJECTS:
        project = Project.objects.get(slug=spec["slug"])
        agent = Agent.objects.get(project=project, slug=spec["agent"]["slug"])
        prefix = f"projects/{project.id}/"
        for name in ("SOUL.md", "AGENTS.md", "TOOLS.md"):
            expected.add(f"{prefix}agents/{agent.id}/{name}")
        for file in MemoryFile.objects.filter(project=project, scope="user"):
            expected.add(f"{prefix}users/{file.user_id}/USER.md")
        assert MemoryFile.objects.filter(project=project, scope="user").count() == len(spec["profiles"])
        for path in spec["workspace"]:
            expected.add(f"{prefix}workspace/{path}")
        for file in MemoryFile.objects.filter(project=project, scope="workspace"):
            expected.add(f"{prefix}workspace/{file.path}")  # and what the demo run appended
        for sha in AgentSession.objects.filter(agent__project=project).values_list(
            "prompt_sha256", flat=True
        ):
            expected.add(layout.prompt_key(prefix, sha))
        for revision in Revision.objects.filter(file__project=project):
            expected.add(layout.snapshot_key(prefix, revision.file_id, revision.number, revision.sha256))
    assert set(s3.keys()) == expected
    # Workspace files carry their revisions; content is readable as it stands in the bucket.
    incident = MemoryFile.objects.get(path="incidents/2026-11-28-card-auth-latency.md")
    assert incident.head.number == 3
    assert s3.get(incident.key).decode().startswith("# 2026-11-28 Card authorisation latency")
    tender = MemoryFile.objects.get(path="закупки/0373100000126000123.md")
    assert "НМЦК" in s3.get(tender.key).decode("utf-8")
    # The demo runs went through the real hooks: receipts, a proposal waiting for the
    # employee's consent, and one truncated prompt to be flagged.
    assert AgentSession.objects.count() == 2
    assert AgentSession.objects.filter(truncated=True).count() == 1
    assert all(s.prompt_stored for s in AgentSession.objects.all())
    assert Proposal.objects.get(status="pending").file.user.username == "employee"


def test_seed_is_idempotent(s3):
    call_command("seed_demo", "--password", "demo-pass-123", stdout=StringIO())
    keys, revisions = s3.keys(), Revision.objects.count()
    call_command("seed_demo", "--password", "demo-pass-456", stdout=StringIO())
    assert s3.keys() == keys and Revision.objects.count() == revisions
