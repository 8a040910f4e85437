"""The sandbox writing straight to S3 with the runner's own credentials, and the console
catching up: the next pre hook injects what the bucket holds, as a revision attributed to the
runner only when its proof checks out, and the receipt names that revision."""

import hashlib

import pytest

from projects.audit import Actor
from projects.memory import reading, store
from projects.models import AgentSession, AuditEvent, MemoryFile, Revision
from projects.runners import bearer, credentials
from runnerkit import Client, Sandbox
from runnerkit.direct import DirectStorage

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def runner(s3, project, agent, person, admin):
    system = Actor.system("t")
    store.file_create(
        project=project, scope="agent", agent=agent, path="SOUL.md", content="You are calm.\n", actor=system
    )
    store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="Maria prefers UTC.\n",
        actor=Actor.person(person),
    )
    store.file_create(
        project=project, scope="workspace", path="incidents/a.md", content="# Incident A\n", actor=system
    )
    token, raw = bearer.token_create(agent=agent, name="direct", created_by=admin)
    credential, secret = credentials.credentials_issue(token=token, by=admin)
    return {"token": raw, "key_id": credential.access_key_id, "secret": secret}


def _direct(s3, runner, endpoint=None) -> DirectStorage:
    return DirectStorage(
        endpoint_url=endpoint or s3.direct_url,
        access_key_id=runner["key_id"],
        secret_access_key=runner["secret"],
    )


def _receipt_revision(session: dict, path: str) -> int:
    return next(f["revision"] for s in session["sections"] for f in s["files"] if f["path"] == path)


def test_direct_write_is_injected_by_the_next_pre_hook_with_a_truthful_receipt(
    live_server, s3, runner, agent, tmp_path
):
    client = Client(live_server.url, runner["token"])
    first = client.pre(user="maria")
    box = Sandbox(client, first["session"], tmp_path, direct=_direct(s3, runner))
    box.pull()
    local = tmp_path / "workspace" / "incidents" / "a.md"
    local.write_text("# Incident A\n\nRoot cause: pool exhaustion.\n", encoding="utf-8")
    new = tmp_path / "workspace" / "runs" / "r1.md"
    new.parent.mkdir(parents=True)
    new.write_text("# Run 1\n", encoding="utf-8")
    report = box.push(summary="analysis")
    assert sorted((r["path"], r["status"], r.get("via")) for r in report) == [
        ("workspace/incidents/a.md", "written", "s3"),
        ("workspace/runs/r1.md", "written", "s3"),
    ]
    # Nothing went through the console yet: it is all in the bucket.
    file = MemoryFile.objects.get(path="incidents/a.md")
    assert file.head.number == 1
    assert s3.get(file.key) == b"# Incident A\n\nRoot cause: pool exhaustion.\n"

    second = client.pre(user="maria")
    assert second["bucket_checked"] is True
    assert "Root cause: pool exhaustion." in second["prompt"]
    assert "### file: workspace/runs/r1.md" in second["prompt"]
    file.refresh_from_db()
    head = Revision.objects.get(pk=file.head_id)
    assert (head.number, head.author_kind, head.author_agent, head.session_ref) == (
        2,
        "external",
        agent,
        first["session"],
    )
    assert head.author_label == f"external (agent:{agent.slug})"
    assert _receipt_revision(second, "workspace/incidents/a.md") == 2
    receipt = AgentSession.objects.get(pk=second["session"]).receipt
    assert {f["path"]: f["revision"] for s in receipt for f in s["files"]}["workspace/incidents/a.md"] == 2
    created = MemoryFile.objects.get(path="runs/r1.md")
    assert created.head.author_agent == agent
    event = AuditEvent.objects.filter(action="file.external_change").latest("seq")
    assert event.actor_agent == agent
    # The snapshot of the adopted revision is in the history, as for any save.
    assert s3.get(head.snapshot_key) == b"# Incident A\n\nRoot cause: pool exhaustion.\n"
    # And a third pre hook has nothing to catch up: no new revision.
    client.pre(user="maria")
    assert MemoryFile.objects.get(pk=file.pk).head.number == 2


def test_a_file_changed_since_the_pull_is_a_conflict_and_stays_local(live_server, s3, runner, tmp_path):
    client = Client(live_server.url, runner["token"])
    box = Sandbox(client, client.pre(user="maria")["session"], tmp_path, direct=_direct(s3, runner))
    box.pull()
    file = MemoryFile.objects.select_related("head", "project").get(path="incidents/a.md")
    store.file_save(
        file=file, content="# Incident A\n\nconsole edit\n", actor=Actor.system("t"), base_revision=1
    )
    local = tmp_path / "workspace" / "incidents" / "a.md"
    local.write_text("# Incident A\n\nrunner edit\n", encoding="utf-8")
    report = box.push()
    assert [(r["path"], r["status"]) for r in report] == [("workspace/incidents/a.md", "conflict")]
    assert local.read_text(encoding="utf-8") == "# Incident A\n\nrunner edit\n"
    assert s3.get(file.key) == b"# Incident A\n\nconsole edit\n"


def test_files_the_policy_does_not_let_it_replace_still_go_through_the_hook(
    live_server, s3, runner, tmp_path
):
    client = Client(live_server.url, runner["token"])
    box = Sandbox(client, client.pre(user="maria")["session"], tmp_path, direct=_direct(s3, runner))
    box.pull()
    profile = tmp_path / "USER.md"
    profile.chmod(0o644)
    profile.write_text("Maria prefers UTC.\nLikes tables.\n", encoding="utf-8")
    report = box.push()
    assert [(r["path"], r["status"]) for r in report] == [("USER.md", "proposed")]


def test_a_forged_claim_is_recorded_as_external_and_unattributed(live_server, s3, runner, agent):
    client = Client(live_server.url, runner["token"])
    session = client.pre(user="maria")["session"]
    file = MemoryFile.objects.get(path="incidents/a.md")
    body = b"# Incident A\n\nforged\n"
    # Someone with bucket access names the agent, but cannot sign with its token.
    s3.client.put_object(
        Bucket=s3.bucket,
        Key=file.key,
        Body=body,
        Metadata={
            "mgc-agent": str(agent.pk),
            "mgc-session": session,
            "mgc-proof": hashlib.sha256(b"guess").hexdigest(),
        },
    )
    client.pre(user="maria")
    head = MemoryFile.objects.select_related("head").get(pk=file.pk).head
    assert (head.number, head.author_kind, head.author_agent_id, head.author_label) == (
        2,
        "external",
        None,
        "external",
    )


def test_a_lost_answer_to_a_direct_write_is_the_runners_success(live_server, s3, runner, tmp_path):
    """The PUT reached the bucket, the answer did not; the retry's 412 meets its own bytes."""
    client = Client(live_server.url, runner["token"])
    box = Sandbox(
        client,
        client.pre(user="maria")["session"],
        tmp_path,
        direct=_direct(s3, runner, endpoint=s3.proxy.url),
    )
    box.pull()
    file = MemoryFile.objects.get(path="incidents/a.md")
    (tmp_path / "workspace" / "incidents" / "a.md").write_text("# A\n\nonce\n", encoding="utf-8")
    fault = s3.proxy.inject("PUT", file.key.replace(".", r"\."), "lose")
    report = box.push()
    assert fault.hits == 1
    assert [(r["path"], r["status"]) for r in report] == [("workspace/incidents/a.md", "written")]
    client.pre(user="maria")
    assert MemoryFile.objects.get(pk=file.pk).head.number == 2
    assert (
        reading.file_read(MemoryFile.objects.select_related("head", "project").get(pk=file.pk)).text
        == "# A\n\nonce\n"
    )


def test_hooks_arriving_together_share_lists_and_none_misses_an_earlier_write(s3, project, monkeypatch):
    """The catch-up's LISTs are shared (catchup._SharedListings): one runs per prefix at a time,
    and every hook that arrives while it runs joins the next one, which starts after all of
    them arrived. So 12 hooks at once cost 2 LISTs, and a write made before a hook arrived is
    in its listing even though a LIST (read before that write) was still running."""
    import threading

    from projects.memory import layout
    from projects.memory.catchup import _LISTINGS
    from projects.memory.storage import storage_for

    prefix = layout.workspace_prefix(project.prefix)
    storage = storage_for(project)
    s3.put(f"{prefix}before.md", b"1")
    real, calls = storage.etags, []
    first_read, answer_late = threading.Event(), threading.Event()

    def etags(wanted):  # S3 reads at once; the first answer reaches us late
        listed = real(wanted)
        calls.append(listed)
        if len(calls) == 1:
            first_read.set()
            answer_late.wait(10)
        return listed

    # On the storage object, which every test shares; the undo takes it off again (setattr
    # would leave the bound method behind, hiding any later change to the class).
    monkeypatch.setitem(vars(storage), "etags", etags)
    first = _LISTINGS.get(storage, prefix)
    assert first_read.wait(10)  # the first LIST has read the bucket
    s3.put(f"{prefix}during.md", b"2")  # a direct write while its answer is on the way
    hooks = 12
    arrived = threading.Barrier(hooks + 1, timeout=10)
    results = []

    def hook():  # arrives after that write, while the first LIST runs
        listing = _LISTINGS.get(storage, prefix)
        arrived.wait()
        results.append(listing.result(timeout=10))

    threads = [threading.Thread(target=hook) for _ in range(hooks)]
    for thread in threads:
        thread.start()
    arrived.wait()  # every hook has its place in the queued LIST
    answer_late.set()
    for thread in threads:
        thread.join()
    assert f"{prefix}during.md" not in first.result(timeout=10)  # read before the write
    assert len(results) == hooks
    assert all(f"{prefix}during.md" in listed for listed in results)  # none missed it
    assert len(calls) == 2  # the running LIST and one for all twelve
    alone = _LISTINGS.get(storage, prefix).result(timeout=10)  # nothing running: at once
    assert f"{prefix}during.md" in alone and len(calls) == 3


def test_a_failed_shared_list_reaches_every_hook_waiting_on_it(s3, project):
    from projects.memory import layout
    from projects.memory.catchup import _LISTINGS
    from projects.memory.errors import StorageUnavailable
    from projects.memory.storage import storage_for

    prefix = layout.workspace_prefix(project.prefix)
    s3.proxy.inject("GET", r"list-type=2", "status", status=503, times=20)
    with pytest.raises(StorageUnavailable):
        _LISTINGS.get(storage_for(project), prefix).result(timeout=30)
    s3.proxy.heal()
    assert _LISTINGS.get(storage_for(project), prefix).result(timeout=10) == {}
