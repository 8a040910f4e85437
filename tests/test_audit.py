"""The audit trail is a hash chain: verify_audit notices an edited or deleted event."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from projects.audit import Actor, audit_record, audit_verify
from projects.memory import store
from projects.models import AgentSession, AuditEvent
from projects.runners import hooks

pytestmark = pytest.mark.django_db


@pytest.fixture
def trail(project, person):
    actor = Actor.person(person)
    for n in range(5):
        audit_record(actor=actor, action="test.event", project=project, details={"n": n, "text": "Профиль"})
    return list(AuditEvent.objects.order_by("seq"))


def test_events_are_chained(trail):
    assert [e.seq for e in trail] == [1, 2, 3, 4, 5]
    assert trail[0].prev_hash == "" and all(
        b.prev_hash == a.hash for a, b in zip(trail, trail[1:], strict=False)
    )
    assert audit_verify() == []
    out = StringIO()
    call_command("verify_audit", stdout=out)
    assert "intact: 5 event(s)" in out.getvalue()


def test_an_edited_event_is_detected(trail):
    AuditEvent.objects.filter(pk=trail[2].pk).update(actor_label="someone else")
    assert audit_verify() == ["event 3 was edited (hash mismatch)"]
    with pytest.raises(CommandError, match="NOT intact"):
        call_command("verify_audit", stdout=StringIO(), stderr=StringIO())


def test_edited_details_are_detected(trail):
    AuditEvent.objects.filter(pk=trail[1].pk).update(details={"n": 99})
    assert "event 2 was edited (hash mismatch)" in audit_verify()


def test_a_deleted_event_is_detected(trail):
    AuditEvent.objects.filter(pk=trail[2].pk).delete()
    problems = audit_verify()
    assert "events 3..3 are missing" in problems
    assert "event 4 does not follow the event before it" in problems


def test_deleting_the_newest_events_is_detected(trail):
    AuditEvent.objects.filter(seq__gte=4).delete()
    assert audit_verify() == ["the newest events after 3 are missing (the chain's head is at 5)"]


def test_store_writes_join_the_chain(s3, workspace_file, actor):
    store.file_save(file=workspace_file, content="2\n", actor=actor, base_revision=1)
    assert audit_verify() == []
    assert list(AuditEvent.objects.order_by("seq").values_list("seq", flat=True)) == [1, 2]


def test_the_code_records_only_listed_actions():
    """The audit page filters by a fixed list of actions; a new action must join it."""
    import re
    from pathlib import Path

    from projects.audit import ACTIONS

    source = "\n".join(p.read_text() for p in Path("projects").rglob("*.py"))
    used = set(re.findall(r'action=f?"([a-z_]+\.[a-z_]+)"', source))
    used |= set(re.findall(r'"((?:file|member)\.[a-z_]+)"', source))
    assert used and used <= set(ACTIONS), used - set(ACTIONS)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="concurrent writers: the PostgreSQL run")
def test_verify_audit_beside_200_post_hooks_reports_nothing_false_then_catches_an_edit(
    s3, project, agent, person
):
    """The chain is read as of one moment: events committed while it is checked are neither
    missing nor extra (it used to read the events, then the head, and report the gap)."""
    sessions = [
        AgentSession.objects.create(agent=agent, user=person, prompt_sha256="0" * 64) for _ in range(4)
    ]
    done = threading.Event()

    def post_hooks(session, count):
        try:
            for n in range(count):
                results = hooks.hook_post(
                    session=session,
                    writes=[hooks.WriteRequest(f"workspace/load/{session.pk}.md", "append", f"- {n}\n")],
                    end=False,
                )
                assert results[0]["status"] == "written", results
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=4) as pool:
        running = [pool.submit(post_hooks, session, 50) for session in sessions]
        pool.submit(lambda: (wait(running), done.set()))
        checks, false_reports = 0, []
        while not done.is_set():
            out, err = StringIO(), StringIO()
            try:
                call_command("verify_audit", stdout=out, stderr=err)
            except CommandError:
                false_reports.append(err.getvalue())
            checks += 1
            time.sleep(0.01)  # the writers get the CPU too (two cores)
        for future in running:
            future.result()
    written = AuditEvent.objects.filter(action="file.save").count()
    print(
        f"\n{checks} verify_audit runs beside {written} saves (200 post hooks): {len(false_reports)} reports"
    )
    assert written >= 200 and checks >= 5
    assert false_reports == []
    # A real edit is still caught.
    edited = AuditEvent.objects.filter(action="file.save").order_by("seq")[100]
    AuditEvent.objects.filter(pk=edited.pk).update(details={"revision": 1, "sha256": "0" * 64})
    with pytest.raises(CommandError, match="NOT intact"):
        call_command("verify_audit", stdout=StringIO(), stderr=StringIO())
    assert audit_verify() == [f"event {edited.seq} was edited (hash mismatch)"]
