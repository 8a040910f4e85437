"""Writes that survive lost answers: a write whose answer never arrives is recognised when it
is tried again, never written twice, and always recorded as its true author's.

The fault proxy forwards the head PUT to SeaweedFS and then drops the answer ("lose"), or
drops the request before it arrives ("drop"), or answers 500 without forwarding; a database
trigger refuses the revision row after S3 has the new head (a worker killed before its
commit). Every case ends with the bucket's head equal to the database's head, each line once.
"""

import json
import threading

import pytest
from django.core.management import call_command
from django.db import connection, connections
from django.test import override_settings
from django.urls import reverse

from projects.audit import Actor
from projects.events import subscriptions
from projects.governance import isolation
from projects.memory import adoption, errors, layout, reading, removal, store
from projects.models import (
    AuditEvent,
    IdempotencyRecord,
    MemoryFile,
    OutboxEvent,
    Proposal,
    Revision,
    SessionEvent,
)
from projects.runners import proposals
from tests.conftest import DatabaseRefusal

pytestmark = pytest.mark.django_db

HEAD = r"/workspace/notes/log\.md$"
LINE = "- 09:14 paged the on-call engineer\n"


@pytest.fixture
def log(s3, project, agent, person):
    system = Actor.system("t")
    store.file_create(
        project=project,
        scope="agent",
        agent=agent,
        path="SOUL.md",
        content="You keep the log.\n",
        actor=system,
    )
    revision = store.file_create(
        project=project, scope="workspace", path="notes/log.md", content="# Log\n", actor=system
    )
    return MemoryFile.objects.select_related("head", "project").get(pk=revision.file_id)


def _api(client, path, body, token, key=None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    if key:
        headers["HTTP_IDEMPOTENCY_KEY"] = key
    return client.post(f"/api/v1/{path}", data=json.dumps(body), content_type="application/json", **headers)


def _append(client, token, session, key=None, line=LINE):
    return _api(
        client,
        "hooks/post",
        {
            "session": session,
            "writes": [{"path": "workspace/notes/log.md", "mode": "append", "content": line}],
        },
        token,
        key,
    )


def _head(file: MemoryFile) -> Revision:
    return MemoryFile.objects.select_related("head").get(pk=file.pk).head


def _text(s3, file: MemoryFile) -> str:
    return s3.get(file.key).decode()


def _bucket_is_database(s3, file: MemoryFile) -> None:
    fresh = MemoryFile.objects.select_related("head", "project").get(pk=file.pk)
    assert reading.file_read(fresh).drifted is False
    assert reading.file_read(fresh).text == _text(s3, fresh)


# --- The store recognises its own write --------------------------------------------------------


@pytest.mark.parametrize("attempts", [1, 3], ids=["no-retry", "botocore-retries"])
def test_head_stored_but_answer_lost_is_one_revision_by_the_writer(s3, log, person, attempts):
    """The finding: the retry got 412, the save deleted its snapshot and recorded its own
    write as external. Now: one revision, the person's."""
    fault = s3.proxy.inject("PUT", HEAD, "lose")
    with override_settings(MGC_S3_MAX_ATTEMPTS=attempts):
        revision = store.file_save(
            file=log, content="# Log\nsecond\n", actor=Actor.person(person), base_revision=1, message="edit"
        )
    assert fault.hits == 1
    assert (revision.number, revision.author_kind, revision.author_user) == (2, "person", person)
    assert list(
        Revision.objects.filter(file=log).values_list("author_kind", flat=True).order_by("number")
    ) == ["system", "person"]
    assert not AuditEvent.objects.filter(action="file.external_change").exists()
    assert s3.get(revision.snapshot_key) == b"# Log\nsecond\n"
    _bucket_is_database(s3, log)


def test_appends_whose_answers_are_lost_land_once(s3, log, agent):
    actor = Actor.for_agent(agent, "s-1")
    s3.proxy.inject("PUT", HEAD, "lose", times=3)
    for n in range(3):
        store.file_append(file=log, addition=f"- line {n}\n", actor=actor)
    assert _text(s3, log) == "# Log\n- line 0\n- line 1\n- line 2\n"
    assert _head(log).number == 4 and _head(log).author_kind == "agent"
    _bucket_is_database(s3, log)


def test_a_request_that_never_arrived_is_a_clean_nothing_changed(s3, log, person):
    s3.proxy.inject("PUT", HEAD, "drop")
    with pytest.raises(errors.StorageUnavailable, match="nothing was changed") as info:
        store.file_save(file=log, content="# Log\nx\n", actor=Actor.person(person), base_revision=1)
    assert info.value.outcome == "not_applied"
    assert _head(log).number == 1 and _text(s3, log) == "# Log\n"
    # Its snapshot was removed: the head does not hold its bytes, so no attempt owns it.
    assert s3.keys(f"{log.project.prefix}_history/{log.pk}/") == [log.head.snapshot_key]


def test_an_unanswerable_write_says_its_outcome_is_unknown(s3, log, person):
    s3.proxy.inject("PUT", HEAD, "lose")
    s3.proxy.inject("GET", HEAD, "drop")  # and the check that would settle it fails too
    with pytest.raises(errors.StorageUnavailable, match="unknown") as info:
        store.file_save(file=log, content="# Log\nx\n", actor=Actor.person(person), base_revision=1)
    assert info.value.outcome == "unknown"
    # It did land; the next save (or pre hook) finds it and records it as the person's.
    assert _text(s3, log) == "# Log\nx\n"
    revision = adoption.adopt(log)
    assert (revision.number, revision.author_kind, revision.author_user) == (2, "person", person)


@pytest.mark.parametrize("attempts", [1, 3], ids=["no-retry", "botocore-retries"])
def test_a_delete_whose_answer_was_lost_is_the_persons(s3, log, person, attempts):
    s3.proxy.inject("DELETE", HEAD, "lose", times=attempts)
    with override_settings(MGC_S3_MAX_ATTEMPTS=attempts):
        revision = removal.file_delete(file=log, actor=Actor.person(person), base_revision=1)
    assert revision.is_deletion and (revision.number, revision.author_user) == (2, person)
    assert not Revision.objects.filter(file=log, author_kind="external").exists()
    assert s3.keys(log.key) == []
    with pytest.raises(errors.FileDeleted):  # the retry: done already
        removal.file_delete(file=log, actor=Actor.person(person), base_revision=1)


def test_a_delete_that_never_arrived_changes_nothing(s3, log, person):
    s3.proxy.inject("DELETE", HEAD, "drop")
    with pytest.raises(errors.StorageUnavailable, match="nothing was changed"):
        removal.file_delete(file=log, actor=Actor.person(person), base_revision=1)
    assert _head(log).number == 1 and _text(s3, log) == "# Log\n"


def test_same_bytes_by_someone_else_is_not_mistaken_for_ours(s3, log, person, make_user):
    """Another person already wrote exactly this text straight to the bucket: a conflict,
    recorded as external, not a success of ours."""
    s3.put(log.key, b"# Log\nsame\n")
    with pytest.raises(errors.SaveConflict):
        store.file_save(file=log, content="# Log\nsame\n", actor=Actor.person(person), base_revision=1)
    assert _head(log).author_kind == "external"


# --- The runner API ----------------------------------------------------------------------------


def test_a_lost_answer_then_a_retry_through_the_api_writes_the_line_once(client, s3, log, token, agent):
    session = _api(client, "hooks/pre", {}, token).json()["session"]
    s3.proxy.inject("PUT", HEAD, "lose")
    s3.proxy.inject("GET", HEAD, "drop")
    first = _append(client, token, session, key="post-1")
    assert first.status_code == 503
    error = first.json()["error"]
    assert error["outcome"] == "unknown" and "nothing was changed" not in error["message"]
    second = _append(client, token, session, key="post-1")
    assert second.status_code == 200, second.content
    assert second.json()["results"][0]["status"] == "written"
    assert _text(s3, log).count(LINE) == 1
    head = _head(log)
    assert (head.author_kind, head.author_agent, head.session_ref) == ("agent", agent, session)
    _bucket_is_database(s3, log)


def test_worker_killed_before_commit_then_the_same_append_retried(
    client, s3, log, token, agent, revision_inserts_fail
):
    session = _api(client, "hooks/pre", {}, token).json()["session"]
    client.raise_request_exception = False
    killed = _append(client, token, session, key="post-2")
    assert killed.status_code == 500  # the database refused the revision: S3 has the line
    assert _text(s3, log).count(LINE) == 1
    revision_inserts_fail.stop()
    retried = _append(client, token, session, key="post-2")
    assert retried.status_code == 200, retried.content
    assert _text(s3, log).count(LINE) == 1
    head = _head(log)
    assert (head.number, head.author_kind, head.author_agent, head.session_ref) == (
        2,
        "agent",
        agent,
        session,
    )
    assert not AuditEvent.objects.filter(action="file.external_change").exists()
    _bucket_is_database(s3, log)


def test_the_same_key_twice_is_one_revision_and_the_same_answer(client, s3, log, token):
    session = _api(client, "hooks/pre", {}, token).json()["session"]
    first = _append(client, token, session, key="k-1")
    again = _append(client, token, session, key="k-1")
    assert first.status_code == again.status_code == 200
    assert first.json() == again.json() and again["Idempotent-Replayed"] == "true"
    assert _head(log).number == 2 and _text(s3, log).count(LINE) == 1
    other_body = _append(client, token, session, key="k-1", line="- another line\n")
    assert other_body.status_code == 422
    assert other_body.json()["error"]["code"] == "idempotency_key_reused"
    for kind, body in (("tool", {"name": "grep"}), ("error", {"message": "boom"})):
        answers = [
            _api(client, f"hooks/{kind}", {"session": session, **body}, token, key=f"{kind}-1").json()
            for _ in range(2)
        ]
        assert answers[0] == answers[1]
    logs = MemoryFile.objects.filter(path__startswith="logs/")
    assert sorted(f.head.number for f in logs) == [1, 1]  # one line each, not two


def test_a_post_that_ends_a_session_again_ends_it_once_whatever_its_summary(
    client, s3, log, token, project, admin, settings
):
    """Idempotent by what a post does: the same writes under one key with another summary get
    the first answer (Claude Code's Stop, then SessionEnd); an empty end of an ended session,
    under any key, records nothing more. A post with other writes under the key is still a 422."""
    # Recorded for a subscriber (the outbox row is written with the change; nothing is sent).
    settings.MGC_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1"]
    subscriptions.webhook_create(
        by=admin, project=project, url="http://127.0.0.1:9/h", events=["session.ended"]
    )
    session = _api(client, "hooks/pre", {}, token).json()["session"]
    ends = [
        _api(client, "hooks/post", {"session": session, "writes": [], "summary": summary}, token, key="end")
        for summary in ("Claude Code stop (turn)", "Claude Code sessionend (other)")
    ]
    assert [r.status_code for r in ends] == [200, 200]
    assert ends[0].json() == ends[1].json() and ends[1]["Idempotent-Replayed"] == "true"
    other = _api(client, "hooks/post", {"session": session, "writes": [], "end": True}, token, key="other")
    assert other.status_code == 200 and other.json()["results"] == []
    posts = SessionEvent.objects.filter(session_id=session, kind="post")
    assert [e.payload["summary"] for e in posts] == ["Claude Code stop (turn)"]
    assert OutboxEvent.objects.filter(type="session.ended").count() == 1
    reused = _append(client, token, session, key="end")
    assert reused.status_code == 422 and reused.json()["error"]["code"] == "idempotency_key_reused"
    # A write after the end still lands (a later turn of the same Claude session).
    assert _append(client, token, session, key="later").json()["results"][0]["status"] == "written"


def test_a_key_in_progress_is_a_409_and_a_bad_key_a_400(client, s3, log, token, agent):
    session = _api(client, "hooks/pre", {}, token).json()["session"]
    body = json.dumps({"session": session, "writes": []}).encode()
    from projects.runners import idempotency

    idempotency.begin(agent=agent, key="busy", endpoint="hooks/post", body=body)
    busy = _api(client, "hooks/post", {"session": session, "writes": []}, token, key="busy")
    assert busy.status_code == 409 and int(busy["Retry-After"]) > 0
    bad = _api(client, "hooks/post", {"session": session, "writes": []}, token, key="é" * 3)
    assert bad.status_code == 400


def test_a_stale_replace_comes_back_with_the_current_text(client, s3, log, token, person):
    session = _api(client, "hooks/pre", {}, token).json()["session"]
    store.file_save(file=log, content="# Log\nby a person\n", actor=Actor.person(person), base_revision=1)
    result = _api(
        client,
        "hooks/post",
        {
            "session": session,
            "writes": [
                {
                    "path": "workspace/notes/log.md",
                    "mode": "replace",
                    "content": "# Log\nmine\n",
                    "base_revision": 1,
                }
            ],
        },
        token,
    ).json()["results"][0]
    assert (result["status"], result["head_revision"], result["head_text"]) == (
        "conflict",
        2,
        "# Log\nby a person\n",
    )
    merged = _api(
        client,
        "hooks/post",
        {
            "session": session,
            "writes": [
                {
                    "path": "workspace/notes/log.md",
                    "mode": "replace",
                    "content": "# Log\nby a person\nmine\n",
                    "base_revision": 2,
                }
            ],
        },
        token,
    ).json()
    assert merged["results"][0]["status"] == "written"


# --- Concurrency (PostgreSQL) -------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="row locks are PostgreSQL's; the suite's second run uses it"
)
def test_16_threads_x_15_appends_land_once_each_with_no_conflict(s3, log, token):
    from django.test import Client

    session = _api(Client(), "hooks/pre", {}, token).json()["session"]
    threads_n, appends_n = 16, 15
    statuses: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(threads_n)

    def worker(index: int) -> None:
        client = Client()
        try:
            barrier.wait(timeout=30)
            for n in range(appends_n):
                response = _append(
                    client, token, session, key=f"t{index}-{n}", line=f"- thread {index} line {n}\n"
                )
                status = (
                    response.json()["results"][0]["status"]
                    if response.status_code == 200
                    else f"http {response.status_code}"
                )
                with lock:
                    statuses.append(status)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(threads_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert statuses.count("written") == threads_n * appends_n, sorted(set(statuses))
    lines = [line for line in _text(s3, log).splitlines() if line.startswith("- thread")]
    assert len(lines) == threads_n * appends_n and len(set(lines)) == threads_n * appends_n
    numbers = list(Revision.objects.filter(file=log).order_by("number").values_list("number", flat=True))
    assert numbers == list(range(1, threads_n * appends_n + 2))
    _bucket_is_database(s3, log)


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="row locks are PostgreSQL's; the suite's second run uses it"
)
def test_two_reviewers_approving_at_once_write_once(s3, log, agent, admin, make_user):
    proposal = Proposal.objects.create(
        project=log.project, file=log, agent=agent, mode="append", content="- approved line\n"
    )
    other = make_user("oleg")
    barrier = threading.Barrier(2)
    outcomes = []

    def approve(by) -> None:
        try:
            barrier.wait(timeout=10)
            outcomes.append(
                proposals.proposal_approve(proposal=Proposal.objects.get(pk=proposal.pk), by=by).number
            )
        finally:
            connections.close_all()

    threads = [threading.Thread(target=approve, args=(u,)) for u in (admin, other)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert outcomes == [2, 2]
    assert _text(s3, log).count("- approved line") == 1
    assert AuditEvent.objects.filter(action="proposal.approve").count() == 1


def test_a_double_click_on_approve_writes_once(client, s3, log, agent, admin):
    proposal = Proposal.objects.create(
        project=log.project, file=log, agent=agent, mode="append", content="- approved line\n"
    )
    client.force_login(admin)
    url = reverse("projects:proposal_decide", args=[log.project.slug, proposal.pk])
    for _ in range(2):
        client.post(url, {"decision": "approve"})
    assert _text(s3, log).count("- approved line") == 1
    assert Revision.objects.filter(file=log).count() == 2
    assert Proposal.objects.get(pk=proposal.pk).status == "approved"


@pytest.fixture
def proposal_audits_fail():
    """The audit event of a new proposal is refused."""
    refusal = DatabaseRefusal("projects_auditevent", when="NEW.action = 'proposal.create'")
    refusal.start()
    yield refusal
    refusal.stop()


def test_a_proposal_and_its_audit_event_are_one_transaction(client, s3, log, token, proposal_audits_fail):
    """If the audit event cannot be written, the proposal is not left behind either."""
    session = _api(client, "hooks/pre", {}, token).json()["session"]
    client.raise_request_exception = False
    response = _api(
        client,
        "hooks/post",
        {"session": session, "writes": [{"path": "AGENTS.md", "mode": "append", "content": "- a rule\n"}]},
        token,
    )
    assert response.status_code == 500
    assert not Proposal.objects.exists()


# --- After a crash, check_isolation warns and passes --------------------------------------------


def test_a_crash_leaves_a_warning_not_a_failure(s3, log, person, revision_inserts_fail, capsys):
    with pytest.raises(Exception):  # noqa: B017 - the database's own error class varies
        store.file_save(file=log, content="# Log\ncrashed\n", actor=Actor.person(person), base_revision=1)
    revision_inserts_fail.stop()
    findings = isolation.check_isolation([log.project])
    assert [(f.kind, f.severity) for f in findings] == [("orphan_snapshot", "warning")]
    call_command("check_isolation", "--project", log.project.slug)  # exits 0
    assert "1 warning" in capsys.readouterr().out
    assert IdempotencyRecord.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_runnerkit_retries_an_unknown_outcome_with_the_same_key(live_server, s3, log, token):
    from runnerkit import Client

    client = Client(live_server.url, token, backoff=0.05)
    session = client.pre()["session"]
    s3.proxy.inject("PUT", HEAD, "lose")
    s3.proxy.inject("GET", HEAD, "drop")  # the first attempt cannot tell: 503, outcome unknown
    answer = client.post(session, [{"path": "workspace/notes/log.md", "mode": "append", "content": LINE}])
    assert answer["results"][0]["status"] == "written"
    assert _text(s3, log).count(LINE) == 1
    record = IdempotencyRecord.objects.get()
    assert record.state == "done" and record.endpoint == "hooks/post"
    assert [p for m, p in s3.proxy.requests if m == "PUT" and p.endswith("/notes/log.md")]


# --- The fault matrix: every fault x every way of writing, then the writer tries again ----------

FAULTS = {
    "head PUT stored, answer lost": [("PUT", HEAD, "lose")],
    "head PUT stored, answer lost, check fails": [("PUT", HEAD, "lose"), ("GET", HEAD, "drop")],
    "head PUT never arrives": [("PUT", HEAD, "drop")],
    "head PUT answered 500": [("PUT", HEAD, "status")],
    "snapshot PUT answered 503": [("PUT", r"/_history/", "status")],
    "S3 down": "down",
    "database fails after the head write": "database",
}
WAYS = ("console save", "post hook append", "post hook replace")


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("fault", list(FAULTS))
def test_fault_matrix_nothing_lost_nothing_twice_true_author(
    client, s3, log, token, agent, person, revision_inserts_fail, fault, way
):
    revision_inserts_fail.stop()
    session = _api(client, "hooks/pre", {}, token).json()["session"] if way != "console save" else None
    client.raise_request_exception = False
    new_text = "# Log\n" + LINE

    def attempt() -> str:
        if way == "console save":
            try:
                store.file_save(
                    file=MemoryFile.objects.select_related("head", "project").get(pk=log.pk),
                    content=new_text,
                    actor=Actor.person(person),
                    base_revision=1,
                )
                return "ok"
            except errors.StoreError as exc:
                return exc.code
            except Exception:  # noqa: BLE001 - the injected database failure
                return "database"
        write = (
            {"path": "workspace/notes/log.md", "mode": "append", "content": LINE}
            if way == "post hook append"
            else {
                "path": "workspace/notes/log.md",
                "mode": "replace",
                "content": new_text,
                "base_revision": 1,
            }
        )
        response = _api(
            client, "hooks/post", {"session": session, "writes": [write]}, token, key="the-same-key"
        )
        if response.status_code != 200:
            return f"http {response.status_code}"
        return response.json()["results"][0]["status"]

    plan = FAULTS[fault]
    if plan == "down":
        s3.proxy.down = True
    elif plan == "database":
        revision_inserts_fail.start()
    else:
        for method, path, action in plan:
            s3.proxy.inject(method, path, action, status=503 if "snapshot" in fault else 500)
    first = attempt()
    s3.proxy.heal()
    revision_inserts_fail.stop()
    second = attempt() if first not in ("ok", "written") else first
    print(f"\nMATRIX | {fault} | {way} | first: {first} | retry: {second}")
    assert second in ("ok", "written"), (first, second)
    assert _text(s3, log) == new_text  # the line once
    head = _head(log)
    assert head.number == 2
    if way == "console save":
        assert (head.author_kind, head.author_user) == ("person", person)
    else:
        assert (head.author_kind, head.author_agent, head.session_ref) == ("agent", agent, session)
    assert not Revision.objects.filter(file=log, author_kind="external").exists()
    _bucket_is_database(s3, log)


def test_a_pre_hook_whose_answer_was_lost_opens_one_session_and_the_retry_gets_it(
    client, s3, log, token, agent
):
    from projects.models import AgentSession

    first = _api(client, "hooks/pre", {}, token, key="pre-1")
    # The answer never reached the runner; it sends the same request again.
    again = _api(client, "hooks/pre", {}, token, key="pre-1")
    assert first.status_code == again.status_code == 200, again.content
    assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
    assert "You keep the log." in again.json()["prompt"]
    assert AgentSession.objects.filter(agent=agent).count() == 1
    # A new run (a new key) is a new session.
    other = _api(client, "hooks/pre", {}, token, key="pre-2")
    assert other.json()["session"] != first.json()["session"]
    assert AgentSession.objects.filter(agent=agent).count() == 2
    # Its kept prompt gone (here: deleted behind the console's back), the retry opens nothing
    # and says the answer is lost.
    session = AgentSession.objects.get(pk=first.json()["session"])
    s3.client.delete_object(
        Bucket=s3.bucket, Key=layout.prompt_key(log.project.prefix, session.prompt_sha256)
    )
    lost = _api(client, "hooks/pre", {}, token, key="pre-1")
    assert lost.status_code == 409 and lost.json()["error"]["code"] == "answer_lost"
    assert AgentSession.objects.filter(agent=agent).count() == 2
    bad = _api(client, "hooks/pre", {}, token, key="a key with spaces")
    assert bad.status_code == 400 and AgentSession.objects.filter(agent=agent).count() == 2


# --- A lost answer, then the same save again ---------------------------------------------------


def test_a_save_whose_answer_was_lost_is_recognised_when_the_person_saves_again(client, s3, log, admin):
    """The editor answered 503 "outcome unknown"; the save had landed and the next pre hook
    recorded it. Saving the same text on the same base again is that save (no conflict with
    one's own text, no second revision); someone else's identical text still conflicts."""
    client.force_login(admin)
    url = reverse("projects:file_edit", kwargs={"slug": log.project.slug, "file_id": log.pk})
    form = {"content": "# Log\nmine\n", "message": "edit", "base_revision": 1}
    s3.proxy.inject("PUT", HEAD, "lose")
    s3.proxy.inject("GET", HEAD, "drop")
    lost = client.post(url, form)
    assert lost.status_code == 503 and "unknown" in lost.text.lower()
    adoption.adopt(log)  # what the next pre hook, save or reconcile does
    assert (_head(log).number, _head(log).author_user) == (2, admin)
    again = client.post(url, form)
    assert again.status_code == 302, again.text[:500]
    page = client.get(again["Location"])
    assert "Saved revision 2." in page.text
    assert Revision.objects.filter(file=log).count() == 2 and _text(s3, log) == "# Log\nmine\n"
    assert not AuditEvent.objects.filter(action="file.external_change").exists()
    with pytest.raises(errors.SaveConflict):  # another text on that base is a conflict as ever
        store.file_save(file=log, content="# Log\nother\n", actor=Actor.person(admin), base_revision=1)


def test_the_same_text_on_the_same_base_by_someone_else_still_conflicts(s3, log, person, make_user):
    store.file_save(file=log, content="# Log\nmine\n", actor=Actor.person(person), base_revision=1)
    with pytest.raises(errors.SaveConflict):
        store.file_save(file=log, content="# Log\nmine\n", actor=Actor.person(make_user()), base_revision=1)


def test_a_replace_whose_answer_was_lost_is_recognised_without_its_key(client, s3, log, token, agent):
    """The API: a replace answered 503 "outcome unknown", recorded since; the same replace from
    the same session, sent again under a new key (a runner that lost the first), is written."""
    session = _api(client, "hooks/pre", {}, token).json()["session"]
    write = {"path": "workspace/notes/log.md", "mode": "replace", "content": "# Log\nnew\n"}
    write["base_revision"] = 1
    s3.proxy.inject("PUT", HEAD, "lose")
    s3.proxy.inject("GET", HEAD, "drop")
    lost = _api(client, "hooks/post", {"session": session, "writes": [write], "end": False}, token, key="a")
    assert lost.status_code == 503 and lost.json()["error"]["outcome"] == "unknown"
    adoption.adopt(log)
    again = _api(client, "hooks/post", {"session": session, "writes": [write]}, token, key="b")
    assert again.status_code == 200
    [result] = again.json()["results"]
    assert (result["status"], result["revision"]) == ("written", 2)
    assert Revision.objects.filter(file=log).count() == 2
    head = _head(log)
    assert (head.author_kind, head.author_agent, head.session_ref) == ("agent", agent, session)
