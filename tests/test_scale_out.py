"""Scale-out, shown rather than described: two console processes (gunicorn, gthread) sharing
one PostgreSQL and Redis as the cache, in front of a SeaweedFS cluster (a master, two volume
servers with replication 001, a filer and an S3 gateway), all on loopback.

Runners append through both consoles at once: nothing is lost, no line is written twice,
revisions are gapless and the bucket's head is the database's. Then one volume server is
killed and every object, heads and history alike, still reads, through S3 and through a
console with a cold cache. Slow (about half a minute), run by `make test` on PostgreSQL.
"""

import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import boto3
import psycopg
import pytest
from django.db import connection

from devtools.seaweed import SeaweedCluster, free_ports, stop_process

ROOT = Path(__file__).resolve().parent.parent
DB = "mgc_scale_out"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="the consoles share one PostgreSQL: the suite's PostgreSQL run",
    ),
]

SETUP = """
import json
from django.contrib.auth import get_user_model
from projects.memory import store
from projects.runners import bearer
from projects.audit import Actor
from projects.models import Agent, Membership, Project
admin = get_user_model().objects.create_user("ops", password="x")
project = Project.objects.create(slug="scale", name="Scale")
Membership.objects.create(user=admin, project=project, role="admin")
agent = Agent.objects.create(project=project, slug="writer", name="Writer")
store.file_create(project=project, scope="agent", agent=agent, path="SOUL.md",
                  content="You write things down.\\n", actor=Actor.system("t"))
store.file_create(project=project, scope="workspace", path="log.md", content="# Log\\n",
                  actor=Actor.system("t"))
_, raw = bearer.token_create(agent=agent, name="scale", created_by=admin)
print(json.dumps({"token": raw}))
"""


def _database_url() -> str:
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")
    server = base.rsplit("/", 1)[0]
    with psycopg.connect(
        f"{server.replace('postgres://', 'postgresql://')}/postgres", autocommit=True
    ) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB}")
    return f"{server}/{DB}"


def _call(port: int, path: str, body: dict, token: str) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1/{path}",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


@pytest.fixture
def stack(tmp_path):
    cluster = SeaweedCluster(
        tmp_path / "seaweedfs", access_key="scale-key", secret_key="scale-secret"
    ).start()
    consoles: list[subprocess.Popen] = []
    try:
        yield from _consoles_on(cluster, tmp_path, consoles)
    finally:  # a failed setup stops what it started too
        for console in consoles:
            stop_process(console, 10)
        cluster.stop()


def _consoles_on(cluster, tmp_path, consoles):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MGC_", "DJANGO_"))}
    env.update(
        DATABASE_URL=_database_url(),
        MGC_S3_ENDPOINT_URL=cluster.endpoint,
        MGC_S3_ACCESS_KEY_ID="scale-key",
        MGC_S3_SECRET_ACCESS_KEY="scale-secret",
        MGC_S3_BUCKET="scale-memory",
        MGC_REDIS_URL="redis://127.0.0.1:6379/15",
        MGC_DB_CONN_MAX_AGE="60",
        MGC_LOG_LEVEL="WARNING",
    )
    python = sys.executable
    for command in (["migrate", "-v", "0"], ["ensure_bucket"]):
        subprocess.run(
            [python, "manage.py", *command], cwd=ROOT, env=env, check=True, capture_output=True, timeout=180
        )
    subprocess.run(["redis-cli", "-n", "15", "flushdb"], check=True, capture_output=True)
    made = subprocess.run(
        [python, "-c", "import django; django.setup()\n" + SETUP],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "memoryadmin.settings"},
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    token = json.loads(made.stdout.strip().splitlines()[-1])["token"]
    ports = free_ports(2)
    for port in ports:
        consoles.append(
            subprocess.Popen(  # noqa: S603 - our own server
                [
                    str(Path(python).with_name("gunicorn")),
                    "memoryadmin.wsgi",
                    "-b",
                    f"127.0.0.1:{port}",
                    "-k",
                    "gthread",
                    "-w",
                    "2",
                    "--threads",
                    "4",
                    "--timeout",
                    "120",
                ],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=open(tmp_path / f"console-{port}.log", "w"),
            )
        )  # noqa: SIM115
    for port in ports:
        for _ in range(150):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=2)
                break
            except OSError:
                time.sleep(0.2)
    s3 = boto3.client(
        "s3",
        endpoint_url=cluster.endpoint,
        region_name="us-east-1",
        aws_access_key_id="scale-key",
        aws_secret_access_key="scale-secret",
    )
    yield {"ports": ports, "token": token, "cluster": cluster, "s3": s3, "env": env}


def test_two_consoles_on_a_seaweedfs_cluster_lose_nothing_and_survive_a_volume_server(stack):
    ports, token, s3 = stack["ports"], stack["token"], stack["s3"]
    threads_n, appends_n = 8, 6
    outcomes: list[tuple[str, str]] = []
    lock = threading.Lock()

    def runner(index: int) -> None:
        for n in range(appends_n):
            port = ports[(index + n) % 2]  # alternate between the two consoles
            line = f"- runner {index} note {n}"
            status, pre = _call(port, "hooks/pre", {}, token)
            assert status == 200, pre
            status, post = _call(
                port,
                "hooks/post",
                {
                    "session": pre["session"],
                    "writes": [{"path": "workspace/log.md", "mode": "append", "content": line + "\n"}],
                },
                token,
            )
            result = post["results"][0] if status == 200 else {"status": f"http {status}"}
            with lock:
                outcomes.append((line, result["status"]))

    started = time.monotonic()
    workers = [threading.Thread(target=runner, args=(i,)) for i in range(threads_n)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=300)
    elapsed = time.monotonic() - started
    written = [line for line, status in outcomes if status == "written"]
    print(
        f"\n{len(outcomes)} appends through 2 consoles in {elapsed:.1f} s: "
        f"{len(written)} written, {len(outcomes) - len(written)} not "
        f"({sorted({s for _, s in outcomes})})"
    )
    assert len(outcomes) == threads_n * appends_n

    status, pre = _call(ports[0], "hooks/pre", {}, token)
    head_text = pre["prompt"].split("### file: workspace/log.md\n", 1)[1].split("\n</", 1)[0]
    lines = [line for line in head_text.splitlines() if line.startswith("- runner")]
    assert sorted(lines) == sorted(written)  # every written line once, nothing else
    assert len(set(lines)) == len(lines)
    check = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup()\n"
            "from projects.models import MemoryFile, Revision\n"
            "f = MemoryFile.objects.select_related('head').get(path='log.md')\n"
            "print(list(Revision.objects.filter(file=f).order_by('number')"
            ".values_list('number', flat=True)), f.key, f.head.sha256)",
        ],
        cwd=ROOT,
        env={**stack["env"], "DJANGO_SETTINGS_MODULE": "memoryadmin.settings"},
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    numbers_text, key, sha = check.rsplit(" ", 2)
    numbers = json.loads(numbers_text)
    assert numbers == list(range(1, len(written) + 2))  # gapless: the first save plus each write
    import hashlib

    body = s3.get_object(Bucket="scale-memory", Key=key)["Body"].read()
    assert hashlib.sha256(body).hexdigest() == sha  # the bucket's head is the database's

    # One volume server gone: every object still reads, straight from S3 and via a console.
    keys = [
        o["Key"]
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket="scale-memory")
        for o in page.get("Contents", [])
    ]
    stack["cluster"].kill_volume(0)
    started = time.monotonic()
    read = sum(1 for k in keys if s3.get_object(Bucket="scale-memory", Key=k)["Body"].read())
    subprocess.run(["redis-cli", "-n", "15", "flushdb"], check=True, capture_output=True)
    status, after = _call(ports[1], "hooks/pre", {}, token)
    print(
        f"volume server 0 killed: {read} of {len(keys)} objects read in "
        f"{time.monotonic() - started:.2f} s; cold pre hook {status}"
    )
    assert read == len(keys)
    assert status == 200 and head_text in after["prompt"]
