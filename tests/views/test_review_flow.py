"""The review flow as a compliance officer walks it: mark reviewed and go on to the next file,
flag the revision that caused a problem, see whether the scanner's findings are still there,
and leave one audit event per file read, not one per page load."""

import datetime as dt

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from projects.audit import Actor, audit_verify
from projects.governance import review, trail
from projects.memory import store
from projects.models import AuditEvent, Flag, MemoryFile, Proposal, Revision

pytestmark = pytest.mark.django_db


def _write(project, path, content, actor, file=None):
    if file is None:
        return store.file_create(
            project=project, scope="workspace", path=path, content=content, actor=actor
        ).file
    store.file_save(
        file=file, content=content, actor=actor, base_revision=MemoryFile.objects.get(pk=file.pk).head.number
    )
    return file


@pytest.fixture
def three_files(s3, project, agent):
    """Three workspace files in the reviewer's queue, one written by an agent (it comes first)."""
    system = Actor.system("t")
    files = [_write(project, f"notes/{name}.md", f"{name}\n", system) for name in "abc"]
    _write(project, "", "a\nfrom the agent\n", Actor.for_agent(agent, "s1"), file=files[0])
    return files


def _queue_order(reviewer, project) -> list:
    return [f.pk for f in review.review_queue(reviewer=reviewer, project=project)]


def _mark(client, project, file_id):
    head = MemoryFile.objects.select_related("head").get(pk=file_id).head.number
    return client.post(reverse("projects:review_mark", args=[project.slug, file_id]), {"number": head})


# --- a) Next file after "Mark reviewed" ---------------------------------------------------------


def test_mark_reviewed_leads_to_the_next_file_then_back_to_the_queue(client, project, reviewer, three_files):
    client.force_login(reviewer)
    first, second, third = _queue_order(reviewer, project)
    assert first == three_files[0].pk  # the agent's write first
    response = _mark(client, project, first)
    assert response.url == reverse("projects:review_file", args=[project.slug, second])
    page = client.get(response.url)
    assert page.status_code == 200 and page.context["item"].file.pk == second
    assert page.context["queued"] == 2
    [message] = [str(m) for m in get_messages(page.wsgi_request)]
    assert "Next in your queue" in message
    assert f'action="{reverse("projects:review_mark", args=[project.slug, second])}"' in page.content.decode()
    assert _mark(client, project, second).url == reverse("projects:review_file", args=[project.slug, third])
    done = client.post(
        reverse("projects:review_mark", args=[project.slug, third]), {"number": 1}, follow=True
    )
    assert done.redirect_chain[-1][0] == reverse("projects:review_queue", args=[project.slug])
    assert b"All files are reviewed up to their latest revision." in done.content
    assert b"Nothing to review" in done.content


def test_the_next_file_is_the_one_after_the_marked_one_wrapping_round(client, project, reviewer, three_files):
    client.force_login(reviewer)
    first, second, third = _queue_order(reviewer, project)
    assert _mark(client, project, second).url == reverse("projects:review_file", args=[project.slug, third])
    assert _mark(client, project, third).url == reverse("projects:review_file", args=[project.slug, first])


def test_a_reviewed_file_page_sends_back_to_the_queue(client, project, reviewer, three_files):
    client.force_login(reviewer)
    _mark(client, project, three_files[1].pk)
    response = client.get(reverse("projects:review_file", args=[project.slug, three_files[1].pk]))
    assert response.url == reverse("projects:review_queue", args=[project.slug])


# --- b) A flag points at the revision that caused it -------------------------------------------


def test_a_flag_records_the_chosen_revision_and_links_to_it(client, s3, project, reviewer):
    person = Actor.system("t")
    file = _write(project, "notes/card.md", "one\n", person)
    _write(project, "", "one\ncard 4111 1111 1111 1111\n", person, file=file)
    _write(project, "", "one\ncard 4111 1111 1111 1111\nthree\n", person, file=file)
    client.force_login(reviewer)
    queue = client.get(reverse("projects:review_queue", args=[project.slug])).content.decode()
    # The scanner saw the card first in r2: the form blames r2, not the latest.
    assert '<option value="2" selected>' in queue and '<option value="3">' in queue
    response = client.post(
        reverse("projects:flag_create", args=[project.slug, file.pk]),
        {
            "number": 2,
            "comment": "a card number came in here",
            "next": reverse("projects:review_file", args=[project.slug, file.pk]),
        },
    )
    assert response.url == reverse("projects:review_file", args=[project.slug, file.pk])
    flag = Flag.objects.get()
    assert flag.revision.number == 2
    link = f'href="{reverse("projects:revision_detail", args=[project.slug, file.pk, 2])}"'
    for page in (
        reverse("projects:review_file", args=[project.slug, file.pk]),
        reverse("projects:file_detail", args=[project.slug, file.pk]),
        reverse("projects:dashboard"),
    ):
        html = client.get(page).content.decode()
        assert link in html and "a card number came in here" in html, page
    event = AuditEvent.objects.get(action="review.flag")
    assert event.details["revision"] == 2


def test_a_reviewer_flags_an_old_revision_from_its_own_page(client, s3, project, reviewer, person):
    file = _write(project, "notes/x.md", "one\n", Actor.system("t"))
    _write(project, "", "two\n", Actor.system("t"), file=file)
    url = reverse("projects:revision_detail", args=[project.slug, file.pk, 1])
    client.force_login(reviewer)
    assert b'id="flag-revision"' in client.get(url).content
    response = client.post(
        reverse("projects:flag_create", args=[project.slug, file.pk]),
        {"number": 1, "comment": "wrong from the start", "next": url},
    )
    assert response.url == url and Flag.objects.get().revision.number == 1


# --- c) Findings say whether the latest revision still has them --------------------------------


def test_findings_say_if_the_latest_revision_still_has_them(client, s3, project, reviewer):
    actor = Actor.system("t")
    file = _write(project, "notes/contacts.md", "Maria: maria@example.com\n", actor)
    _write(project, "", "Maria: maria@example.com\nPhone +7 912 345-67-89\n", actor, file=file)
    _write(project, "", "Maria: (see the CRM)\nPhone +7 912 345-67-89\n", actor, file=file)
    client.force_login(reviewer)
    response = client.get(reverse("projects:review_queue", args=[project.slug]))
    [item] = response.context["items"]
    found = {f["kind"]: (f["revision"], f["present"], f["gone_since"]) for f in item.findings}
    assert found == {"email": (1, False, 3), "phone": (2, True, None)}
    html = response.content.decode()
    assert "gone since revision 3" in html and "still present in revision 3 (the latest)" in html
    assert f'href="{reverse("projects:revision_detail", args=[project.slug, file.pk, 3])}"' in html


def test_findings_over_revisions_counts_each_finding_once():
    email = {"kind": "email", "line": 1, "column": 1, "excerpt": "ma••om"}
    moved = dict(email, line=4)
    revisions = [Revision(number=n, findings=f) for n, f in [(2, [email]), (3, []), (4, [moved]), (5, [])]]
    [finding] = review.findings_over(revisions)
    assert (finding["revision"], finding["line"], finding["present"], finding["gone_since"]) == (
        2,
        1,
        False,
        5,
    )
    [finding] = review.findings_over(revisions[:3])
    assert (finding["present"], finding["gone_since"], finding["latest"]) == (True, None, 4)
    assert review.findings_over([]) == []


# --- d) Reads are audited per file, not per page load ------------------------------------------


def test_reloading_the_queue_records_each_file_read_once(client, project, reviewer, three_files):
    client.force_login(reviewer)
    url = reverse("projects:review_queue", args=[project.slug])
    for _ in range(3):
        assert client.get(url).status_code == 200
    reads = {
        (e.object_id, e.details["revision"], e.details["since"])
        for e in AuditEvent.objects.filter(action="read.review", actor_user=reviewer)
    }
    assert reads == {
        (str(three_files[0].pk), 2, 0),
        (str(three_files[1].pk), 1, 0),
        (str(three_files[2].pk), 1, 0),
    }
    # Its single-file page shows the same content: not a new read either.
    client.get(reverse("projects:review_file", args=[project.slug, three_files[1].pk]))
    assert AuditEvent.objects.filter(action="read.review").count() == 3
    # A new revision is new content: reading it is recorded.
    _write(project, "", "b changed\n", Actor.system("t"), file=three_files[1])
    client.get(url)
    assert AuditEvent.objects.filter(action="read.review").count() == 4
    assert audit_verify() == []


def test_the_same_file_read_again_after_the_window_is_recorded_again(
    client, project, reviewer, three_files, monkeypatch
):
    client.force_login(reviewer)
    url = reverse("projects:file_detail", args=[project.slug, three_files[2].pk])
    client.get(url)
    client.get(url)
    assert AuditEvent.objects.filter(action="read.file").count() == 1
    monkeypatch.setattr(trail, "READ_WINDOW", dt.timedelta(0))
    client.get(url)
    assert AuditEvent.objects.filter(action="read.file").count() == 2


def test_proposal_list_records_each_proposal_read_once(client, s3, project, agent, reviewer):
    file = _write(project, "notes/p.md", "x\n", Actor.system("t"))
    for text in ("one\n", "two\n"):
        Proposal.objects.create(project=project, file=file, agent=agent, mode="append", content=text)
    client.force_login(reviewer)
    for _ in range(2):
        client.get(reverse("projects:proposal_list", args=[project.slug]))
    events = AuditEvent.objects.filter(action="read.proposals")
    assert events.count() == 2 and {e.object_type for e in events} == {"proposal"}
