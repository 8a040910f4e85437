"""A flag reaches the person who can fix it: the author of the flagged revision sees it on the
file and on their dashboard and answers in its thread (audited); the flag form blames the
revision where the scanner first saw its finding; resolving takes a note and asks first."""

import re

import pytest
from django.urls import reverse

from projects.audit import Actor, audit_verify
from projects.governance import review
from projects.memory import store
from projects.models import AuditEvent, Flag

pytestmark = pytest.mark.django_db


@pytest.fixture
def flagged(s3, project, person, reviewer):
    """Maria's USER.md: r1 clean, r2 (hers) with her phone number, r3 another line; Rita flags r2."""
    file = store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="# Maria\n",
        actor=Actor.person(person),
    ).file
    store.file_save(
        file=file,
        content="# Maria\n- Mobile: +7 (916) 123-45-67.\n",
        actor=Actor.person(person),
        base_revision=1,
        message="contact",
    )
    store.file_save(
        file=file,
        content="# Maria\n- Mobile: +7 (916) 123-45-67.\n- Tea.\n",
        actor=Actor.person(person),
        base_revision=2,
    )
    return file


def test_the_flag_form_blames_the_revision_the_scanner_names(client, flagged, project, reviewer):
    client.force_login(reviewer)
    page = client.get(reverse("projects:review_queue", args=[project.slug])).content.decode()
    selected = re.search(
        rf'<select name="number" id="flag-revision-{flagged.pk}".*?</select>', page, re.S
    ).group(0)
    assert re.search(r'<option value="2" selected>', selected)  # not r3, the latest
    assert not re.search(r'<option value="3" selected>', selected)


def test_the_author_sees_the_flag_answers_it_and_a_reviewer_resolves_it_with_a_note(
    client, flagged, project, person, reviewer, admin
):
    flag = review.flag_create(by=reviewer, file=flagged, number=2, comment="Private phone.")
    detail_url = reverse("projects:flag_detail", args=[project.slug, flag.pk])
    client.force_login(person)
    dashboard = client.get(reverse("projects:dashboard")).content.decode()
    assert 'id="panel-my-flags"' in dashboard and detail_url in dashboard
    assert "Private phone." in dashboard
    file_page = client.get(reverse("projects:file_detail", args=[project.slug, flagged.pk]))
    html = file_page.content.decode()
    assert "A reviewer flagged your change" in html and detail_url in html
    thread = client.get(detail_url).content.decode()
    assert "Private phone." in thread and 'id="resolve"' not in thread  # hers to answer only
    assert (
        client.post(reverse("projects:flag_reply", args=[project.slug, flag.pk]), {"text": "  "}).status_code
        == 400
    )
    answer = client.post(
        reverse("projects:flag_reply", args=[project.slug, flag.pk]),
        {"text": "It is my work phone; fine to keep."},
    )
    assert answer.status_code == 302
    assert (
        client.post(
            reverse("projects:flag_resolve", args=[project.slug, flag.pk]), {"note": "mine"}
        ).status_code
        == 404
    )  # the author does not close it
    event = AuditEvent.objects.get(action="review.reply")
    assert event.actor_user == person and event.details["reply"].startswith("It is my work")

    client.force_login(reviewer)
    thread = client.get(detail_url).content.decode()
    assert "It is my work phone" in thread and "author of the revision" in thread
    assert 'data-confirm="' in thread.split('id="resolve"', 1)[1]  # the button asks first
    refused = client.post(reverse("projects:flag_resolve", args=[project.slug, flag.pk]), {"note": ""})
    assert refused.status_code == 400 and "Say how it was resolved" in refused.content.decode()
    assert Flag.objects.get(pk=flag.pk).resolved_at is None
    done = client.post(
        reverse("projects:flag_resolve", args=[project.slug, flag.pk]),
        {"note": "Work number, agreed with Maria."},
    )
    assert done.status_code == 302
    flag.refresh_from_db()
    assert flag.resolution_note == "Work number, agreed with Maria." and flag.resolved_by == reviewer
    assert "Work number, agreed" in client.get(detail_url).content.decode()
    assert AuditEvent.objects.get(action="review.resolve").details["note"].startswith("Work")
    client.force_login(person)
    assert 'id="panel-my-flags"' not in client.get(reverse("projects:dashboard")).content.decode()
    assert audit_verify() == []


def test_someone_else_does_not_see_a_flag_on_work_not_theirs(client, flagged, project, make_user, reviewer):
    from projects.models import Membership

    ivan = make_user("ivan")
    Membership.objects.create(user=ivan, project=project, role="employee")
    flag = review.flag_create(by=reviewer, file=flagged, number=2, comment="Private phone.")
    client.force_login(ivan)
    assert client.get(reverse("projects:flag_detail", args=[project.slug, flag.pk])).status_code == 404
    assert "Private phone." not in client.get(reverse("projects:dashboard")).content.decode()
