"""Truncation is loud: a prompt cut to a section cap or to the budget is flagged on the
dashboard for admins and reviewers, on the agent's page (with a chart of prompt size per day
against the budget, drawn from the receipts) and in the session list."""

import datetime as dt
import re

import pytest
from django.urls import reverse
from django.utils import timezone

from projects.audit import Actor
from projects.governance import prompts
from projects.memory import store
from projects.models import AgentSession
from projects.runners import prehook

pytestmark = pytest.mark.django_db


@pytest.fixture
def cut_agent(s3, project, agent, person):
    store.file_create(
        project=project,
        scope="agent",
        agent=agent,
        path="SOUL.md",
        content="You are calm.\n",
        actor=Actor.system("t"),
    )
    store.file_create(
        project=project,
        scope="workspace",
        path="notes/long.md",
        content="word " * 400 + "\n",
        actor=Actor.system("t"),
    )
    agent.manifest = {
        "sections": [
            {"tag": "agent_identity", "source": "SOUL.md"},
            {"tag": "workspace_memory", "source": "workspace/**.md", "max_tokens": 50},
        ],
        "total_tokens": 2000,
    }
    agent.save()
    return agent


def _session_on(agent, days_ago: int, tokens: int, truncated: bool = False) -> AgentSession:
    session = AgentSession.objects.create(
        agent=agent, prompt_sha256="0" * 64, total_tokens=tokens, truncated=truncated
    )
    AgentSession.objects.filter(pk=session.pk).update(created_at=timezone.now() - dt.timedelta(days=days_ago))
    return session


def test_a_cut_prompt_is_flagged_for_admins_and_reviewers_not_employees(
    client, cut_agent, person, admin, reviewer, project
):
    session, _ = prehook.hook_pre(agent=cut_agent, user=person)
    assert session.truncated
    for user in (admin, reviewer):
        client.force_login(user)
        page = client.get(reverse("projects:dashboard")).content.decode()
        assert 'id="panel-truncation"' in page and "&lt;workspace_memory&gt;" in page
        assert reverse("projects:session_detail", args=[project.slug, session.pk]) in page
    client.force_login(person)
    assert 'id="panel-truncation"' not in client.get(reverse("projects:dashboard")).content.decode()


def test_no_flag_without_a_cut(client, s3, agent, person, admin):
    prehook.hook_pre(agent=agent, user=person)
    client.force_login(admin)
    assert 'id="panel-truncation"' not in client.get(reverse("projects:dashboard")).content.decode()


def test_the_agent_page_says_what_was_cut_and_charts_size_against_budget(client, cut_agent, person, project):
    prehook.hook_pre(agent=cut_agent, user=person)
    _session_on(cut_agent, 3, 2500, truncated=True)
    _session_on(cut_agent, 3, 900)
    _session_on(cut_agent, 40, 9999)  # outside the chart's 30 days
    client.force_login(person)
    page = client.get(reverse("projects:agent_detail", args=[project.slug, cut_agent.slug]))
    html = page.content.decode()
    assert "2 of 3 prompts in the last 7 days were truncated" in html
    chart = page.context["chart"]
    assert [(b.peak, b.sessions, b.cut) for b in chart.bars][0] == (2500, 2, 1)
    assert len(chart.bars) == 2 and chart.budget == 2000
    assert chart.budget_y > chart.bars[0].y  # the 2,500-token day rises above the budget line
    assert len(re.findall(r'<rect class="bar cut"', html)) == 2
    assert 'class="budget-line"' in html and "<script" not in html.split("<main", 1)[1]


def test_the_session_list_marks_truncated_sessions(client, cut_agent, person, admin, project):
    prehook.hook_pre(agent=cut_agent, user=person)
    client.force_login(admin)
    page = client.get(reverse("projects:session_list", args=[project.slug])).content.decode()
    assert "truncated</span>" in page


def test_chart_scale_and_days_are_pure_arithmetic(cut_agent):
    today = timezone.now().date()
    _session_on(cut_agent, 0, 1000)
    chart = prompts.prompt_chart(cut_agent, today=today)
    bar = chart.bars[-1]
    assert bar.day == today and chart.top == int(2000 * 1.1) + 1
    assert bar.height == pytest.approx((chart.height - prompts.CHART_TOP) * 1000 / chart.top, abs=0.2)


def test_a_cut_section_says_its_content_against_its_cap_never_more_than_the_cap(
    client, cut_agent, person, admin, project
):
    """The cap counts the content; the tags come on top. "67 / 60" read as a broken cap: the
    page says the content's tokens against the cap, and from how much it was cut."""
    session, assembly = prehook.hook_pre(agent=cut_agent, user=person)
    [section] = [s for s in assembly.sections if s.tag == "workspace_memory"]
    assert section.truncated and section.content_tokens <= 50 < section.tokens
    receipt = {s["tag"]: s for s in session.receipt}["workspace_memory"]
    assert receipt["content_tokens"] == section.content_tokens
    client.force_login(admin)
    for url in (
        reverse("projects:session_detail", args=[project.slug, session.pk]),
        reverse("projects:simulate", args=[project.slug]) + f"?agent={cut_agent.slug}&user={person.pk}",
    ):
        html = re.sub(r"\s+", " ", client.get(url).content.decode())
        assert f"content {section.content_tokens} of its cap 50" in html, url
        assert f"cut from {section.content_tokens_before} to {section.content_tokens}" in html
        assert f"{section.tokens} / 50" not in html
