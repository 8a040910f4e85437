"""Subjects' requests end to end, on the real S3 server: what is found about a person, the
answer package (every trace, other people withheld), the erasure with its act, both kept under
Object Lock, reminders once each, withdrawn consent refusing agents' writes."""

from __future__ import annotations

import datetime as dt
import io
import json
import subprocess
import zipfile

import boto3
import pytest
from botocore.exceptions import ClientError
from django.core import mail
from django.core.management import call_command
from django.utils import timezone

from projects.audit import Actor
from projects.governance import review, subject_acts, subject_jobs, subject_package, subject_records, subjects
from projects.memory import errors, store
from projects.models import (
    Agent,
    AuditEvent,
    LegalHold,
    Membership,
    MemoryFile,
    OutboxEvent,
    Proposal,
    SubjectRequest,
    WebhookSubscription,
)
from projects.runners import hooks, prehook, proposals
from tests.conftest import ACCESS_KEY, RECORDS_BUCKET, SECRET_KEY

MARIA_PHONE = "+7 916 123-45-67"


@pytest.fixture
def world(s3, make_user, make_project):
    """Maria, with a profile in two projects, proposals she decided, a flag with her reply,
    sessions whose prompts carried her profile, and mentions of her in three other files (one
    naming Ivan Petrov beside her)."""
    root = make_user("root", is_superuser=True)
    maria = make_user("maria", first_name="Maria", last_name="Ivanova", email="maria@example.com")
    ivan = make_user("ivan.petrov", first_name="Ivan", last_name="Petrov", email="ivan@example.com")
    reviewer = make_user("rita")
    one, two = make_project(slug="incidents"), make_project(slug="tenders")
    for project in (one, two):
        for user, role in ((maria, "employee"), (ivan, "employee"), (reviewer, "compliance")):
            Membership.objects.create(user=user, project=project, role=role)
    agents = [Agent.objects.create(project=p, slug=f"agent-{p.slug}", name="Agent") for p in (one, two)]
    profiles = []
    for project in (one, two):
        revision = store.file_create(
            project=project,
            scope="user",
            user=maria,
            path="USER.md",
            content=f"# Maria\n\n- Works on {project.slug}.\n",
            actor=Actor.person(maria),
        )
        profiles.append(MemoryFile.objects.select_related("head", "project").get(pk=revision.file_id))
    store.file_save(
        file=profiles[0],
        content="# Maria\n\n- Works on incidents.\n- Prefers short summaries.\n",
        actor=Actor.person(maria),
        base_revision=1,
    )
    decided = []
    for agent, verdict in zip(agents, ("approve", "reject"), strict=True):
        session, _assembly = prehook.hook_pre(agent=agent, user=maria)
        hooks.hook_post(
            session=session,
            writes=[hooks.WriteRequest("USER.md", "append", f"- Proposed by {agent.slug}.\n")],
        )
        proposal = Proposal.objects.get(session=session)
        if verdict == "approve":
            proposals.proposal_approve(proposal=proposal, by=maria, note="yes")
        else:
            proposals.proposal_reject(proposal=proposal, by=maria, note="not true")
        decided.append(proposal)
    flag = review.flag_create(
        by=reviewer, file=profiles[0], number=1, comment="Is the summary preference current?"
    )
    review.flag_reply(by=maria, flag=flag, text="Yes, it is.")
    outage = store.file_create(
        project=one,
        scope="workspace",
        path="incidents/outage.md",
        content="# Outage\n\nMaria Ivanova and Ivan Petrov restarted the queue.\n",
        actor=Actor.person(ivan),
    )
    store.file_save(  # the line naming her stays; its origin is still Ivan's revision 1
        file=MemoryFile.objects.get(pk=outage.file_id),
        content="# Outage\n\nMaria Ivanova and Ivan Petrov restarted the queue.\n\nFollow-up: none.\n",
        actor=Actor.person(root),
        base_revision=1,
    )
    store.file_create(
        project=two,
        scope="workspace",
        path="tenders/contacts.md",
        content="# Contacts\n\n- Questions go to maria@example.com.\n- Nothing else.\n",
        actor=Actor.person(ivan),
    )
    store.file_create(
        project=one,
        scope="user",
        user=ivan,
        path="USER.md",
        content=f"# Ivan\n\n- Call Марию Иванову? No: call Maria on {MARIA_PHONE}.\n",
        actor=Actor.person(ivan),
    )
    return {
        "root": root,
        "maria": maria,
        "ivan": ivan,
        "projects": (one, two),
        "profiles": profiles,
        "flag": flag,
    }


def _open(world, **fields):
    fields.setdefault("kind", "access")
    fields.setdefault("law", "both")
    return subjects.request_open(by=world["root"], user=world["maria"], phone=MARIA_PHONE, **fields)


def _zip(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_the_package_holds_every_trace_and_withholds_others(world):
    request = _open(world)
    inventory = subject_jobs.inventory_refresh(by=world["root"], request=request)
    assert inventory["counts"]["profiles"] == 2 and inventory["counts"]["mentions"] == 3
    found = next(m for m in inventory["mentions"] if m["path"] == "workspace/incidents/outage.md")
    assert (found["revision"], found["origin"]["revision"], found["origin"]["author"]) == (
        2,
        1,
        "ivan.petrov",
    )
    paths = {m["path"] for m in inventory["mentions"]}
    assert paths == {
        "workspace/incidents/outage.md",
        "workspace/tenders/contacts.md",
        "users/ivan.petrov/USER.md",
    }
    assert {d["key"] for d in inventory["third_parties"]} == {"name:ivan.petrov"}

    document = subject_package.package_build(by=world["root"], request=request)
    files = _zip(subject_records.document_read(by=world["root"], document=document))
    answer = json.loads(files["answer.json"])

    # The manifest names every file with its sha256.
    manifest = json.loads(files["manifest.json"])
    import hashlib

    assert {f["path"] for f in manifest["files"]} == set(files) - {"manifest.json"}
    for entry in manifest["files"]:
        assert hashlib.sha256(files[entry["path"]]).hexdigest() == entry["sha256"]
    # The schema it claims, and the answer fits it.
    import jsonschema

    jsonschema.validate(answer, json.loads(files["schema.json"]))

    # Profiles in both projects, every revision's text as a Markdown file, the head as it stands.
    assert {p["project"] for p in answer["profiles"]} == {"incidents", "tenders"}
    incidents = next(p for p in answer["profiles"] if p["project"] == "incidents")
    assert [r["number"] for r in incidents["revisions"]] == [1, 2, 3]  # the approved proposal is r3
    assert "Prefers short summaries" in files["memory/incidents/USER.md"].decode()
    assert files["memory/incidents/history/USER.md/r1.md"].decode() == "# Maria\n\n- Works on incidents.\n"
    # What agents proposed and what she decided (consent).
    assert {(p["agent"], p["status"], p["decided_by_you"]) for p in answer["proposals"]} == {
        ("agent-incidents", "approved", True),
        ("agent-tenders", "rejected", True),
    }
    assert len(answer["consent"]["decisions"]) == 2
    # The flag and her reply.
    assert answer["flags"][0]["comment"] == "Is the summary preference current?"
    assert answer["flags"][0]["replies"][0]["text"] == "Yes, it is."
    # Sessions whose prompts carried her profile, with the prompts as kept.
    assert len(answer["sessions"]) == 2
    assert all(s["prompt_status"] == "kept" and "# Maria" in s["prompt"] for s in answer["sessions"])
    # Audit events about her, not only by her: the reviewer's flag on her profile.
    actions = {e["action"] for e in answer["audit"]}
    assert {"review.flag", "proposal.create", "proposal.approve", "subject_request.open"} <= actions
    flagged = next(e for e in answer["audit"] if e["action"] == "review.flag")
    assert flagged["actor"] != "rita"  # another person: withheld
    # Mentions in three other files, each with its line's origin; Ivan Petrov withheld.
    assert len(answer["mentions"]) == 3
    outage = next(m for m in answer["mentions"] if m["path"] == "workspace/incidents/outage.md")
    assert "Maria Ivanova" in outage["text"] and "Ivan Petrov" not in outage["text"]
    assert "[another person's name withheld]" in outage["text"]
    # Found in the head (revision 2, root's), written in revision 1 by Ivan: blame says so, and
    # the answer names him no more than in the line itself.
    assert outage["revision"] == 2 and outage["in_head"]
    assert outage["origin"]["revision"] == 1 and outage["origin"]["exact"]
    assert outage["origin"]["author_kind"] == "person" and outage["origin"]["author"] == "a member of staff"
    assert answer["withheld"]["name"] >= 1
    assert "Ivan Petrov" not in files["answer.html"].decode()
    # The human-readable copy says the same (the PDF is text, not a picture).
    text = _pdf_text(files["answer.pdf"])
    assert "What we hold about you" in text and "Maria Ivanova" in text

    request.refresh_from_db()
    assert request.state == SubjectRequest.State.ANSWERED
    assert (
        AuditEvent.objects.filter(action="subject_request.download", object_id=str(document.pk)).count() == 1
    )


@pytest.mark.db_independent  # the completeness test runs the same path on both databases
def test_a_kept_detail_stays_with_its_reason_and_a_left_out_mention_goes(world):
    request = _open(world, law="gdpr")
    inventory = subject_jobs.inventory_refresh(by=world["root"], request=request)
    contacts = next(m for m in inventory["mentions"] if m["path"] == "workspace/tenders/contacts.md")
    with pytest.raises(Exception, match="reason"):
        subject_jobs.selection_save(
            by=world["root"], request=request, excluded=[], keep={"name:ivan.petrov": " "}
        )
    subject_jobs.selection_save(
        by=world["root"],
        request=request,
        excluded=[contacts["id"]],
        keep={"name:ivan.petrov": "He was her colleague on the outage; she asked who."},
    )
    answer = json.loads(
        _zip(subject_records.document_read(by=world["root"], document=_package(world, request)))[
            "answer.json"
        ]
    )
    assert len(answer["mentions"]) == 2 and answer["left_out"] == 1
    outage = next(m for m in answer["mentions"] if m["path"] == "workspace/incidents/outage.md")
    assert "Ivan Petrov" in outage["text"]
    assert answer["kept_details"] == [
        {"key": "name:ivan.petrov", "reason": "He was her colleague on the outage; she asked who."}
    ]


def _package(world, request):
    return subject_package.package_build(by=world["root"], request=request)


def _pdf_text(data: bytes) -> str:
    return subprocess.run(
        ["pdftotext", "-layout", "-", "-"], input=data, capture_output=True, check=True
    ).stdout.decode()


def _console_client():
    """A client with the console's own keys, straight to the server."""
    from django.conf import settings

    endpoint = settings.STORAGES["memory"]["OPTIONS"]["endpoint_url"]
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
    )


@pytest.mark.db_independent  # storage's answer; the act and the package run on both elsewhere
def test_the_act_and_the_package_are_under_object_lock(world, tmp_path):
    """Neither the package nor the act can be deleted with the console's own keys: COMPLIANCE
    retention for three years; a delete without a version leaves the record readable."""
    # Through the command, as an operator would (scripts/demo-manage.sh on the demo).
    out = io.StringIO()
    call_command(
        "subject_request",
        "open",
        "--user",
        "maria",
        "--kind",
        "access",
        "--law",
        "152-fz",
        "--json",
        stdout=out,
    )
    opened = json.loads(out.getvalue())
    assert opened["state"] == "received" and opened["deadlines"]["152-fz"]["article"] == "152-FZ art. 20(1)"
    assert opened["due_on"] == SubjectRequest.objects.get(pk=opened["id"]).due_on.isoformat()
    target = tmp_path / "answer.zip"
    call_command("subject_request", "answer", str(opened["id"]), "--out", str(target), stdout=io.StringIO())
    files = _zip(target.read_bytes())
    assert files["memory/incidents/USER.md"].decode().startswith("# Maria")
    assert {"memory/incidents/history/USER.md/r1.md", "memory/tenders/history/USER.md/r1.md"} <= set(files)
    package = SubjectRequest.objects.get(pk=opened["id"]).documents.get()
    withdrawal = _open(world, kind="withdrawal", law="152-fz")
    act = subject_acts.erasure_answer(by=world["root"], request=withdrawal)
    client = _console_client()
    for document in (package, act):
        assert document.bucket == RECORDS_BUCKET and document.lock_mode == "COMPLIANCE"
        assert document.retain_until > timezone.now() + dt.timedelta(days=3 * 365)
        with pytest.raises(ClientError) as refused:
            client.delete_object(Bucket=document.bucket, Key=document.key, VersionId=document.version_id)
        assert refused.value.response["Error"]["Code"] == "AccessDenied"
        retention = client.get_object_retention(
            Bucket=document.bucket, Key=document.key, VersionId=document.version_id
        )
        assert retention["Retention"]["Mode"] == "COMPLIANCE"
        client.delete_object(Bucket=document.bucket, Key=document.key)  # a delete marker only
        assert subject_records.document_read(by=world["root"], document=document)


def test_erasure_makes_the_act_with_the_audit_extract(world):
    request = _open(world, kind="erasure", law="152-fz", language="ru")
    assert request.deadlines["152-fz"]["article"] == "152-FZ art. 21(3)"
    document = subject_acts.erasure_answer(by=world["root"], request=request)
    files = _zip(subject_records.document_read(by=world["root"], document=document))
    act, extract = json.loads(files["act.json"]), json.loads(files["extract.json"])
    assert act["subject"]["username"] == "maria" and act["performed_by"]["username"] == "root"
    assert act["ground"]["text"] == "Человек потребовал уничтожить его данные."  # the person's language
    assert act["totals"]["files"] == 2 and {p["project"] for p in act["projects"]} == {"incidents", "tenders"}
    erased = [e for e in extract["events"] if e["action"] == "profile.erase"]
    assert len(erased) == 2
    # The extract's events are links of the chain: each hash as the audit trail has it.
    for event in extract["events"]:
        stored = AuditEvent.objects.get(seq=event["seq"])
        assert (stored.hash, stored.prev_hash) == (event["hash"], event["prev_hash"])
    text = _pdf_text(files["act.pdf"])
    assert "Акт" in text and "maria" in text
    assert not MemoryFile.objects.filter(user=world["maria"], scope="user").exists()
    request.refresh_from_db()
    assert request.state == SubjectRequest.State.ANSWERED


def test_erasure_under_a_legal_hold_is_refused_and_recorded(world):
    one = world["projects"][0]
    LegalHold.objects.create(
        project=one, kind=LegalHold.Kind.PERSON, user=world["maria"], target="person maria", reason="case 7"
    )
    request = _open(world, kind="erasure", law="gdpr")
    with pytest.raises(errors.Held):
        subject_acts.erasure_answer(by=world["root"], request=request)
    request.refresh_from_db()
    assert request.is_open and "case 7" in request.blocked_note
    assert AuditEvent.objects.filter(action="subject_request.held", object_id=str(request.pk)).exists()
    assert MemoryFile.objects.filter(user=world["maria"], scope="user").count() == 2


def test_withdrawn_consent_refuses_agents_writes_to_the_profile(world):
    one = world["projects"][0]
    agent = Agent.objects.get(project=one)
    session, _assembly = prehook.hook_pre(agent=agent, user=world["maria"])
    hooks.hook_post(session=session, writes=[hooks.WriteRequest("USER.md", "append", "- later\n")], end=False)
    pending = Proposal.objects.get(session=session)
    request = _open(world, kind="withdrawal", law="152-fz")
    assert request.due_on == timezone.localdate(request.received_at) + dt.timedelta(days=30)
    results = hooks.hook_post(session=session, writes=[hooks.WriteRequest("USER.md", "append", "- more\n")])
    assert results[0]["status"] == "rejected" and results[0]["code"] == "consent_withdrawn"
    # A proposal made before cannot be applied now; the person still edits their profile.
    with pytest.raises(errors.ConsentWithdrawn):
        proposals.proposal_approve(proposal=pending, by=world["maria"])
    profile = world["profiles"][0]
    profile.refresh_from_db()
    store.file_append(file=profile, addition="- by me\n", actor=Actor.person(world["maria"]))
    subjects.consent_restore(by=world["root"], user=world["maria"])
    results = hooks.hook_post(session=session, writes=[hooks.WriteRequest("USER.md", "append", "- again\n")])
    assert results[0]["status"] == "proposed"


def test_due_soon_and_overdue_are_sent_once_each(s3, make_user, settings):
    root = make_user("boss", is_superuser=True, email="boss@example.com")
    person = make_user("sam")
    WebhookSubscription.objects.create(
        url="https://hooks.example.com/x",
        events=[
            "subject_request.received",
            "subject_request.due_soon",
            "subject_request.overdue",
            "subject_request.closed",
        ],
        secret="whsec_dGVzdHRlc3R0ZXN0dGVzdHRlc3R0ZXN0dGVzdA==",
    )
    received = timezone.make_aware(dt.datetime(2026, 1, 12, 10, 0))  # a Monday; due 26 January
    request = subjects.request_open(by=root, user=person, kind="access", law="152-fz", received_at=received)
    assert request.due_on == dt.date(2026, 1, 26)
    types = lambda: list(OutboxEvent.objects.order_by("pk").values_list("type", flat=True))  # noqa: E731
    assert types() == ["subject_request.received"]
    early = timezone.make_aware(dt.datetime(2026, 1, 20, 9, 0))
    assert subjects.reminders_send(now=early) == {"due_soon": 0, "overdue": 0}
    soon = timezone.make_aware(dt.datetime(2026, 1, 23, 9, 0))
    mail.outbox.clear()
    with _commits():
        assert subjects.reminders_send(now=soon) == {"due_soon": 1, "overdue": 0}
        assert subjects.reminders_send(now=soon + dt.timedelta(hours=1)) == {"due_soon": 0, "overdue": 0}
    late = timezone.make_aware(dt.datetime(2026, 1, 27, 9, 0))
    with _commits():
        assert subjects.reminders_send(now=late) == {"due_soon": 0, "overdue": 1}
        assert subjects.reminders_send(now=late + dt.timedelta(days=3)) == {"due_soon": 0, "overdue": 0}
    assert types() == ["subject_request.received", "subject_request.due_soon", "subject_request.overdue"]
    assert [m.to for m in mail.outbox] == [["boss@example.com"], ["boss@example.com"]]
    assert "#%d" % request.pk in mail.outbox[1].subject
    body = OutboxEvent.objects.get(type="subject_request.overdue").body["data"]
    assert body["request"] == request.pk and body["due_on"] == "2026-01-26" and "sam" not in json.dumps(body)


def _commits():
    """Run on_commit callbacks (the reminders' mails) as they would after the commit."""
    from django.test import TestCase

    return TestCase.captureOnCommitCallbacks(execute=True)


def test_an_extension_is_once_and_moves_the_deadline(s3, make_user):
    root = make_user("boss2", is_superuser=True)
    received = timezone.make_aware(dt.datetime(2025, 12, 29, 10, 0))
    request = subjects.request_open(
        by=root, user=make_user("kim"), kind="copy", law="152-fz", received_at=received
    )
    assert request.due_on == dt.date(2026, 1, 22)
    extended = subjects.request_extend(
        by=root, request=request, reason="Three systems to search.", today=dt.date(2026, 1, 14)
    )
    assert extended.due_on == dt.date(2026, 1, 29) and extended.state == SubjectRequest.State.EXTENDED
    with pytest.raises(Exception, match="once"):
        subjects.request_extend(by=root, request=extended, reason="Again.", today=dt.date(2026, 1, 15))
    assert AuditEvent.objects.filter(action="subject_request.extend").count() == 1
