"""Byte-exact receipts: each pre hook's prompt kept in S3 under its sha256, once per distinct
prompt, never written by a runner; the session page shows it, tokens per file, the events as
JSON, and a diff when re-assembling it now differs."""

import hashlib
import json
import uuid

import pytest
from django.urls import reverse

from projects.audit import Actor
from projects.memory import layout, store
from projects.models import AgentSession, Membership, MemoryFile
from projects.runners import hooks, prehook

pytestmark = pytest.mark.django_db


@pytest.fixture
def memory(s3, project, agent, person):
    system = Actor.system("t")
    store.file_create(
        project=project, scope="agent", agent=agent, path="SOUL.md", content="You are calm.\n", actor=system
    )
    store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="Maria: prefers UTC.\n",
        actor=Actor.person(person),
    )
    for name, words in (("a", 3), ("b", 40)):
        store.file_create(
            project=project,
            scope="workspace",
            path=f"decisions/{name}.md",
            content=" ".join(["pool"] * words) + "\n",
            actor=system,
        )
    return project


def _prompt_puts(s3) -> list[str]:
    return [path for method, path in s3.proxy.requests if method == "PUT" and "/_prompts/" in path]


def test_the_exact_prompt_is_kept_once_under_its_sha256(memory, agent, person, s3):
    s3.proxy.clear()
    first, assembly = prehook.hook_pre(agent=agent, user=person)
    second, again = prehook.hook_pre(agent=agent, user=person)
    key = layout.prompt_key(memory.prefix, assembly.sha256)
    assert s3.get(key) == assembly.prompt.encode("utf-8")
    assert hashlib.sha256(s3.get(key)).hexdigest() == first.prompt_sha256
    assert again.sha256 == assembly.sha256 and len(_prompt_puts(s3)) == 1  # identical: once
    assert first.prompt_stored and second.prompt_stored
    other, changed = prehook.hook_pre(agent=agent, user=None)  # no profile: another prompt
    assert changed.sha256 != assembly.sha256 and len(_prompt_puts(s3)) == 2
    assert other.prompt_stored


def test_a_lost_answer_still_answers_the_runner_and_the_prompt_is_read_back(
    memory, agent, person, s3, client, admin
):
    s3.proxy.inject("PUT", r"/_prompts/", "lose")
    session, assembly = prehook.hook_pre(agent=agent, user=person)
    assert session.prompt_stored is False  # the answer never came: not claimed
    assert s3.get(layout.prompt_key(memory.prefix, assembly.sha256)) == assembly.prompt.encode()
    later, _ = prehook.hook_pre(agent=agent, user=person)  # 412: it is there
    assert later.prompt_stored
    client.force_login(admin)
    page = client.get(reverse("projects:session_detail", args=[memory.slug, session.pk]))
    assert page.context["stored_prompt"] == assembly.prompt  # read back, checked, not trusted


def test_a_runner_cannot_plant_a_receipt(memory, agent, admin, s3):
    """Runners' S3 credentials write their session scratch space; receipts live outside it."""
    from projects.runners import bearer, credentials
    from tests.test_credentials import _client, _code

    token, _raw = bearer.token_create(agent=agent, name="runner", created_by=admin)
    credential, secret = credentials.credentials_issue(token=token, by=admin)
    runner = _client(s3, credential.access_key_id, secret)
    planted = layout.prompt_key(memory.prefix, "a" * 64)
    scratch = f"{layout.session_prefix(memory.prefix, agent.pk, uuid.uuid4())}x.md"
    assert _code(lambda: runner.put_object(Bucket=s3.bucket, Key=scratch, Body=b"x")) == "OK"
    assert _code(lambda: runner.put_object(Bucket=s3.bucket, Key=planted, Body=b"x")) == "AccessDenied"


def test_session_page_shows_the_prompt_tokens_per_file_and_json_events(memory, agent, person, client, admin):
    session, assembly = prehook.hook_pre(agent=agent, user=person)
    hooks.hook_event(session=session, kind="tool", payload={"tool": "grep", "args": ["-n", "ж"]})
    client.force_login(admin)
    page = client.get(reverse("projects:session_detail", args=[memory.slug, session.pk]))
    html = page.content.decode()
    assert page.context["stored_prompt"] == assembly.prompt
    assert "reassembly_diff" not in page.context
    files = {f["path"]: f["tokens"] for s in session.receipt for f in s["files"]}
    assert files["workspace/decisions/a.md"] < files["workspace/decisions/b.md"]
    for tokens in files.values():
        assert f"<td>{tokens}</td>" in html
    assert "&quot;tool&quot;: &quot;grep&quot;" in html and "ж" in html  # JSON, not a repr


def test_a_re_assembly_that_differs_is_shown_as_a_diff(memory, agent, person, client, admin):
    session, assembly = prehook.hook_pre(agent=agent, user=person)
    agent.manifest = {"sections": [{"tag": "agent_identity", "source": "SOUL.md"}]}
    agent.save()
    client.force_login(admin)
    page = client.get(reverse("projects:session_detail", args=[memory.slug, session.pk]))
    assert page.context["stored_prompt"] == assembly.prompt
    assert page.context["reassembly_diff"].rows
    assert "Re-assembled now" in page.content.decode()


def test_a_tampered_copy_is_not_shown_as_the_receipt(memory, agent, person, client, admin, s3):
    session, assembly = prehook.hook_pre(agent=agent, user=person)
    s3.put(layout.prompt_key(memory.prefix, assembly.sha256), b"<agent_identity>obey</agent_identity>")
    client.force_login(admin)
    page = client.get(reverse("projects:session_detail", args=[memory.slug, session.pk]))
    assert page.context["stored_prompt"] is None
    assert "not in storage" in page.content.decode()


def test_employees_see_only_their_own_sessions_receipts(memory, agent, person, client, make_user):
    other = make_user("ivan")
    Membership.objects.create(user=other, project=memory, role="employee")
    session, _ = prehook.hook_pre(agent=agent, user=person)
    client.force_login(other)
    assert client.get(reverse("projects:session_detail", args=[memory.slug, session.pk])).status_code == 404


def test_truncation_is_recorded_on_the_session(memory, agent, person):
    agent.manifest = {
        "sections": [
            {"tag": "agent_identity", "source": "SOUL.md"},
            {"tag": "decisions", "source": "workspace/decisions/*.md", "max_tokens": 30},
        ],
        "total_tokens": 1000,
    }
    agent.save()
    session, _ = prehook.hook_pre(agent=agent, user=person)
    assert session.truncated and not session.over_budget and session.budget == 1000
    decisions = next(s for s in session.receipt if s["tag"] == "decisions")
    assert decisions["truncated"] and decisions["tokens_before"] > 30
    agent.manifest["total_tokens"] = 40
    agent.manifest["sections"][1].pop("max_tokens")
    agent.save()
    over, _ = prehook.hook_pre(agent=agent, user=person)
    assert over.over_budget and over.truncated
    assert json.loads(json.dumps(over.receipt))  # stored as plain JSON
    assert MemoryFile.objects.filter(project=memory).count() == 4
    assert AgentSession.objects.filter(truncated=True).count() == 2
