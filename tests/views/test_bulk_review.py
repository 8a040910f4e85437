"""Bulk review without a browser: by filter, each decision its own audit event; compliance
reads but does not decide."""

import pytest
from django.urls import reverse

from projects.memory import records
from projects.models import AuditEvent, MemoryFile, Proposal

pytestmark = pytest.mark.django_db


def test_a_filter_decides_every_match_with_one_note_and_compliance_decides_nothing(
    client, project, agent, admin, reviewer
):
    merged = records.file_ensure(project=project, scope=MemoryFile.Scope.WORKSPACE, path="notes/a.md")
    other = records.file_ensure(project=project, scope=MemoryFile.Scope.WORKSPACE, path="notes/b.md")
    Proposal.objects.bulk_create(
        [
            Proposal(project=project, file=merged, agent=agent, mode="append", consolidation="merge")
            for _ in range(3)
        ]
        + [Proposal(project=project, file=other, agent=agent, mode="append", content="- mine\n")]
    )
    url = reverse("projects:proposal_bulk", args=[project.slug])
    client.force_login(reviewer)
    assert b"notes/a.md" in client.get(url, {"job": "merge"}).content
    client.post(url, {"job": "merge", "scope": "filter", "decision": "reject", "note": "no"})
    assert not AuditEvent.objects.filter(action="proposal.reject").exists()  # compliance reads only
    client.force_login(admin)
    page = client.get(url, {"job": "merge"})
    assert page.context["total"] == 3 and b"notes/b.md" not in page.content
    answer = client.post(url, {"job": "merge", "scope": "filter", "decision": "reject", "note": "dupes"})
    assert answer.status_code == 302 and answer["Location"].endswith("?job=merge")
    events = AuditEvent.objects.filter(action="proposal.reject")
    assert events.count() == 3 and {e.details["note"] for e in events} == {"dupes"}
    assert Proposal.objects.get(file=other).status == "pending"  # outside the filter
