"""Memory hygiene by default: an agent's own tool and error logs are not fed back into its
prompt by the default manifest, log lines carry no file contents, a section that injects logs
is warned about unless it has a small cap, and a file two sections select is injected once,
by the first, with a warning on the settings page, its preview and the simulation."""

import pytest
from django.urls import reverse

from projects.audit import Actor
from projects.memory import store
from projects.models import AgentSession
from projects.runners import context, hooks, injection

pytestmark = pytest.mark.django_db


@pytest.fixture
def busy(s3, project, agent, person):
    """An agent that has run a while: notes, and its own logs grown long."""
    system = Actor.system("t")
    store.file_create(
        project=project,
        scope="agent",
        agent=agent,
        path="SOUL.md",
        content="You analyse incidents.\n",
        actor=system,
    )
    store.file_create(
        project=project,
        scope="workspace",
        path="notes/db.md",
        content="- db-2 needs its pool raised\n",
        actor=system,
    )
    session = AgentSession.objects.create(agent=agent, user=person, prompt_sha256="0" * 64)
    for n in range(5):
        hooks.hook_event(
            session=session,
            kind="tool",
            payload={"name": "Read", "summary": f'{{"file_path": "/srv/secret-{n}.md", "content": "x"}}'},
        )
    return project


def test_the_default_manifest_leaves_the_agents_own_logs_out(busy, agent, person):
    assembly = context.build_context(agent=agent, user=person)
    assert "db-2 needs its pool raised" in assembly.prompt
    assert "workspace/logs/tools.md" not in assembly.prompt and "tool `Read`" not in assembly.prompt
    assert context.manifest_warnings(agent=agent, manifest=agent.manifest) == {"overlaps": [], "logs": []}


def test_a_row_of_its_own_with_a_small_cap_injects_the_logs_once(busy, agent, person):
    manifest = {
        "sections": [
            {"tag": "recent_activity", "source": "workspace/logs/**.md", "max_tokens": 200},
            {"tag": "workspace_memory", "source": "workspace/**.md", "max_tokens": 6000},
        ]
    }
    assembly = context.build_context(agent=agent, user=person, manifest=manifest)
    assert assembly.prompt.count("### file: workspace/logs/tools.md") == 1
    # A section read from the workspace is untrusted by default: its tag opens with attributes.
    recent = assembly.prompt.split("<recent_activity ")[1].split("</recent_activity>")[0]
    assert "tool `Read`" in recent and "secret" not in recent
    assert assembly.overlaps == [
        {"path": "workspace/logs/tools.md", "section": "recent_activity", "also": "workspace_memory"}
    ]
    assert context.manifest_warnings(agent=agent, manifest=manifest)["logs"] == []
    assert injection.log_warnings(
        injection.parse_manifest({"sections": [{"tag": "w", "source": "workspace/**.md"}]}),
        ["workspace/logs/tools.md"],
    ) == [{"tag": "w", "log": "workspace/logs/tools.md", "cap": None}]


def test_the_settings_page_and_its_preview_warn_about_overlaps_and_logs(client, busy, agent, admin):
    agent.manifest = {
        "sections": [
            {"tag": "notes", "source": "workspace/notes/*.md"},
            {"tag": "workspace_memory", "source": "workspace/**.md", "max_tokens": 6000},
        ]
    }
    agent.save()
    client.force_login(admin)
    url = reverse("projects:agent_settings", args=[busy.slug, agent.slug])
    page = client.get(url).content.decode()
    assert (
        "workspace/notes/db.md is selected by notes and by workspace_memory: it is injected "
        "once, in notes (the first section wins)."
    ) in page
    assert ("workspace_memory injects the log workspace/logs/tools.md under a cap of 6000 tokens") in page
    preview = client.post(
        url,
        {
            "which": "manifest",
            "preview": "1",
            "preview_user": "",
            "manifest-sections-TOTAL_FORMS": "1",
            "manifest-sections-INITIAL_FORMS": "0",
            "manifest-sections-0-tag": "workspace_memory",
            "manifest-sections-0-source": "workspace/**.md",
            "manifest-sections-0-exclude": "workspace/logs/**.md",
            "manifest-sections-0-max_tokens": "6000",
            "manifest-sections-0-ORDER": "1",
            "manifest-total_tokens": "",
        },
    )
    assert preview.context["preview"]["warnings"] == {"overlaps": [], "logs": []}
    simulate = client.get(reverse("projects:simulate", args=[busy.slug]), {"agent": agent.slug})
    assert b"is selected by notes and by workspace_memory" in simulate.content


def test_exclude_is_checked_like_a_source():
    for bad in ("logs/**.md", ["workspace/../x.md"], ["notes.md"], ["workspace/x.md"] * 11):
        with pytest.raises(Exception, match="exclude"):
            injection.parse_manifest(
                {"sections": [{"tag": "w", "source": "workspace/**.md", "exclude": bad}]}, saving=True
            )
    with pytest.raises(Exception, match="exclude"):
        injection.parse_manifest(
            {"sections": [{"tag": "s", "source": "SOUL.md", "exclude": ["workspace/x.md"]}]}, saving=True
        )
