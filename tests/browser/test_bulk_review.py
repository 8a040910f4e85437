"""Bulk review by keyboard in Chromium: 50 pending proposals, chosen with j and x, decided
with a and r and one note each time; 50 decisions, each its own audit event."""

import pytest
from playwright.sync_api import expect

from projects.audit import Actor
from projects.memory import store
from projects.models import AuditEvent, Membership, Proposal

pytestmark = [pytest.mark.browser, pytest.mark.db_independent, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def fifty(s3, project, agent, make_user):
    user = make_user("olga-bulk")
    Membership.objects.create(user=user, project=project, role="admin")
    notes = store.file_create(
        project=project,
        scope="workspace",
        path="notes/bulk.md",
        content="# Notes\n",
        actor=Actor.person(user),
    ).file
    Proposal.objects.bulk_create(
        [
            Proposal(project=project, file=notes, agent=agent, mode="append", content=f"- note {n}\n")
            for n in range(50)
        ]
    )
    return user


def test_fifty_proposals_decided_by_keyboard_are_fifty_audited_decisions(page, live_server, fifty, project):
    base = live_server.url
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("Username").fill(fifty.username)
    page.get_by_label("Password").fill(f"pw-{fifty.username}")
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("h1")).to_be_visible()

    page.goto(f"{base}/p/{project.slug}/proposals/bulk/")
    expect(page.locator("#bulk-rows tr[data-row]")).to_have_count(50)
    expect(page.locator("#bulk-rows tr.current")).to_have_count(1)
    # Ten approved: x selects, j moves on; the note is typed once.
    page.locator("#bulk-note").fill("weekly review")
    page.locator("h1").click()  # out of the note: keys are commands again
    for _ in range(10):
        page.keyboard.press("x")
        page.keyboard.press("j")
    page.keyboard.press("k")
    expect(page.locator("#bulk-rows tr.current")).to_have_attribute("id", f"proposal-{_nth(9)}")
    expect(page.locator("#bulk-rows input:checked")).to_have_count(10)
    page.keyboard.press("a")
    expect(page.locator(".messages")).to_contain_text("Approved 10 proposals.")
    expect(page.locator("#bulk-rows tr[data-row]")).to_have_count(40)
    # The other forty rejected the same way.
    page.locator("#bulk-note").fill("duplicates")
    page.locator("h1").click()
    for _ in range(40):
        page.keyboard.press("x")
        page.keyboard.press("j")
    page.keyboard.press("r")
    expect(page.locator(".messages")).to_contain_text("Rejected 40 proposals.")
    expect(page.locator("#bulk-rows")).to_contain_text("No pending proposals.")

    approvals = AuditEvent.objects.filter(action="proposal.approve")
    rejections = AuditEvent.objects.filter(action="proposal.reject")
    assert (approvals.count(), rejections.count()) == (10, 40)
    assert {e.details["note"] for e in approvals} == {"weekly review"}
    assert {e.details["note"] for e in rejections} == {"duplicates"}
    assert len({e.object_id for e in [*approvals, *rejections]}) == 50  # one event per proposal
    notes = Proposal.objects.first().file
    notes.refresh_from_db()
    assert notes.head.number == 11  # each approval appended its note


def _nth(index: int) -> int:
    return Proposal.objects.order_by("created_at", "pk").values_list("pk", flat=True)[index]
