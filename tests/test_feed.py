"""Freshness without a LIST on every pre hook: only what runners may write is listed, and with
SeaweedFS's change feed only when something changed there. A direct write by a runner's own
credentials is in its next prompt with the feed on, and with the feed down (the fallback); a
write with the console's own keys is found by reconcile and by the next save's ETag check."""

import shutil
import time

import pytest
from django.test import override_settings
from prometheus_client import REGISTRY

from devtools.seaweed import SeaweedMini
from projects.audit import Actor
from projects.memory import feed, layout, reconcile, store
from projects.memory.errors import SaveConflict
from projects.models import MemoryFile, Project, Revision
from projects.runners import bearer, credentials, prehook
from runnerkit.direct import DirectStorage

pytestmark = pytest.mark.django_db


@pytest.fixture
def runner(s3, project, agent, person, admin):
    system = Actor.system("t")
    store.file_create(
        project=project, scope="agent", agent=agent, path="SOUL.md", content="You are calm.\n", actor=system
    )
    store.file_create(project=project, scope="workspace", path="notes/a.md", content="# A\n", actor=system)
    token, raw = bearer.token_create(agent=agent, name="direct", created_by=admin)
    credential, secret = credentials.credentials_issue(token=token, by=admin)
    direct = DirectStorage(
        endpoint_url=s3.direct_url, access_key_id=credential.access_key_id, secret_access_key=secret
    )
    agent.project.refresh_from_db()
    return {"token": raw, "direct": direct}


@pytest.fixture
def following(s3):
    """The console follows the test server's filer (this test's process, its own thread)."""
    with override_settings(MGC_S3_CHANGE_FEED="seaweedfs", MGC_S3_FILER_ADDRESS=s3.server.filer_address):
        found = feed.feed_for(s3.bucket)
        deadline = time.monotonic() + 10
        while not found.following and time.monotonic() < deadline:
            time.sleep(0.01)
        assert found.following
        yield found
        feed.stop_all()


def _quiet(follower, prefix: str) -> None:
    """Until the stream has reported every write made so far (no change for 0.2 s)."""
    last, since = follower.count(prefix), time.monotonic()
    while time.monotonic() - since < 0.2:
        time.sleep(0.01)
        if follower.count(prefix) != last:
            last, since = follower.count(prefix), time.monotonic()


def _lists(s3, since: int) -> list[str]:
    return [path for method, path in s3.proxy.requests[since:] if method == "GET" and "list-type=2" in path]


def _direct_write(runner, s3, key: str, body: bytes, session, agent, etag=None):
    written = runner["direct"].write(
        s3.bucket, key, body, etag=etag, agent=str(agent.pk), session=str(session.pk), token=runner["token"]
    )
    assert written.status == "written", written


def test_an_agent_no_runner_may_write_for_lists_nothing(s3, project, agent, person):
    store.file_create(
        project=project, scope="workspace", path="notes/a.md", content="# A\n", actor=Actor.system("t")
    )
    assert Project.objects.get(pk=project.pk).runner_writable in ({}, {"workspace": False, "agents": []})
    mark = len(s3.proxy.requests)
    session, assembly = prehook.hook_pre(agent=agent, user=person)
    assert "# A" in assembly.prompt and _lists(s3, mark) == []
    assert assembly.bucket_checked  # nothing a runner could have written was left unlooked


def test_with_the_feed_the_next_prompt_has_the_runners_write_and_idle_hooks_list_nothing(
    s3, project, agent, person, runner, following
):
    project = Project.objects.get(pk=project.pk)
    assert project.runner_writable == {"workspace": True, "agents": []}
    _quiet(following, layout.workspace_prefix(project.prefix))  # the fixture's own writes
    prehook.hook_pre(agent=agent, user=person)  # lists once (this process never listed)
    # Nothing changes from now on: hooks list nothing. On a loaded machine an event of the
    # fixture's writes may still be on its way (the stream replays a margin before it began),
    # and costs one more LIST; after that, idle hooks list nothing.
    for _ in range(20):
        mark = len(s3.proxy.requests)
        session, _ = prehook.hook_pre(agent=agent, user=person)
        if not _lists(s3, mark):
            break
        _quiet(following, layout.workspace_prefix(project.prefix))
    assert _lists(s3, mark) == []  # nothing changed: no LIST
    mark = len(s3.proxy.requests)
    session, _ = prehook.hook_pre(agent=agent, user=person)
    assert _lists(s3, mark) == []  # and it stays so
    file = MemoryFile.objects.get(path="notes/a.md")
    workspace = layout.workspace_prefix(project.prefix)
    seen = following.count(workspace)
    _direct_write(runner, s3, file.key, b"# A\n\nRoot cause: pool.\n", session, agent, etag=file.head_etag)
    assert following.wait_past(workspace, seen)
    mark = len(s3.proxy.requests)
    session, assembly = prehook.hook_pre(agent=agent, user=person)
    assert "Root cause: pool." in assembly.prompt
    assert _lists(s3, mark) == [
        f"/{s3.bucket}?list-type=2&prefix="
        f"{layout.workspace_prefix(project.prefix).replace('/', '%2F')}"
        f"&encoding-type=url"
    ]
    assert prehook.receipt_revisions(session)["workspace/notes/a.md"] == 2
    assert Revision.objects.get(file=file, number=2).author_label == f"external (agent:{agent.slug})"


def test_with_the_feed_down_every_hook_lists_and_the_write_is_still_in_the_next_prompt(
    s3, project, agent, person, runner
):
    with override_settings(MGC_S3_CHANGE_FEED="seaweedfs", MGC_S3_FILER_ADDRESS="127.0.0.1:1.2"):
        down = feed.feed_for(s3.bucket)
        try:
            time.sleep(0.5)
            assert not down.following  # nothing answers there
            session, _ = prehook.hook_pre(agent=agent, user=person)
            file = MemoryFile.objects.get(path="notes/a.md")
            _direct_write(
                runner,
                s3,
                file.key,
                b"# A\n\nwritten with the feed down\n",
                session,
                agent,
                etag=file.head_etag,
            )
            mark = len(s3.proxy.requests)
            session, assembly = prehook.hook_pre(agent=agent, user=person)
            assert "written with the feed down" in assembly.prompt and _lists(s3, mark)
        finally:
            feed.stop_all()


def test_a_write_with_the_consoles_own_keys_is_for_reconcile_and_the_next_save(
    s3, project, agent, person, admin
):
    file = store.file_create(
        project=project, scope="workspace", path="notes/a.md", content="# A\n", actor=Actor.system("t")
    ).file
    s3.put(file.key, b"# A\n\nan operator's hand edit\n")
    _session, assembly = prehook.hook_pre(agent=agent, user=person)
    assert "hand edit" not in assembly.prompt  # out of band: not listed
    with pytest.raises(SaveConflict) as conflict:  # the next save's ETag check finds it
        store.file_save(file=file, content="# A\n\nmine\n", actor=Actor.person(admin), base_revision=1)
    assert "hand edit" in conflict.value.head_text
    s3.put(file.key, b"# A\n\nanother hand edit\n")
    repairs = reconcile.reconcile(project=project)
    assert [r.kind for r in repairs] == ["adopted"]
    assert "another hand edit" in prehook.hook_pre(agent=agent, user=person)[1].prompt


def test_the_feed_survives_a_seaweedfs_restart_and_resumes_where_it_stopped(tmp_path):
    server = SeaweedMini(tmp_path / "s3", access_key="feed-key", secret_key="feed-secret").start()
    try:
        import boto3

        client = boto3.client(
            "s3",
            endpoint_url=server.endpoint,
            region_name="us-east-1",
            aws_access_key_id="feed-key",
            aws_secret_access_key="feed-secret",
        )
        client.create_bucket(Bucket="fed")
        reconnects = REGISTRY.get_sample_value("mgc_change_feed_reconnects_total") or 0.0
        follower = feed.Feed(feed._weed(), server.filer_address, "fed")
        try:
            deadline = time.monotonic() + 10
            while not follower.following and time.monotonic() < deadline:
                time.sleep(0.01)
            before = follower.mark("p/workspace/")
            lagged = REGISTRY.get_sample_value("mgc_change_feed_lag_seconds_count") or 0.0
            client.put_object(Bucket="fed", Key="p/workspace/one.md", Body=b"1")
            assert follower.wait_past("p/workspace/", before.count)
            # The write's delay to this process is measured (seconds, from the event's time).
            assert (REGISTRY.get_sample_value("mgc_change_feed_lag_seconds_count") or 0.0) > lagged
            assert REGISTRY.get_sample_value("mgc_change_feed_following") == 1.0
            server.stop()
            deadline = time.monotonic() + 10
            while follower.following and time.monotonic() < deadline:
                time.sleep(0.01)
            assert not follower.following  # down: hooks list again
            assert REGISTRY.get_sample_value("mgc_change_feed_following") == 0.0
            server.start()
            # Written after the restart, before the feed is back: replayed when it is.
            _put_when_ready(client, "p/workspace/two.md")
            deadline = time.monotonic() + 20
            while (
                not follower.following or follower.mark("p/workspace/").count < before.count + 2
            ) and time.monotonic() < deadline:
                time.sleep(0.02)
            after = follower.mark("p/workspace/")
            assert after is not None and after.epoch > before.epoch  # a new connection
            assert after.count >= before.count + 2  # one.md, and two.md replayed
            assert REGISTRY.get_sample_value("mgc_change_feed_reconnects_total") > reconnects
        finally:
            follower.stop()
    finally:
        server.stop()
        shutil.rmtree(tmp_path / "s3", ignore_errors=True)


def _put_when_ready(client, key: str) -> None:
    """After a restart SeaweedFS may answer 500 for a few seconds (SEAWEEDFS.md, caveats)."""
    deadline = time.monotonic() + 20
    while True:
        try:
            client.put_object(Bucket="fed", Key=key, Body=b"2")
            return
        except Exception:  # noqa: BLE001 - retried until the deadline
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
