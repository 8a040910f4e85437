"""A gunicorn worker SIGKILLed in the middle of a post hook, and the runner's retry with the same
Idempotency-Key: written once, and answered at once, not after a fixed lease.

The console runs as in production (gunicorn, gthread, 2 workers) on the test's PostgreSQL
database and SeaweedFS, through the fault proxy. Which worker to kill is read from the
request's idempotency record (its owner names the process). The worker dies
- mid-S3-write: the head PUT is held by the proxy and never lands;
- mid-S3-write, the write landing after the death: the held PUT is forwarded later;
- after the first write committed, in the second one's S3 write;
- mid-database-transaction: a trigger keeps the revision INSERT busy, so PostgreSQL is
  still running the dead worker's statement when the retry comes.
A worker process in another process needs a database it can reach: PostgreSQL run."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from devtools.seaweed import free_ports, stop_process
from projects.audit import Actor
from projects.memory import store
from projects.models import IdempotencyRecord, MemoryFile, Revision
from tests.conftest import ACCESS_KEY, SECRET_KEY

pytestmark = [
    pytest.mark.slow,  # a gunicorn of its own, five kills, a 3 s statement
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="a server process needs a database it can reach: PostgreSQL run",
    ),
]
ROOT = Path(__file__).resolve().parent.parent
LOG = r"/workspace/notes/log\.md$"
OTHER = r"/workspace/notes/other\.md$"


@pytest.fixture
def console(s3, tmp_path):
    db = connection.settings_dict
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MGC_", "DJANGO_", "DATABASE_URL"))}
    env.update(
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        MGC_S3_ENDPOINT_URL=s3.proxy.url,
        MGC_S3_BUCKET=s3.bucket,
        MGC_S3_ACCESS_KEY_ID=ACCESS_KEY,
        MGC_S3_SECRET_ACCESS_KEY=SECRET_KEY,
        MGC_S3_MAX_ATTEMPTS="1",
        MGC_S3_READ_TIMEOUT="60",
        MGC_WEB_WORKERS="2",
        MGC_WEB_THREADS="4",
        MGC_DB_CONN_MAX_AGE="60",
        MGC_LOG_LEVEL="WARNING",
        MGC_WEB_GRACEFUL_TIMEOUT="1",
    )
    [port] = free_ports(1)
    log = open(tmp_path / "gunicorn.log", "w")  # noqa: SIM115 - closed below
    server = subprocess.Popen(  # noqa: S603 - our own server
        [
            str(Path(sys.executable).with_name("gunicorn")),
            "-c",
            str(ROOT / "memoryadmin" / "gunicorn.conf.py"),
            "memoryadmin.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            # Workers fork from a master that loaded the app, so the one gunicorn starts in
            # place of a killed worker serves within a moment: what is measured below is the
            # key's wait, not a worker's boot (seconds on a busy CI box).
            "--preload",
            "--access-logfile",
            "-",
            "--access-logformat",
            "%(t)s %(p)s %(r)s %(s)s %(L)s",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait(lambda: _answers(port), 60, "gunicorn to answer")
        yield port
    finally:
        stop_process(server, 10)
        log.close()
        print((tmp_path / "gunicorn.log").read_text()[-6000:])


def _answers(port: int) -> bool:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        conn.request("GET", "/api/v1/nothing")
        return conn.getresponse().status == 404
    except OSError:
        return False


def _wait(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)
    return found


def _post(port: int, token: str, body: dict, key: str, timeout: float = 60) -> tuple[int, dict, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.request(
        "POST",
        "/api/v1/hooks/post",
        json.dumps(body),
        {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Idempotency-Key": key,
        },
    )
    response = conn.getresponse()
    return response.status, json.loads(response.read() or b"{}"), dict(response.getheaders())


def _send_and_kill(port, token, body, key, ready, *, lost: bool = True) -> float:
    """Send the post on its own connection, wait until `ready()` says the worker is where it
    should die, SIGKILL that worker (named by the request's idempotency record); the time of
    the kill. The connection dies with it (`lost`; else the answer may have left before)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request(
        "POST",
        "/api/v1/hooks/post",
        json.dumps(body),
        {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Idempotency-Key": key,
        },
    )
    owner = _wait(
        lambda: IdempotencyRecord.objects.filter(key=key).values_list("owner", flat=True).first(),
        30,
        "the record",
    )
    _wait(ready, 30, "the worker to reach the point where it dies")
    pid = int(owner.split("|")[1])
    os.kill(pid, signal.SIGKILL)
    killed = time.time()
    if lost:
        with pytest.raises((http.client.HTTPException, OSError)):
            conn.getresponse().read()
    return killed


def _retry(port, token, body, key, killed) -> tuple[dict, tuple[float, float], int]:
    """The runner's retry, right after the death: its answer; the seconds from the death to
    the retry taking the key over (the record's claimed_at) and to its answer; how many 409
    "in progress" came first."""
    busy = 0
    while True:
        status, answer, headers = _post(port, token, body, key)
        if status != 409:
            break
        busy += 1
        time.sleep(float(headers.get("Retry-After", "1")))
    assert status == 200, answer
    answered = time.time() - killed
    taken = IdempotencyRecord.objects.get(key=key).claimed_at.timestamp() - killed
    return answer, (taken, answered), busy


def test_a_worker_killed_mid_post_the_retry_writes_once_and_is_answered_at_once(
    console, s3, project, agent, token, capsys
):
    port = console
    for path in ("notes/log.md", "notes/other.md"):
        store.file_create(
            project=project,
            scope="workspace",
            path=path,
            content="# Log\n",
            actor=Actor.system("t"),
        )
    session = _pre(port, token)
    timings = {}

    def append(path: str, line: str) -> dict:
        return {"path": f"workspace/{path}", "mode": "append", "content": line}

    def lines(path: str, line: str) -> int:
        file = MemoryFile.objects.get(path=path)
        return s3.get(file.key).decode().count(line)

    started = time.monotonic()  # a post that nothing interrupts, for comparison
    status, _answer, _headers = _post(
        port,
        token,
        {"session": session, "writes": [append("notes/other.md", "- zero\n")], "end": False},
        "k0",
    )
    assert status == 200
    plain = time.monotonic() - started

    # 1. Mid-S3-write: the head PUT is held and never lands.
    stall = s3.proxy.inject("PUT", LOG, "stall", delay=60)
    body = {"session": session, "writes": [append("notes/log.md", "- one\n")], "end": False}
    killed = _send_and_kill(port, token, body, "k1", lambda: stall.hits == 1)
    answer, timings["mid S3 write"], busy = _retry(port, token, body, "k1", killed)
    assert answer["results"][0]["status"] == "written" and busy == 0
    assert lines("notes/log.md", "- one\n") == 1

    # 2. Mid-S3-write, the write landing after the death (forwarded 1.5 s later).
    late = s3.proxy.inject("PUT", LOG, "delay", delay=1.5)
    body = {"session": session, "writes": [append("notes/log.md", "- two\n")], "end": False}
    killed = _send_and_kill(port, token, body, "k2", lambda: late.hits == 1)
    answer, timings["mid S3 write, landing later"], busy = _retry(port, token, body, "k2", killed)
    assert answer["results"][0]["status"] == "written" and busy == 0
    time.sleep(2)  # the dead worker's PUT has reached SeaweedFS by now (and was refused: If-Match)
    assert lines("notes/log.md", "- two\n") == 1

    # 3. After the first write committed, in the second write's S3 PUT.
    stall = s3.proxy.inject("PUT", OTHER, "stall", delay=60)
    body = {
        "session": session,
        "writes": [append("notes/log.md", "- three\n"), append("notes/other.md", "- three\n")],
        "end": False,
    }
    killed = _send_and_kill(port, token, body, "k3", lambda: stall.hits == 1)
    answer, timings["after a commit, in the next write"], busy = _retry(port, token, body, "k3", killed)
    assert [r["status"] for r in answer["results"]] == ["written", "written"] and busy == 0
    assert lines("notes/log.md", "- three\n") == lines("notes/other.md", "- three\n") == 1

    # 4. Mid-database-transaction: PostgreSQL still runs the dead worker's INSERT for 3 s
    #    (a trigger, once: a sequence is not rolled back), and holds the file's row lock.
    with connection.cursor() as cursor:
        cursor.execute("CREATE SEQUENCE mgc_slow_once")
        cursor.execute(
            "CREATE FUNCTION mgc_slow_commit() RETURNS trigger AS $$ BEGIN "
            "IF nextval('mgc_slow_once') = 1 THEN PERFORM pg_sleep(3); END IF; RETURN NEW; END; $$ "
            "LANGUAGE plpgsql"
        )
        cursor.execute(
            "CREATE TRIGGER mgc_slow_commit BEFORE INSERT ON projects_revision FOR EACH ROW "
            "EXECUTE FUNCTION mgc_slow_commit()"
        )
    try:
        body = {"session": session, "writes": [append("notes/log.md", "- four\n")], "end": False}
        killed = _send_and_kill(port, token, body, "k4", _sleeping_in_an_insert)
        answer, timings["mid database transaction"], busy = _retry(port, token, body, "k4", killed)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TRIGGER IF EXISTS mgc_slow_commit ON projects_revision")
            cursor.execute("DROP FUNCTION IF EXISTS mgc_slow_commit()")
            cursor.execute("DROP SEQUENCE IF EXISTS mgc_slow_once")
    assert answer["results"][0]["status"] == "written" and busy == 0
    assert lines("notes/log.md", "- four\n") == 1

    # 5. After its last commit (the answer stored), before or while answering: the retry
    #    gets the stored answer back and writes nothing.
    body = {"session": session, "writes": [append("notes/log.md", "- five\n")], "end": False}
    _send_and_kill(port, token, body, "k5", lambda: _answered("k5"), lost=False)
    status, replayed, headers = _post(port, token, body, "k5")
    assert status == 200 and headers.get("Idempotent-Replayed") == "true"
    assert replayed["results"][0]["status"] == "written" and lines("notes/log.md", "- five\n") == 1

    # Every line once in the bucket and once in the history, each the agent's revision.
    log = MemoryFile.objects.select_related("head").get(path="notes/log.md")
    assert s3.get(log.key).decode() == "# Log\n- one\n- two\n- three\n- four\n- five\n"
    assert (
        list(Revision.objects.filter(file=log).order_by("number").values_list("author_kind", flat=True))
        == ["system"] + ["agent"] * 5
    )
    # No retry met a 409 "in progress" (busy == 0 above): the key was free at the first one,
    # not after a lease (90 s before). The time each took, for docs/ARCHITECTURE.md:
    with capsys.disabled():
        print(f"\na post nothing interrupts: answered in {plain:.2f} s")
        for case, (taken, answered) in timings.items():
            print(
                f"killed {case}: the retry took the key over {taken:.2f} s after the worker's death "
                f"and was answered {answered:.2f} s after it"
            )


def _answered(key: str) -> bool:
    return IdempotencyRecord.objects.filter(key=key, state="done").exists()


def _sleeping_in_an_insert() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event = 'PgSleep' AND query LIKE %s",
            ['INSERT INTO "projects_revision"%'],
        )
        return cursor.fetchone()[0] > 0


def _pre(port: int, token: str) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request(
        "POST",
        "/api/v1/hooks/pre",
        "{}",
        {"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    response = conn.getresponse()
    assert response.status == 200
    return json.loads(response.read())["session"]
