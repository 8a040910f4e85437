"""Employees' consent: an employee sees the agents' proposals on their own USER.md and approves
or rejects them; never those on someone else's profile or on an agent's files."""

import pytest
from django.urls import reverse

from projects.audit import Actor, audit_verify
from projects.memory import removal, store
from projects.models import AuditEvent, Membership, Proposal, Revision

pytestmark = pytest.mark.django_db


@pytest.fixture
def proposals(s3, project, agent, person, make_user):
    """Pending proposals on Maria's USER.md, on Ivan's USER.md and on the agent's AGENTS.md."""
    ivan = make_user("ivan")
    Membership.objects.create(user=ivan, project=project, role=Membership.Role.EMPLOYEE)
    mine = store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="Maria\n",
        actor=Actor.person(person),
    ).file
    theirs = store.file_create(
        project=project, scope="user", user=ivan, path="USER.md", content="Ivan\n", actor=Actor.person(ivan)
    ).file
    rules = store.file_create(
        project=project,
        scope="agent",
        agent=agent,
        path="AGENTS.md",
        content="Be brief.\n",
        actor=Actor.system("t"),
    ).file

    def propose(file, content):
        return Proposal.objects.create(
            project=project, file=file, agent=agent, mode="append", content=content
        )

    return {
        "mine": propose(mine, "Maria works nights.\n"),
        "theirs": propose(theirs, "Ivan likes tea.\n"),
        "rules": propose(rules, "Always answer in haiku.\n"),
        "ivan": ivan,
    }


def _decide(client, project, proposal, decision, note=""):
    return client.post(
        reverse("projects:proposal_decide", args=[project.slug, proposal.pk]),
        {"decision": decision, "note": note},
    )


def test_employee_sees_only_proposals_on_their_own_profile(client, project, person, proposals):
    client.force_login(person)
    response = client.get(reverse("projects:proposal_list", args=[project.slug]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Maria works nights." in html
    assert "Ivan likes tea." not in html and "haiku" not in html
    assert [p.pk for p, _diff in response.context["items"]] == [proposals["mine"].pk]
    decide = reverse("projects:proposal_decide", args=[project.slug, proposals["mine"].pk])
    assert f'action="{decide}"' in html


def test_employee_approves_a_proposal_on_their_profile_and_the_trail_names_them(
    client, s3, project, person, proposals
):
    client.force_login(person)
    response = _decide(client, project, proposals["mine"], "approve", "yes, that is right")
    assert response.status_code == 302
    proposal = Proposal.objects.select_related("file", "revision").get(pk=proposals["mine"].pk)
    assert (proposal.status, proposal.decided_by) == ("approved", person)
    assert s3.get(proposal.file.key).decode() == "Maria\nMaria works nights.\n"
    assert proposal.revision.author_kind == Revision.AuthorKind.AGENT  # the agent's words
    event = AuditEvent.objects.get(action="proposal.approve")
    assert (event.actor_user, event.actor_label, event.object_id) == (person, "maria", str(proposal.pk))
    assert event.details["note"] == "yes, that is right"
    assert audit_verify() == []


def test_employee_rejects_a_proposal_on_their_profile(client, s3, project, person, proposals):
    client.force_login(person)
    assert _decide(client, project, proposals["mine"], "reject").status_code == 302
    proposal = Proposal.objects.select_related("file").get(pk=proposals["mine"].pk)
    assert (proposal.status, proposal.decided_by) == ("rejected", person)
    assert s3.get(proposal.file.key).decode() == "Maria\n"
    assert AuditEvent.objects.get(action="proposal.reject").actor_user == person


def test_employee_cannot_decide_someone_elses_or_an_agents_proposal(client, project, person, proposals):
    client.force_login(person)
    for name in ("theirs", "rules"):
        assert _decide(client, project, proposals[name], "approve").status_code == 404
        assert Proposal.objects.get(pk=proposals[name].pk).status == "pending"
    assert not AuditEvent.objects.filter(action__startswith="proposal.").exists()


def test_compliance_reads_every_proposal_but_decides_none(client, project, reviewer, proposals):
    client.force_login(reviewer)
    response = client.get(reverse("projects:proposal_list", args=[project.slug]))
    assert len(response.context["items"]) == 3 and b'name="decision"' not in response.content
    assert _decide(client, project, proposals["mine"], "approve").status_code == 404


def test_admin_keeps_deciding_every_proposal(client, project, admin, proposals):
    client.force_login(admin)
    response = client.get(reverse("projects:proposal_list", args=[project.slug]))
    assert response.content.count(b'name="decision" value="approve"') == 3
    assert _decide(client, project, proposals["rules"], "reject").status_code == 302
    assert Proposal.objects.get(pk=proposals["rules"].pk).decided_by == admin


def test_dashboard_counts_own_pending_proposals_and_links_to_them(client, project, person, proposals):
    client.force_login(person)
    response = client.get(reverse("projects:dashboard"))
    [row] = response.context["profile_rows"]
    assert row["pending"] == 1  # Ivan's and the agent's are not Maria's to decide
    link = reverse("projects:proposal_list", args=[project.slug])
    assert f'<a href="{link}"><strong>1</strong></a>' in response.content.decode()
    detail = client.get(reverse("projects:project_detail", args=[project.slug]))
    assert detail.context["pending_count"] == 1 and link in detail.content.decode()
    _decide(client, project, proposals["mine"], "approve")
    [row] = client.get(reverse("projects:dashboard")).context["profile_rows"]
    assert row["pending"] == 0


def test_an_append_proposal_on_a_file_deleted_meanwhile_is_not_approved(client, s3, project, admin, agent):
    notes = store.file_create(
        project=project,
        scope="workspace",
        path="notes/a.md",
        content="Note one.\n",
        actor=Actor.person(admin),
    ).file
    proposal = Proposal.objects.create(
        project=project, file=notes, agent=agent, mode="append", content="Note two.\n"
    )
    removal.file_delete(file=notes, actor=Actor.person(admin), base_revision=1)
    client.force_login(admin)
    page = _decide(client, project, proposal, "approve")
    assert "The file was deleted after this was proposed" in client.get(page.url).content.decode()
    assert Proposal.objects.get(pk=proposal.pk).status == "pending"
    assert s3.keys(notes.key) == []  # not brought back holding only the addition


def test_decided_proposals_show_the_text_that_was_approved_or_rejected(
    client, project, person, proposals, s3
):
    client.force_login(person)
    _decide(client, project, proposals["mine"], "approve", "right")
    url = reverse("projects:proposal_list", args=[project.slug])
    approved = client.get(url, {"status": "approved"}).content.decode()
    assert "Text to append" in approved and "Maria works nights." in approved
    revision = Proposal.objects.get(pk=proposals["mine"].pk).revision
    assert (
        reverse("projects:revision_detail", args=[project.slug, revision.file_id, revision.number])
        in approved
    )
    other = Proposal.objects.create(
        project=project,
        file=proposals["mine"].file,
        agent=proposals["mine"].agent,
        mode="replace",
        content="Maria is someone else.\n",
    )
    _decide(client, project, other, "reject", "no")
    rejected = client.get(url, {"status": "rejected"}).content.decode()
    assert "Proposed text (replaces the file)" in rejected and "Maria is someone else." in rejected
