"""An admin edits an agent's manifest in a real browser, row by row: a bad tag is refused at its
field with the typed rows kept, a preview shows what the edit would change, and after saving
the next pre hook the runner calls follows the new manifest."""

import json

import pytest
from playwright.sync_api import expect

from projects.audit import Actor
from projects.memory import store
from projects.models import Membership

pytestmark = [pytest.mark.browser, pytest.mark.db_independent, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def olga(s3, project, agent, make_user):
    user = make_user("olga-admin")
    user.set_password("settings and rules")
    user.save()
    Membership.objects.create(user=user, project=project, role="admin")
    store.file_create(
        project=project,
        agent=agent,
        scope="agent",
        path="SOUL.md",
        content="You are calm.\n",
        actor=Actor.system("seed"),
    )
    store.file_create(
        project=project,
        agent=agent,
        scope="agent",
        path="AGENTS.md",
        content="Cite the runbook.\n",
        actor=Actor.system("seed"),
    )
    store.file_create(
        project=project,
        scope="workspace",
        path="decisions/pools.md",
        content="Pools sized by p99.\n",
        actor=Actor.system("seed"),
    )
    return user


def _pre(client, token: str) -> dict:
    response = client.post(
        "/api/v1/hooks/pre", data="{}", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.status_code == 200, response.content
    return json.loads(response.content)


def test_admin_edits_the_manifest_and_the_next_pre_hook_follows(
    page, live_server, olga, project, agent, token, client
):
    before = _pre(client, token)
    assert "<agent_rules>" in before["prompt"] and "<decisions>" not in before["prompt"]

    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill("olga-admin")
    page.get_by_label("Password").fill("settings and rules")
    page.get_by_role("button", name="Log in").click()
    page.goto(f"{live_server.url}/p/{project.slug}/agents/{agent.slug}/settings/")
    manifest = page.locator("#manifest")
    expect(manifest.get_by_label("Tag 1", exact=True)).to_have_value("agent_identity")

    manifest.get_by_label("Remove 2", exact=True).check()  # drop agent_rules
    rows = manifest.locator("tbody tr")
    blank = rows.last  # the empty row adds a section
    blank.locator("input[name$='-tag']").fill("Decisions!")
    blank.locator("input[name$='-source']").fill("workspace/decisions/*.md")
    blank.locator("input[name$='-max_tokens']").fill("300")
    blank.locator("input[name$='-ORDER']").fill("0")
    manifest.get_by_role("button", name="Save manifest").first.click()
    expect(page.locator("#manifest .error").first).to_be_visible()
    expect(page.locator("#manifest")).to_contain_text("Lower-case letters")
    blank = page.locator("#manifest tbody tr").last
    expect(blank.locator("input[name$='-source']")).to_have_value("workspace/decisions/*.md")

    blank.locator("input[name$='-tag']").fill("decisions")
    page.locator("#manifest").get_by_role("button", name="Preview without saving").click()
    expect(page.locator("#manifest-preview")).to_contain_text("Preview: not saved")
    expect(page.locator("#manifest-preview table.diff")).to_contain_text("Pools sized by p99.")
    agent.refresh_from_db()
    assert "decisions" not in json.dumps(agent.manifest)  # the preview saved nothing

    page.locator("#manifest").get_by_role("button", name="Save manifest").first.click()
    expect(page.locator(".messages")).to_contain_text("Saved the injection manifest.")
    expect(page.locator("#manifest").get_by_label("Tag 1", exact=True)).to_have_value("decisions")

    after = _pre(client, token)
    assert after["prompt"].startswith("What follows is your memory")
    assert '\n\n<decisions trust="untrusted"' in after["prompt"]
    assert "\n### file: workspace/decisions/pools.md\n" in after["prompt"]
    assert "<agent_rules>" not in after["prompt"] and "<agent_identity>" in after["prompt"]
