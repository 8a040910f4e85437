"""The restore drill of docs/DEPLOY.md, section 8, done: while runners' post hooks keep
writing, the database is dumped (pg_dump) and then the bucket is copied with its versions
and legal holds (as bucket replication would) into a fresh SeaweedFS; the dump is restored
into a fresh PostgreSQL database; `manage.py restore_check` on the restored pair finds no
disagreement, only writes made after the dump, which `reconcile` adopts.

One slow test, PostgreSQL run only (pg_dump and pg_restore)."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import boto3
import psycopg
import pytest
from django.db import connection
from django.test import Client

from devtools.seaweed import SeaweedMini
from projects.audit import Actor
from projects.governance import holds
from projects.memory import store
from projects.models import Membership

ROOT = Path(__file__).resolve().parent.parent
RESTORED = "mgc_restore_drill"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="pg_dump: the PostgreSQL run"),
]


def _pg(settings: dict) -> list[str]:
    args = ["-h", settings.get("HOST") or "127.0.0.1", "-p", str(settings.get("PORT") or 5432)]
    return args + ["-U", settings.get("USER") or "postgres"]


def _copy_bucket(source, target, bucket: str) -> int:
    """Every version of every key in the order they were written, with metadata and legal
    holds, and delete markers where they were: what replication keeps. Returns versions."""
    entries: dict[str, list[dict]] = {}
    for page in source.get_paginator("list_object_versions").paginate(Bucket=bucket):
        for version in page.get("Versions", []):
            entries.setdefault(version["Key"], []).append(version)
        for marker in page.get("DeleteMarkers", []):
            entries.setdefault(marker["Key"], []).append({**marker, "marker": True})
    copied = 0
    for key, versions in entries.items():
        for version in reversed(versions):  # listed newest first
            if version.get("marker"):
                target.delete_object(Bucket=bucket, Key=key)
                continue
            got = source.get_object(Bucket=bucket, Key=key, VersionId=version["VersionId"])
            params = {
                "Bucket": bucket,
                "Key": key,
                "Body": got["Body"].read(),
                "Metadata": got.get("Metadata", {}),
                "ContentType": got.get("ContentType", "text/markdown; charset=utf-8"),
            }
            try:
                held = source.get_object_legal_hold(Bucket=bucket, Key=key, VersionId=version["VersionId"])
            except source.exceptions.ClientError:
                held = {}  # never held
            if held.get("LegalHold", {}).get("Status") == "ON":
                params["ObjectLockLegalHoldStatus"] = "ON"
            target.put_object(**params)
            copied += 1
    return copied


def _client(endpoint: str, key: str, secret: str):
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=key,
        aws_secret_access_key=secret,
    )


def test_restore_drill_dump_and_copy_while_post_hooks_run(
    s3, transactional_db, project, agent, person, tmp_path
):
    from tests.conftest import ACCESS_KEY, SECRET_KEY

    s3.lock()
    settings = connection.settings_dict
    host, port = settings.get("HOST") or "127.0.0.1", settings.get("PORT") or 5432
    server = f"postgresql://{settings.get('USER') or 'postgres'}@{host}:{port}"
    admin = person.__class__.objects.create_user("olga", password="x")
    Membership.objects.create(user=admin, project=project, role="admin")
    store.file_create(
        project=project,
        scope="agent",
        agent=agent,
        path="SOUL.md",
        content="You keep the incident log.\n",
        actor=Actor.person(admin),
    )
    profile = store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="# Maria\n",
        actor=Actor.person(person),
    )
    holds.hold_place(by=admin, project=project, reason="litigation 42", user=person)
    store.file_save(
        file=profile.file, content="# Maria\n\nOn call.\n", actor=Actor.person(person), base_revision=1
    )
    agent.hook_policy = {"post": {"workspace/**": {"modes": ["append", "replace"], "approval": False}}}
    agent.save()
    from projects.runners import bearer

    token = bearer.token_create(agent=agent, name="drill", created_by=admin)[1]

    stop = threading.Event()
    written = {"before": 0, "all": 0}
    problems = []

    def runner(n: int) -> None:
        client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
        try:
            while not stop.is_set():
                pre = client.post(
                    "/api/v1/hooks/pre", {"user": person.username}, content_type="application/json"
                )
                if pre.status_code != 200:
                    problems.append(pre.content)
                    continue
                post = client.post(
                    "/api/v1/hooks/post",
                    json.dumps(
                        {
                            "session": pre.json()["session"],
                            "writes": [
                                {
                                    "path": f"workspace/log-{n}.md",
                                    "mode": "append",
                                    "content": f"entry {written['all']}\n",
                                }
                            ],
                        }
                    ),
                    content_type="application/json",
                )
                if post.status_code != 200 or post.json()["results"][0]["status"] != "written":
                    problems.append(post.content)
                written["all"] += 1
        finally:
            connection.close()

    threads = [threading.Thread(target=runner, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    target = None
    try:
        while written["all"] < 6 and not problems:  # some history before the dump
            stop.wait(0.05)
        # 1. The database first, while the runners write (pg_dump reads one snapshot).
        since = dt.datetime.now(dt.UTC)
        dump = tmp_path / "console.dump"
        subprocess.run(
            ["pg_dump", "-Fc", *_pg(settings), "-d", settings["NAME"], "-f", str(dump)],
            check=True,
            capture_output=True,
            timeout=120,
        )
        written["before"] = written["all"]
        # 2. Then the bucket, with its versions, still while they write.
        target = SeaweedMini(tmp_path / "restored-s3", access_key=ACCESS_KEY, secret_key=SECRET_KEY).start()
        copy_to = _client(target.endpoint, ACCESS_KEY, SECRET_KEY)
        copy_to.create_bucket(Bucket=s3.bucket, ObjectLockEnabledForBucket=True)
        versions = _copy_bucket(s3.client, copy_to, s3.bucket)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    try:
        assert problems == []
        assert written["all"] > written["before"] > 0, written  # writes ran across the dump and the copy

        # 3. Restore the dump into a fresh database.
        with psycopg.connect(f"{server}/postgres", autocommit=True) as admin_db:
            admin_db.execute(f"DROP DATABASE IF EXISTS {RESTORED} WITH (FORCE)")
            admin_db.execute(f"CREATE DATABASE {RESTORED}")
        subprocess.run(
            ["pg_restore", "--no-owner", *_pg(settings), "-d", RESTORED, str(dump)],
            check=True,
            capture_output=True,
            timeout=120,
        )

        # 4. restore_check on the restored console.
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MGC_", "DJANGO_"))}
        env.update(
            DATABASE_URL=f"{server.replace('postgresql://', 'postgres://')}/{RESTORED}",
            MGC_S3_ENDPOINT_URL=target.endpoint,
            MGC_S3_ACCESS_KEY_ID=ACCESS_KEY,
            MGC_S3_SECRET_ACCESS_KEY=SECRET_KEY,
            MGC_S3_BUCKET=s3.bucket,
            MGC_LOG_LEVEL="WARNING",
        )

        def manage(*args) -> subprocess.CompletedProcess:
            return subprocess.run(
                [sys.executable, "manage.py", *args],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )

        first = manage("restore_check", "--since", since.isoformat())
        print(f"\nrestore drill: {versions} object versions copied; restore_check said:\n{first.stdout}")
        assert first.returncode == 0, first.stdout + first.stderr
        for check in ("snapshots", "heads", "prompts", "audit", "holds", "reconcile"):
            line = next(line for line in first.stdout.splitlines() if line.strip().split()[1:2] == [check])
            assert line.strip().startswith("OK") and int(line.split()[2]) > 0, line
        assert "written after the dump" in first.stdout  # the runners wrote on during the copy

        # 5. reconcile adopts what came after the dump; then nothing is left to adopt.
        repaired = manage("reconcile", "--orphan-grace", "0")
        assert repaired.returncode == 0, repaired.stdout + repaired.stderr
        second = manage("restore_check", "--since", since.isoformat(), "--json")
        assert second.returncode == 0, second.stdout + second.stderr
        after = json.loads(second.stdout)
        assert after["consistent"] and after["disagreements"] == []
        left = {finding["problem"].split(":")[0] for finding in after["written_after_the_dump"]}
        assert left <= {"orphan_prompt"}, after["written_after_the_dump"]  # kept prompts no session names
    finally:
        if target is not None:
            target.stop()
        try:
            with psycopg.connect(f"{server}/postgres", autocommit=True) as admin_db:
                admin_db.execute(f"DROP DATABASE IF EXISTS {RESTORED} WITH (FORCE)")
        except psycopg.Error:
            pass
