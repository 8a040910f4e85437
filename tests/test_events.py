"""Events out, in the test process: the outbox written with the change, signed deliveries to a
real HTTP receiver on 127.0.0.1 (checked with the standardwebhooks library), retries, giving
up and disabling, guarded targets, rotation, audit streams, erasure. The worker's own process
(killed mid-delivery, two at once) is tests/test_events_worker.py."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.tasks import TaskContext
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_tasks_db.models import DBTaskResult
from prometheus_client import REGISTRY
from standardwebhooks import Webhook, WebhookVerificationError

from projects import outbox
from projects.audit import Actor, audit_record, event_hash
from projects.events import delivery, signing, subscriptions, targets
from projects.events.tasks import QUEUE
from projects.governance import erasure, holds, retention, review
from projects.memory import removal, store
from projects.models import (
    AuditEvent,
    DeliveryAttempt,
    MemoryFile,
    OutboxEvent,
    WebhookSubscription,
)
from projects.runners import hooks, prehook, proposals
from tests.receiver import Receiver

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_events(settings):
    settings.MGC_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1"]
    settings.MGC_EVENTS_RETRY_BASE_SECONDS = 0.02
    settings.MGC_EVENTS_RETRY_MAX_SECONDS = 0.05
    settings.MGC_EVENTS_RETRY_WINDOW_HOURS = 1
    settings.MGC_WEBHOOK_READ_TIMEOUT = 5


@pytest.fixture
def receiver():
    found = Receiver()
    yield found
    found.close()


def drain(until=lambda: True, timeout: float = 5.0) -> None:
    """What the worker does, in this process: relay due events onto the queue and run the
    queued tasks, until `until()` holds (tasks deferred by a backoff become due meanwhile)."""
    deadline = time.monotonic() + timeout
    while True:
        delivery.relay()
        for task in DBTaskResult.objects.ready().filter(queue_name=QUEUE):
            task.claim("test")
            result = task.task_result
            task.set_successful(task.task.call(TaskContext(task_result=result), *result.args))
        if until():
            return
        assert time.monotonic() < deadline, "the events were not delivered in time"
        time.sleep(0.01)


def _hook(by, project, url, events=("memory.revision.created",), **extra):
    return subscriptions.webhook_create(by=by, project=project, url=url, events=list(events), **extra)


def _save(file: MemoryFile, text: str, actor: Actor):
    file.refresh_from_db()
    return store.file_save(file=file, content=text, actor=actor, base_revision=file.head.number)


# --- Signed, at least once -------------------------------------------------------------------------


def test_a_receiver_verifies_the_signed_event_with_standardwebhooks(
    s3, project, admin, actor, workspace_file, receiver
):
    subscription, secret = _hook(admin, project, receiver.url)
    _save(workspace_file, "second\n", actor)

    drain(until=lambda: receiver.requests)

    [request] = receiver.requests
    body = receiver.verified(secret)
    assert body["type"] == "memory.revision.created"
    assert body["data"] == {
        "project": "incidents",
        "actor": "maria",
        "audit_seq": body["data"]["audit_seq"],
        "file": str(workspace_file.pk),
        "path": "workspace/notes/today.md",
        "revision": 2,
        "author": "maria",
        "author_kind": "person",
        "session": None,
        "sha256": workspace_file.revisions.get(number=2).sha256,
        "size": 7,
        "message": "",
    }
    assert "text" not in body["data"]  # only with include_content
    event = OutboxEvent.objects.get(subscription=subscription)
    assert request.id == event.event_id and event.state == "delivered"
    assert request.headers["content-type"] == "application/json"
    with pytest.raises(WebhookVerificationError):
        Webhook(signing.new_secret()).verify(request.body, request.headers)
    tampered = request.body.replace(b"today", b"other")
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(tampered, request.headers)


def test_content_goes_only_to_subscriptions_that_asked_for_it(
    s3, project, admin, actor, workspace_file, receiver
):
    plain, plain_secret = _hook(admin, project, receiver.url + "?plain")
    full, full_secret = _hook(admin, project, receiver.url + "?full", include_content=True)
    _save(workspace_file, "text with a name in it\n", actor)

    drain(until=lambda: len(receiver.requests) == 2)

    by_path = {r.path: r for r in receiver.requests}
    assert "text" not in receiver.verified(plain_secret, by_path["/hooks?plain"])["data"]
    data = receiver.verified(full_secret, by_path["/hooks?full"])["data"]
    assert data["text"] == "text with a name in it\n"
    assert by_path["/hooks?plain"].id == by_path["/hooks?full"].id  # one event, one id


def test_a_change_rolled_back_after_its_event_was_recorded_delivers_nothing(
    s3, project, admin, actor, workspace_file, receiver
):
    _hook(admin, project, receiver.url, events=["flag.created"])

    class Boom(Exception):
        pass

    with pytest.raises(Boom), transaction.atomic():
        review.flag_create(by=admin, file=workspace_file, number=1, comment="never raised")
        assert OutboxEvent.objects.count() == 1  # recorded with the change...
        raise Boom
    assert OutboxEvent.objects.count() == 0  # ...and gone with it
    drain()
    assert receiver.requests == []
    # The same change committed is delivered (the receiver and the worker do work).
    review.flag_create(by=admin, file=workspace_file, number=1, comment="raised")
    drain(until=lambda: receiver.requests)
    assert [
        r["data"]["comment"] for r in map(lambda r: __import__("json").loads(r.body), receiver.requests)
    ] == ["raised"]


def test_a_receiver_failing_three_times_gets_each_retry_and_each_attempt_is_logged(
    s3, project, admin, actor, workspace_file, receiver, settings
):
    subscription, secret = _hook(admin, project, receiver.url)
    receiver.statuses = [500, 500, 500]
    _save(workspace_file, "second\n", actor)

    drain(until=lambda: OutboxEvent.objects.filter(state="delivered").exists())

    assert len(receiver.requests) == 4
    assert {r.id for r in receiver.requests} == {OutboxEvent.objects.get().event_id}
    for request in receiver.requests:
        receiver.verified(secret, request)  # every attempt freshly signed
    log = list(DeliveryAttempt.objects.order_by("number"))
    assert [(a.number, a.status_code) for a in log] == [(1, 500), (2, 500), (3, 500), (4, 200)]
    assert log[0].response_excerpt == "receiver says no" and log[3].response_excerpt == '{"ok": true}'
    assert all(a.finished_at and a.duration_ms is not None for a in log)
    # Backoff: each wait at least half the doubled delay (equal jitter).
    gaps = [b.at - a.at for a, b in zip(receiver.requests, receiver.requests[1:], strict=False)]
    assert gaps[0] >= 0.01 and gaps[1] >= 0.02
    subscription.refresh_from_db()
    assert subscription.failures == 0 and subscription.last_success_at is not None


def test_backoff_doubles_with_jitter_up_to_the_cap_over_about_a_day(settings):
    settings.MGC_EVENTS_RETRY_BASE_SECONDS, settings.MGC_EVENTS_RETRY_MAX_SECONDS = 30, 4 * 3600
    for attempt, full in [(1, 30), (2, 60), (5, 480), (12, 4 * 3600), (30, 4 * 3600)]:
        waits = [delivery.backoff(attempt) for _ in range(200)]
        assert full / 2 <= min(waits) and max(waits) <= full and len(set(waits)) > 100
    schedule = [min(4 * 3600, 30 * 2 ** (n - 1)) for n in range(1, 40)]
    total, attempts = 0, 0
    while total < 24 * 3600:
        total += schedule[attempts]
        attempts += 1
    assert 12 <= attempts <= 16  # about fourteen attempts fill the day's window


def test_a_subscription_failing_for_its_whole_window_is_disabled_and_admins_are_told(
    s3,
    project,
    admin,
    actor,
    workspace_file,
    receiver,
    settings,
    mailoutbox,
    client,
    django_capture_on_commit_callbacks,
):
    settings.MGC_EVENTS_RETRY_WINDOW_HOURS = 0.2 / 3600  # 0.2 s
    admin.email = "olga@example.com"
    admin.save()
    subscription, _ = _hook(admin, project, receiver.url)
    receiver.statuses = [503] * 100
    _save(workspace_file, "second\n", actor)

    with django_capture_on_commit_callbacks(execute=True):  # the mail goes once it committed
        drain(until=lambda: OutboxEvent.objects.filter(state="failed").exists())

    subscription.refresh_from_db()
    assert subscription.disabled_at is not None and "HTTP 503" in subscription.disabled_reason
    assert AuditEvent.objects.filter(action="webhook.disable", details__automatic=True).exists()
    [mail] = mailoutbox
    assert mail.to == ["olga@example.com"] and receiver.url in mail.body
    # Events of a disabled subscription wait; enabling it sends them.
    _save(workspace_file, "third\n", actor)
    assert OutboxEvent.objects.filter(state="pending").count() == 0  # not recorded: disabled
    count = len(receiver.requests)
    client.force_login(admin)
    page = client.get(f"/p/{project.slug}/webhooks/")
    assert page.status_code == 200 and "HTTP 503" in page.text
    dashboard = client.get("/")
    assert "was disabled" in dashboard.text
    failed = OutboxEvent.objects.get(state="failed")
    subscriptions.webhook_set_enabled(by=admin, subscription=subscription, enabled=True)
    subscriptions.event_redeliver(by=admin, event=failed)
    receiver.statuses = []
    drain(until=lambda: OutboxEvent.objects.filter(state="delivered").exists())
    assert receiver.requests[-1].id == failed.event_id and len(receiver.requests) == count + 1


def test_redirects_are_not_followed(s3, project, admin, actor, workspace_file, receiver):
    _hook(admin, project, receiver.url)
    receiver.statuses = [302]
    receiver.location = receiver.url + "/elsewhere"
    _save(workspace_file, "second\n", actor)
    drain(until=lambda: DeliveryAttempt.objects.filter(finished_at__isnull=False).exists())
    [attempt] = DeliveryAttempt.objects.all()
    assert attempt.status_code == 302 and attempt.error == "redirect not followed"
    assert [r.path for r in receiver.requests] == ["/hooks"]
    assert OutboxEvent.objects.get().state == "pending"  # a failure: retried later


# --- Guarded targets --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://10.1.2.3/hook",
        "http://192.168.0.10/hook",
        "http://172.16.5.4/x",
        "http://169.254.169.254/latest/meta-data/",
        "http://[fe80::1]/x",
        "http://[::1]:8080/",
        "http://127.0.0.2/",
        "http://0.0.0.0/",
        "http://100.64.0.1/",
        "http://[::ffff:10.0.0.1]/",
        "http://localhost/",
        "http://[fc00::5]/",
    ],
)
def test_a_url_on_a_private_address_is_refused(url, project, admin, settings):
    settings.MGC_WEBHOOK_ALLOWED_NETWORKS = []
    with pytest.raises(ValidationError) as refused:
        _hook(admin, project, url)
    assert "non-public" in refused.value.messages[0]
    assert not WebhookSubscription.objects.exists()


@pytest.mark.parametrize(
    "url, reason",
    [
        ("ftp://example.com/", "https://"),
        ("http://user:pw@127.0.0.1/", "user name"),
        ("http:///nohost", "no host"),
        ("http://127.0.0.1:99999/", "port"),
        ("http://no-such-host.invalid/", "does not resolve"),
        ("http://127.0.0.1/a b", "spaces"),
    ],
)
def test_malformed_urls_are_refused_with_the_reason(url, reason, project, admin):
    with pytest.raises(ValidationError) as refused:
        _hook(admin, project, url)
    assert reason in refused.value.messages[0]


def test_public_addresses_and_allowlisted_networks_pass(settings):
    settings.MGC_WEBHOOK_ALLOWED_NETWORKS = []
    assert targets.address_allowed("93.184.216.34") and targets.address_allowed("2606:4700::1111")
    assert not targets.address_allowed("127.0.0.1") and not targets.address_allowed("224.0.0.1")
    settings.MGC_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1", "10.20.0.0/16"]
    assert targets.address_allowed("127.0.0.1") and targets.address_allowed("::ffff:127.0.0.1")
    assert targets.address_allowed("10.20.3.4") and not targets.address_allowed("10.21.0.1")
    assert not targets.address_allowed("127.0.0.2")


def test_a_target_refused_at_delivery_is_never_connected_to(
    s3, project, admin, actor, workspace_file, receiver, settings
):
    """The address is checked at every attempt, not only when the webhook was made (the name
    may resolve elsewhere by then): the allowlist no longer names it, so nothing connects."""
    _hook(admin, project, receiver.url)
    settings.MGC_WEBHOOK_ALLOWED_NETWORKS = []
    retries = REGISTRY.get_sample_value("mgc_webhook_deliveries_total", {"outcome": "retry"})
    _save(workspace_file, "second\n", actor)
    drain(until=lambda: DeliveryAttempt.objects.exists())
    [attempt] = DeliveryAttempt.objects.all()
    assert attempt.status_code is None and attempt.error.startswith("refused: 127.0.0.1 is at")
    assert receiver.requests == []
    # Counted for /metrics: a failed attempt that will be tried again.
    assert REGISTRY.get_sample_value("mgc_webhook_deliveries_total", {"outcome": "retry"}) == retries + 1


def test_extra_headers_are_checked(project, admin, receiver):
    for bad in ("Host: evil", "webhook-signature: x", "No colon here", "Bad Name: x", "X-Ok: line\rbreak"):
        with pytest.raises(ValidationError):
            _hook(admin, project, receiver.url, headers=bad)


# --- Rotation, audit streams, the events ------------------------------------------------------------


def test_a_rotated_secret_signs_beside_the_old_one_for_the_overlap(
    s3, project, admin, actor, workspace_file, receiver
):
    subscription, old = _hook(admin, project, receiver.url)
    new = subscriptions.webhook_rotate(by=admin, subscription=subscription, overlap_hours=1)
    _save(workspace_file, "second\n", actor)
    drain(until=lambda: receiver.requests)
    assert len(receiver.requests[-1].headers["webhook-signature"].split(" ")) == 2
    assert receiver.verified(old) == receiver.verified(new)
    # Once the overlap is over, only the new secret signs.
    subscriptions.webhook_rotate(by=admin, subscription=subscription, overlap_hours=0)
    subscription.refresh_from_db()
    newest = subscription.secret
    _save(workspace_file, "third\n", actor)
    drain(until=lambda: len(receiver.requests) == 2)
    receiver.verified(newest)
    with pytest.raises(WebhookVerificationError):
        receiver.verified(new)


def test_an_audit_stream_receives_every_audit_event_with_its_chain_fields_and_headers(
    s3, project, admin, actor, workspace_file, receiver
):
    stream, secret = subscriptions.webhook_create(
        by=admin,
        project=None,
        url=receiver.url,
        kind="audit",
        headers="Authorization: Splunk 11111111-2222-3333-4444-555555555555",
    )
    review.flag_create(by=admin, file=workspace_file, number=1, comment="check this")
    audit_record(actor=Actor.system("t"), action="account.locked_out", details={"user": "x"})

    drain(until=lambda: len(receiver.requests) == 2)

    for request in receiver.requests:
        assert request.headers["authorization"] == "Splunk 11111111-2222-3333-4444-555555555555"
        body = receiver.verified(secret, request)
        assert body["type"] == "audit.event"
        fields = body["data"]
        event = AuditEvent.objects.get(seq=fields["seq"])
        assert fields["hash"] == event.hash and fields["prev_hash"] == event.prev_hash
        assert event_hash(event) == fields["hash"]
    assert [receiver.verified(secret, r)["data"]["action"] for r in receiver.requests] == [
        "review.flag",
        "account.locked_out",
    ]


def test_each_audit_action_becomes_its_event_type_for_webhooks_that_asked(
    s3, project, admin, workspace_file, receiver
):
    _hook(admin, project, receiver.url, events=outbox.EVENT_TYPES)
    for action in ("file.expire", "legal_hold.place", "legal_hold.release"):
        audit_record(
            actor=Actor.person(admin),
            action=action,
            project=project,
            obj=workspace_file,
            details={"hold": "case-17"},
        )
    flag = review.flag_create(by=admin, file=workspace_file, number=1, comment="check this")
    review.flag_resolve(by=admin, flag=flag, note="fixed")
    removal.file_delete(
        file=MemoryFile.objects.get(pk=workspace_file.pk), actor=Actor.person(admin), base_revision=1
    )
    audit_record(actor=Actor.person(admin), action="member.grant", project=project)  # no event

    types = list(OutboxEvent.objects.order_by("id").values_list("type", flat=True))
    assert types == [
        "memory.file.expired",
        "legal_hold.placed",
        "legal_hold.released",
        "flag.created",
        "flag.resolved",
        "memory.file.deleted",
    ]
    drain(until=lambda: len(receiver.requests) == 6)
    data = {r.headers["webhook-id"]: r for r in receiver.requests}
    assert len(data) == 6
    resolved = OutboxEvent.objects.get(type="flag.resolved").body["data"]
    assert resolved["flag"] == flag.pk and resolved["note"] == "fixed" and resolved["by"] == "olga"


def test_the_pre_and_post_hooks_emit_session_events_and_proposals_theirs(
    s3, project, agent, person, admin, receiver
):
    _hook(
        admin,
        project,
        receiver.url,
        events=["session.started", "session.ended", "proposal.created", "proposal.decided"],
        include_content=True,
    )
    session, _ = prehook.hook_pre(agent=agent, user=person)
    hooks.hook_post(
        session=session, writes=[hooks.WriteRequest("AGENTS.md", "append", "- a rule\n")], summary="done"
    )
    proposal = session.proposals.get()
    proposals.proposal_approve(proposal=proposal, by=admin)

    drain(until=lambda: len(receiver.requests) == 4)
    bodies = {o.type: o.body["data"] for o in OutboxEvent.objects.all()}
    assert bodies["session.started"]["session"] == str(session.pk)
    assert bodies["session.started"]["user"] == "maria"
    assert bodies["proposal.created"]["text"] == "- a rule\n"
    assert bodies["session.ended"]["writes"] == [
        {"path": "AGENTS.md", "mode": "append", "status": "proposed", "proposal": proposal.pk}
    ]
    assert bodies["proposal.decided"]["decision"] == "approved"


def test_the_pre_hook_pays_one_insert_for_its_event_and_nothing_without_subscribers(
    s3, project, agent, person, admin, receiver
):
    prehook.hook_pre(agent=agent, user=person)  # warm: catch-up, caches

    def queries() -> list[str]:
        with CaptureQueriesContext(connection) as seen:
            prehook.hook_pre(agent=agent, user=person)
        return [q["sql"] for q in seen.captured_queries]

    outbox.targets()
    without = queries()
    _hook(admin, project, receiver.url, events=["session.started"])
    _hook(admin, project, receiver.url + "?2", events=["session.started"])
    outbox.targets()  # the list cached once, as any warm process has it
    with_two = queries()
    assert len(with_two) == len(without) + 1
    inserts = [q for q in with_two if q.startswith('INSERT INTO "projects_outboxevent"')]
    assert len(inserts) == 1  # both rows at once
    assert OutboxEvent.objects.filter(type="session.started").count() == 2


# --- Erasure -------------------------------------------------------------------------------------------


def test_erasure_scrubs_pending_events_that_quote_the_profile(s3, project, person, admin, receiver, settings):
    subscription, secret = _hook(admin, project, receiver.url, include_content=True)
    secret_text = "Maria's diagnosis: secret-health-fact"
    store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content=secret_text + "\n",
        actor=Actor.person(person),
    )
    pending = OutboxEvent.objects.get()
    assert secret_text in pending.body["data"]["text"]

    done = erasure.profile_erase(by=admin, user=person, reason="GDPR", projects=[project])

    assert done.files == 1
    pending.refresh_from_db()
    assert pending.state == "pending" and pending.scrubbed_at is not None
    assert secret_text not in str(pending.body) and pending.body["data"]["erased"] is True
    drain(until=lambda: len(receiver.requests) == 1)
    assert all(secret_text.encode() not in r.body for r in receiver.requests)
    erased = AuditEvent.objects.get(action="profile.erase")
    assert erased.details["events_scrubbed"] == 1


def test_a_runners_delete_and_rename_send_their_events_like_any_write(
    s3, project, agent, person, admin, receiver
):
    """A delete through the post hook is memory.file.deleted; a rename deletes the old path
    and makes a revision at the new one, so it is both events, as a receiver re-indexing
    memory needs."""
    agent.hook_policy["post"]["workspace/**.md"].update(delete="direct", rename="direct")
    agent.save()
    system = Actor.system("t")
    for path in ("drafts/plan.md", "drafts/old.md"):
        store.file_create(project=project, scope="workspace", path=path, content=f"# {path}\n", actor=system)
    subscription, secret = _hook(
        admin,
        project,
        receiver.url,
        include_content=True,
        events=["memory.revision.created", "memory.file.deleted"],
    )
    session, _ = prehook.hook_pre(agent=agent, user=person)
    results = hooks.hook_post(
        session=session,
        writes=[
            hooks.WriteRequest("workspace/drafts/old.md", "delete"),
            hooks.WriteRequest("workspace/drafts/plan.md", "rename", new_path="workspace/decisions/plan.md"),
        ],
    )
    assert [r["status"] for r in results] == ["written", "written"]

    drain(until=lambda: len(receiver.requests) == 3)
    bodies = [receiver.verified(secret, r) for r in receiver.requests]
    assert [(b["type"], b["data"]["path"], b["data"]["revision"]) for b in bodies] == [
        ("memory.file.deleted", "workspace/drafts/old.md", 2),
        ("memory.revision.created", "workspace/decisions/plan.md", 1),
        ("memory.file.deleted", "workspace/drafts/plan.md", 2),
    ]
    deleted, created, renamed_away = (b["data"] for b in bodies)
    assert deleted["author_kind"] == created["author_kind"] == "agent"
    assert deleted["session"] == created["session"] == renamed_away["session"] == str(session.pk)
    assert created["text"] == "# drafts/plan.md\n" and "text" not in renamed_away
    assert "sha256" not in renamed_away and "sha256" not in deleted
    assert (created["renamed_from"], renamed_away["renamed_to"]) == (
        "workspace/drafts/plan.md",
        "workspace/decisions/plan.md",
    )


def test_retention_holds_and_erasure_send_their_events_when_they_really_happen(
    s3, project, person, admin, reviewer, receiver
):
    """Not a bare audit_record: a retention run that expires a file, a hold placed and
    released, and a person erased each put their event in the outbox, delivered signed."""
    subscription, secret = _hook(
        admin,
        project,
        receiver.url,
        events=["memory.file.expired", "legal_hold.placed", "legal_hold.released", "profile.erased"],
    )
    log = store.file_create(
        project=project, scope="workspace", path="logs/tools.md", content="# tools\n", actor=Actor.system("t")
    ).file
    log.revisions.update(created_at=timezone.now() - dt.timedelta(days=40))
    store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="Maria prefers UTC.\n",
        actor=Actor.person(person),
    )
    retention.rule_add(by=admin, project=project, kind="files", glob="workspace/logs/**", days=30)

    assert retention.apply(project).files == 1
    hold, _sweep = holds.hold_place(
        by=reviewer, project=project, user=person, reason="litigation", case_reference="case 1"
    )
    holds.hold_release(by=reviewer, hold=hold, note="settled")
    erasure.profile_erase(by=admin, user=person, reason="GDPR request 17", projects=[project])

    assert list(OutboxEvent.objects.order_by("id").values_list("type", flat=True)) == [
        "memory.file.expired",
        "legal_hold.placed",
        "legal_hold.released",
        "profile.erased",
    ]
    drain(until=lambda: len(receiver.requests) == 4)
    bodies = {
        body["type"]: body["data"] for body in (receiver.verified(secret, r) for r in receiver.requests)
    }
    expired = bodies["memory.file.expired"]
    assert (expired["file"], expired["path"], expired["revision"]) == (
        str(log.pk),
        "workspace/logs/tools.md",
        2,
    )
    placed, released = bodies["legal_hold.placed"], bodies["legal_hold.released"]
    assert (placed["object_id"], placed["by"]) == (str(hold.pk), "rita")
    assert placed["details"] == {"covers": "person maria", "reason": "litigation", "case": "case 1"}
    assert (released["object_id"], released["details"]["note"]) == (str(hold.pk), "settled")
    erased = bodies["profile.erased"]
    assert (erased["user"], erased["user_id"], erased["by"], erased["reason"], erased["files"]) == (
        "maria",
        person.pk,
        "olga",
        "GDPR request 17",
        1,
    )
    assert all(e.state == "delivered" for e in OutboxEvent.objects.all())


# --- The command ---------------------------------------------------------------------------------


def test_the_webhooks_command_adds_lists_tests_rotates_logs_and_removes(project, admin, receiver, capsys):
    from django.core.management import call_command

    call_command(
        "webhooks",
        "add",
        "--project",
        project.slug,
        "--url",
        receiver.url,
        "--events",
        "memory.revision.created,flag.created",
    )
    out = capsys.readouterr().out
    secret = out.split("keep it with the receiver): ")[1].split()[0]
    assert secret.startswith("whsec_")
    subscription = WebhookSubscription.objects.get()
    assert subscription.created_by is None and subscription.secret == secret
    call_command("webhooks", "list")
    assert receiver.url in capsys.readouterr().out and secret not in capsys.readouterr().out
    call_command("webhooks", "test", str(subscription.pk))
    assert "delivered (HTTP 200)" in capsys.readouterr().out
    assert receiver.verified(secret)["type"] == "webhook.test"
    receiver.statuses = [500]
    with pytest.raises(Exception, match="not delivered"):
        call_command("webhooks", "test", str(subscription.pk))
    call_command("webhooks", "log", str(subscription.pk))
    log = capsys.readouterr().out
    assert "HTTP 500" in log and "HTTP 200" in log and "'receiver says no'" in log
    call_command("webhooks", "rotate", str(subscription.pk))
    assert "new signing secret" in capsys.readouterr().out
    call_command("webhooks", "remove", str(subscription.pk))
    call_command("webhooks", "list")
    assert receiver.url not in capsys.readouterr().out
    with pytest.raises(Exception, match="Unknown event types: memory.changed"):
        call_command(
            "webhooks", "add", "--project", project.slug, "--url", receiver.url, "--events", "memory.changed"
        )
    actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert {"webhook.create", "webhook.rotate", "webhook.remove"} <= actions


# --- The console ------------------------------------------------------------------------------------


def test_admins_make_webhooks_in_the_console_with_errors_at_the_field_and_see_the_log(
    client, s3, project, admin, person, actor, workspace_file, receiver, settings
):
    url = f"/p/{project.slug}/webhooks/"
    client.force_login(person)
    assert client.get(url).status_code == 404  # employees: as if it did not exist
    client.force_login(admin)
    settings.MGC_WEBHOOK_ALLOWED_NETWORKS = []
    refused = client.post(
        url, {"kind": "webhook", "url": receiver.url, "events": ["memory.revision.created"]}
    )
    assert refused.status_code == 400 and "non-public" in refused.text
    assert receiver.url in refused.text  # the typed URL stays in the form
    missing = client.post(url, {"kind": "webhook", "url": "https://example.com/x"})
    assert missing.status_code == 400 and "Pick at least one event type" in missing.text
    settings.MGC_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1"]
    made = client.post(
        url,
        {
            "kind": "webhook",
            "url": receiver.url,
            "events": ["memory.revision.created"],
            "headers": "X-Team: sre",
        },
    )
    assert made.status_code == 302
    page = client.get(url)
    subscription = WebhookSubscription.objects.get()
    assert subscription.secret in page.text and subscription.headers == {"X-Team": "sre"}
    assert subscription.secret not in client.get(url).text  # shown once

    receiver.statuses = [500]
    _save(workspace_file, "second\n", actor)
    drain(until=lambda: DeliveryAttempt.objects.exists())
    detail = client.get(f"{url}{subscription.pk}/")
    assert "HTTP 500" in detail.text and "receiver says no" in detail.text
    event = OutboxEvent.objects.get()
    drain(until=lambda: OutboxEvent.objects.filter(state="delivered").exists())
    client.post(f"{url}{subscription.pk}/do/", {"action": "redeliver", "event": event.pk})
    drain(until=lambda: len(receiver.requests) == 3)
    assert {r.id for r in receiver.requests} == {event.event_id}
    assert "HTTP 200" in client.get(f"{url}{subscription.pk}/").text
    client.post(f"{url}{subscription.pk}/do/", {"action": "rotate"})
    rotated = client.get(f"{url}{subscription.pk}/")
    subscription.refresh_from_db()
    assert subscription.secret in rotated.text and subscription.previous_secret
    client.post(f"{url}{subscription.pk}/do/", {"action": "remove"})
    assert WebhookSubscription.objects.get().removed_at is not None


def test_a_closed_port_is_reported_as_refused_not_as_a_timeout():
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(targets.TransportError) as failed:
        targets.post(f"http://127.0.0.1:{port}/hooks", b"{}", {})
    assert str(failed.value).startswith("could not connect") and "timeout" not in str(failed.value)
