"""Cache-friendly prompts: each section's change rate from the receipts, an order with the
rarely-changing sections first, and the stable prefix it gives. A workspace section that
changes every session, first and then last: the measured prefix grows as computed."""

import pytest
from django.urls import reverse
from django.utils import timezone

from projects.audit import Actor
from projects.memory import store
from projects.memory.health import prompts, stability
from projects.runners import prehook


@pytest.mark.db_independent
def test_rarely_changing_sections_first_keep_the_longest_prefix():
    rates = [stability.SectionRate("workspace", 9, 9, 100), stability.SectionRate("identity", 0, 9, 300)]
    assert stability.suggested_order(rates) == ["identity", "workspace"]
    assert stability.expected_share(rates, ["workspace", "identity"]) == 0.0
    assert stability.expected_share(rates, ["identity", "workspace"]) == 0.75
    assert stability.expected_share(rates, ["workspace", "identity"], lead=100) == 0.2
    histories = [
        [
            [("a", "r1", 10), ("b", "r1", 5)],
            [("a", "r1", 10), ("b", "r2", 5)],
            [("a", "r1", 10), ("b", "r3", 5)],
        ]
    ]
    assert [(r.tag, r.rate) for r in stability.change_rates(histories)] == [("a", 0.0), ("b", 1.0)]


def _sessions(agent, person, notes, start, count):
    for n in range(start, start + count):
        prehook.hook_pre(agent=agent, user=person, external_ref=f"s{n}")
        store.file_save(
            file=notes,
            content=f"- session {n}: p99 {800 + n} ms\n",
            actor=Actor.for_agent(agent, f"s{n}"),
            base_revision=notes.head.number,
        )
        notes.refresh_from_db()


@pytest.mark.django_db
def test_a_workspace_section_that_changes_each_session_moved_last_grows_the_stable_prefix(
    s3, client, project, agent, person, admin
):
    system = Actor.system("t")
    store.file_create(
        project=project,
        scope="agent",
        agent=agent,
        path="SOUL.md",
        content="You analyse incidents. " * 60 + "\n",
        actor=system,
    )
    notes = store.file_create(
        project=project, scope="workspace", path="notes/now.md", content="- session 0\n", actor=system
    ).file
    agent.manifest = {
        "sections": [
            {"tag": "workspace_memory", "source": "workspace/**.md"},
            {"tag": "agent_identity", "source": "SOUL.md"},
        ]
    }
    agent.save()
    _sessions(agent, person, notes, 1, 4)
    figures = prompts.cache_figures(agent, now=timezone.now())
    assert [(r["tag"], r["rate"]) for r in figures["rates"]] == [
        ("workspace_memory", 1.0),
        ("agent_identity", 0.0),
    ]
    assert figures["suggested_order"] == ["agent_identity", "workspace_memory"]
    # The preface opens every prompt the same way; the computed share is a floor (within a
    # section that changed, the bytes before the change repeat too: its fence, its tag).
    before = figures["measured"]
    assert figures["expected"] <= before + 0.02 and before < 0.5
    client.force_login(admin)
    page = client.get(reverse("projects:agent_settings", args=[project.slug, agent.slug])).content.decode()
    assert "Suggested order: agent_identity, workspace_memory" in page

    agent.manifest = {"sections": list(reversed(agent.manifest["sections"]))}  # as suggested
    agent.save()
    reordered = timezone.now()
    _sessions(agent, person, notes, 5, 4)
    shares = [share for _s, _p, share in prompts.stability_pairs(agent, since=reordered)]
    assert len(shares) == 3
    measured = sum(shares) / len(shares)
    assert measured >= figures["suggested"] - 0.02 and figures["suggested"] > figures["expected"] + 0.3
    assert measured > before + 0.4
