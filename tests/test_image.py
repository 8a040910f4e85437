"""The container image `make image` builds (scripts/image.sh: Debian's packages and the runtime
lock, no registry), run by podman against this test's own stack: a SeaweedFS of its own and a
PostgreSQL database of its own (a copy of the test database). Its manage.py seeds the data,
its gunicorn answers /readyz, a runner's pre and post hooks and /metrics, and logs JSON lines.

Slow, PostgreSQL run only, and only where the image was built: building it takes minutes
(debootstrap, pip), which CI's budget does not have, so without the image this test is
skipped and says how to build it."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.error
import urllib.request

import psycopg
import pytest
from django.db import connection

from devtools.seaweed import SeaweedMini, free_ports

IMAGE = "localhost/memory-console:latest"
DB = "mgc_image_test"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db,  # the test database exists (this test's is a copy of it)
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="the image needs PostgreSQL: the PostgreSQL run"
    ),
]

SEED = """
import json
import os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
import django
django.setup()
from django.contrib.auth import get_user_model
from django.core.management import call_command
from projects.audit import Actor
from projects.memory import store
from projects.models import Agent, Membership, Project
from projects.runners import bearer
call_command("ensure_bucket")
admin = get_user_model().objects.create_user("ops", password="x")
project = Project.objects.create(slug="ops", name="Ops")
Membership.objects.create(user=admin, project=project, role="admin")
agent = Agent.objects.create(project=project, slug="writer", name="Writer",
    hook_policy={"post": {"workspace/**": {"modes": ["append"], "approval": False}}})
store.file_create(project=project, scope="agent", agent=agent, path="SOUL.md",
                  content="You write things down.\\n", actor=Actor.system("t"))
print(json.dumps({"token": bearer.token_create(agent=agent, name="image", created_by=admin)[1]}))
"""


def _podman_flags() -> list[str]:
    """Lower limits than the host's (raising them is refused in an unprivileged container), and
    runc where it is installed (crun refuses hybrid cgroups, as on the CI box)."""
    flags = ["--network", "host", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
    return (["--runtime", "runc"] if shutil.which("runc") else []) + flags


def _server() -> str:
    settings = connection.settings_dict
    password = f":{settings['PASSWORD']}" if settings.get("PASSWORD") else ""
    return (
        f"{settings.get('USER') or 'postgres'}{password}@{settings.get('HOST') or '127.0.0.1'}:"
        f"{settings.get('PORT') or 5432}"
    )


@pytest.fixture(scope="module")
def stack(tmp_path_factory, django_db_setup, django_db_blocker):
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (apt-get install -y podman)")
    if subprocess.run(["podman", "image", "exists", IMAGE], check=False).returncode != 0:
        pytest.skip(f"{IMAGE} is not built here: run make image (a few minutes), then this test")
    folder = tmp_path_factory.mktemp("image")
    seaweed = SeaweedMini(folder / "s3", access_key="image-key", secret_key="image-secret-0123").start()
    with django_db_blocker.unblock():
        connection.ensure_connection()
        template = connection.settings_dict["NAME"]
        connection.close()
        with psycopg.connect(f"postgresql://{_server()}/postgres", autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
            admin.execute(f'CREATE DATABASE {DB} TEMPLATE "{template}"')
    port = free_ports(1)[0]
    env = {
        "DATABASE_URL": f"postgres://{_server()}/{DB}",
        "MGC_SECRET_KEY": "image-test-secret-key-0123456789abcdefghijklmnopqrstuvwxyz",
        "MGC_ALLOWED_HOSTS": "127.0.0.1",
        "MGC_SECURE_SSL_REDIRECT": "0",
        "MGC_S3_ENDPOINT_URL": seaweed.endpoint,
        "MGC_S3_ACCESS_KEY_ID": "image-key",
        "MGC_S3_SECRET_ACCESS_KEY": "image-secret-0123",
        "MGC_S3_BUCKET": "image-memory",
        "MGC_WEB_BIND": f"127.0.0.1:{port}",
        "MGC_WEB_WORKERS": "1",
        "MGC_WEB_GRACEFUL_TIMEOUT": "2",
        "MGC_METRICS_TOKEN": "image-metrics-token-0123",
    }
    env_file = folder / "env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    run = ["podman", "run", *_podman_flags(), "--env-file", str(env_file)]
    name = f"mgc-image-test-{port}"
    try:
        seeded = subprocess.run(
            [*run, "--rm", IMAGE, "python", "-c", SEED], capture_output=True, text=True, timeout=300
        )
        assert seeded.returncode == 0, seeded.stderr[-2000:]
        token = json.loads(seeded.stdout.strip().splitlines()[-1])["token"]
        subprocess.run([*run, "-d", "--name", name, IMAGE], check=True, capture_output=True, timeout=120)
        yield {"url": f"http://127.0.0.1:{port}", "token": token, "name": name, "env": env}
    finally:
        subprocess.run(["podman", "rm", "-f", "-t", "3", name], capture_output=True, timeout=60)
        seaweed.stop()
        with psycopg.connect(f"postgresql://{_server()}/postgres", autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")


def _call(url: str, body: dict | None = None, token: str = "") -> tuple[int, dict | str]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode() if body is not None else None,
        method="POST" if body is not None else "GET",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"} if token else {},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            text = answer.read().decode()
            status = answer.status
    except urllib.error.HTTPError as exc:
        text, status = exc.read().decode(), exc.code
    except OSError:
        return 0, ""
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def test_the_image_serves_the_console_against_the_test_stack(stack):
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and _call(f"{stack['url']}/readyz")[0] != 200:
        time.sleep(0.5)
    status, ready = _call(f"{stack['url']}/readyz")
    assert status == 200 and ready["status"] == "ready", ready

    status, pre = _call(f"{stack['url']}/api/v1/hooks/pre", {}, stack["token"])
    assert status == 200, pre
    status, post = _call(
        f"{stack['url']}/api/v1/hooks/post",
        {
            "session": pre["session"],
            "writes": [{"path": "workspace/log.md", "mode": "append", "content": "one\n"}],
        },
        stack["token"],
    )
    assert status == 200 and post["results"][0]["status"] == "written", post

    status, text = _call(f"{stack['url']}/metrics", token=stack["env"]["MGC_METRICS_TOKEN"])
    assert status == 200 and 'mgc_hook_duration_seconds_count{hook="pre"} 1.0' in text
    assert 'mgc_memory_writes_total{outcome="written"} 1.0' in text

    logs = subprocess.run(["podman", "logs", stack["name"]], capture_output=True, text=True, timeout=60)
    lines = [json.loads(line) for line in (logs.stdout + logs.stderr).splitlines() if line.startswith("{")]
    hooks = [line for line in lines if line.get("logger") == "mgc.request"]
    assert any("/hooks/pre" in line["message"] and line.get("agent") == "writer" for line in hooks), lines[
        -5:
    ]
    assert stack["token"] not in logs.stdout + logs.stderr
    assert not any(line.get("logger") == "gunicorn.access" for line in lines)  # no query strings logged
    # Runs as the unprivileged user the image names.
    whoami = subprocess.run(["podman", "exec", stack["name"], "id", "-un"], capture_output=True, text=True)
    assert whoami.stdout.strip() == "mgc"
