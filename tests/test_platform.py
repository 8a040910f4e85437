"""The console as a platform team runs it: a real gunicorn console (two workers) on a SeaweedFS
of this module's own and on PostgreSQL through a TCP forwarder this module can cut, probed and
scraped from outside.

- /readyz answers 503 naming S3 while that SeaweedFS is stopped, and 200 once it is back; the
  same for the database (the forwarder cut, then restored; the PostgreSQL other tests share is
  never touched).
- A real Prometheus (Debian's `prometheus` package, its own process, a temporary
  configuration and storage) scrapes /metrics with the token during a short load of pre and
  post hooks, with docs/DEPLOY.md's alert rules loaded; the series are read back through its
  HTTP API and must count exactly the hooks sent, summed over both workers.

PostgreSQL run only: the console process needs a database of its own (a copy of the test
database, made in a second).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from devtools.seaweed import SeaweedMini, free_ports, stop_process
from tests.tcpproxy import TcpProxy

ROOT = Path(__file__).resolve().parent.parent
DB = "mgc_platform_test"
TOKEN = "platform-scrape-token-0123"
BUCKET = "platform-memory"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db,  # so that the test database exists (the console's is a copy of it)
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="the console process needs PostgreSQL: the PostgreSQL run"
    ),
]

SETUP = """
import json
from django.contrib.auth import get_user_model
from django.core.management import call_command
call_command("ensure_bucket")
from projects.audit import Actor
from projects.memory import store
from projects.models import Agent, Membership, Project
from projects.runners import bearer
admin = get_user_model().objects.create_user("ops", password="x")
project = Project.objects.create(slug="ops", name="Ops")
Membership.objects.create(user=admin, project=project, role="admin")
agent = Agent.objects.create(project=project, slug="writer", name="Writer",
    hook_policy={"post": {"workspace/**": {"modes": ["append"], "approval": False}}})
store.file_create(project=project, scope="agent", agent=agent, path="SOUL.md",
                  content="You write things down.\\n", actor=Actor.system("t"))
_, raw = bearer.token_create(agent=agent, name="platform", created_by=admin)
print(json.dumps({"token": raw}))
"""


def _server_url() -> str:
    settings = connection.settings_dict
    user = settings.get("USER") or "postgres"
    password = f":{settings['PASSWORD']}" if settings.get("PASSWORD") else ""
    return (
        f"postgresql://{user}{password}@{settings.get('HOST') or '127.0.0.1'}:{settings.get('PORT') or 5432}"
    )


def _database_copy() -> None:
    """The test database (migrated by pytest-django) copied as a template: a second, not a
    migrate's ten. Falls back to migrating when another session holds the template open."""
    connection.ensure_connection()
    template = connection.settings_dict["NAME"]
    connection.close()
    with psycopg.connect(f"{_server_url()}/postgres", autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        try:
            admin.execute(f'CREATE DATABASE {DB} TEMPLATE "{template}"')
            return
        except psycopg.errors.ObjectInUse:
            admin.execute(f"CREATE DATABASE {DB}")
    raise LookupError("migrate")


def _get(url: str, headers: dict | None = None, timeout: float = 10) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _post(url: str, body: dict, token: str) -> tuple[int, dict]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def _until(what, timeout: float = 30.0, pause: float = 0.2):
    """Poll `what()` until it returns something truthy; the last value otherwise."""
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = what()
        if value:
            return value
        time.sleep(pause)
    return value


class Console:
    def __init__(self, folder: Path):
        self.folder = folder
        self.seaweed = SeaweedMini(folder / "s3", access_key="platform-key", secret_key="platform-secret")
        self.database = TcpProxy(
            (
                connection.settings_dict.get("HOST") or "127.0.0.1",
                int(connection.settings_dict.get("PORT") or 5432),
            )
        )
        self.process: subprocess.Popen | None = None
        self.port = free_ports(1)[0]
        self.token = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Console:
        clock = time.monotonic()
        self.seaweed.start()
        self.database.start()
        migrate = False
        try:
            _database_copy()
        except LookupError:
            migrate = True
        settings = connection.settings_dict
        password = f":{settings['PASSWORD']}" if settings.get("PASSWORD") else ""
        user = settings.get("USER") or "postgres"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MGC_", "DJANGO_", "PROMETHEUS_"))}
        env.update(
            DATABASE_URL=f"postgres://{user}{password}@127.0.0.1:{self.database.port}/{DB}",
            MGC_S3_ENDPOINT_URL=self.seaweed.endpoint,
            MGC_S3_ACCESS_KEY_ID="platform-key",
            MGC_S3_SECRET_ACCESS_KEY="platform-secret",
            MGC_S3_BUCKET=BUCKET,
            MGC_S3_MAX_ATTEMPTS="1",
            MGC_S3_CONNECT_TIMEOUT="1",
            MGC_S3_READ_TIMEOUT="3",
            MGC_DB_CONN_MAX_AGE="60",
            MGC_METRICS_TOKEN=TOKEN,
            MGC_READY_CACHE_SECONDS="0.2",
            MGC_LOG_FORMAT="json",
            MGC_LOG_LEVEL="WARNING",
            MGC_WEB_WORKERS="2",
            MGC_WEB_THREADS="4",
            MGC_WEB_GRACEFUL_TIMEOUT="2",
            PROMETHEUS_MULTIPROC_DIR=str(self.folder / "metrics"),
        )
        self.env = env
        python = sys.executable
        if migrate:
            subprocess.run(
                [python, "manage.py", "migrate", "-v", "0"],
                cwd=ROOT,
                env=env,
                check=True,
                capture_output=True,
                timeout=300,
            )
        made = subprocess.run(
            [python, "-c", "import django; django.setup()\n" + SETUP],
            cwd=ROOT,
            env={**env, "DJANGO_SETTINGS_MODULE": "memoryadmin.settings"},
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        )
        self.token = json.loads(made.stdout.strip().splitlines()[-1])["token"]
        print(f"[platform] S3, database (migrated: {migrate}) and data in {time.monotonic() - clock:.1f} s")
        self.log = (self.folder / "gunicorn.log").open("wb")
        self.process = subprocess.Popen(  # noqa: S603 - our own server
            [
                str(Path(python).with_name("gunicorn")),
                "-c",
                str(ROOT / "memoryadmin" / "gunicorn.conf.py"),
                "memoryadmin.wsgi",
                "--bind",
                f"127.0.0.1:{self.port}",
            ],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        if not _until(lambda: self.readyz()[0] == 200, timeout=60):
            raise RuntimeError(f"the console did not become ready: {self.readyz()}")
        print(f"[platform] console ready after {time.monotonic() - clock:.1f} s")
        return self

    def readyz(self) -> tuple[int, dict]:
        try:
            status, body = _get(f"{self.url}/readyz", timeout=10)
        except OSError:
            return 0, {}
        return status, json.loads(body or b"{}")

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process, 15)
            self.log.close()
        self.database.stop()
        self.seaweed.stop()
        try:
            with psycopg.connect(f"{_server_url()}/postgres", autocommit=True) as admin:
                admin.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        except psycopg.Error:
            pass


@pytest.fixture(scope="module")
def console(tmp_path_factory, django_db_setup, django_db_blocker):
    running = Console(tmp_path_factory.mktemp("platform"))
    try:
        with django_db_blocker.unblock():  # the test database, as a template
            running.start()
        yield running
    finally:
        running.stop()


def _failing(console: Console, name: str):
    status, body = console.readyz()
    return body if status == 503 and name in body.get("failing", []) else None


def test_readyz_names_s3_while_seaweedfs_is_stopped_and_is_ready_again_after(console):
    assert console.readyz()[0] == 200
    console.seaweed.stop()
    try:
        body = _until(lambda: _failing(console, "s3"))
        assert body, console.readyz()
        assert body["failing"] == ["s3"], body
        assert body["checks"]["database"]["ok"] and not body["checks"]["s3"]["ok"]
        assert "platform-secret" not in json.dumps(body) and "127.0.0.1" not in json.dumps(body)
    finally:
        console.seaweed.start()
    assert _until(lambda: console.readyz()[0] == 200), console.readyz()


def test_readyz_names_the_database_while_it_is_unreachable_and_is_ready_again_after(console):
    assert console.readyz()[0] == 200
    console.database.stop()
    try:
        body = _until(lambda: _failing(console, "database"))
        assert body, console.readyz()
        assert body["checks"]["s3"]["ok"] and body["checks"]["database"]["error"], body
    finally:
        console.database.start()
    assert _until(lambda: console.readyz()[0] == 200), console.readyz()
    # Pages still work after the database came back: the broken connections were replaced.
    assert _post(f"{console.url}/api/v1/hooks/pre", {}, console.token)[0] == 200


def _alert_rules() -> str:
    """The alert rules docs/DEPLOY.md gives, as written there."""
    text = (ROOT / "docs" / "DEPLOY.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    return next(block for block in blocks if block.lstrip().startswith("groups:"))


@pytest.fixture(scope="module")
def prometheus(console, tmp_path_factory):
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail("Debian's prometheus package is missing: apt-get install -y prometheus (.ci/run does)")
    folder = tmp_path_factory.mktemp("prometheus")
    (folder / "rules.yml").write_text(_alert_rules())
    (folder / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "rule_files: [rules.yml]\n"
        "scrape_configs:\n"
        "  - job_name: memory-console\n"
        "    metrics_path: /metrics\n"
        f"    authorization: {{credentials: {TOKEN}}}\n"
        f"    static_configs: [{{targets: ['127.0.0.1:{console.port}']}}]\n"
    )
    port = free_ports(1)[0]
    log = (folder / "prometheus.log").open("wb")
    process = subprocess.Popen(  # noqa: S603 - Debian's binary, our arguments
        [
            binary,
            f"--config.file={folder / 'prometheus.yml'}",
            f"--storage.tsdb.path={folder / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        cwd=folder,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"

    def ready():
        try:
            return _get(f"{base}/-/ready", timeout=2)[0] == 200
        except OSError:
            return False

    try:
        if not _until(ready, timeout=30):
            raise RuntimeError((folder / "prometheus.log").read_text())
        yield base
    finally:
        stop_process(process, 10)
        log.close()


def _query(base: str, expression: str) -> list:
    status, body = _get(f"{base}/api/v1/query?{urllib.parse.urlencode({'query': expression})}")
    assert status == 200, body
    return json.loads(body)["data"]["result"]


def _value(base: str, expression: str) -> float | None:
    result = _query(base, expression)
    return float(result[0]["value"][1]) if result else None


def test_prometheus_scrapes_the_console_under_load_and_reads_the_series_back(console, prometheus):
    pres, posts, errors = [], [], []

    def runner(n: int) -> None:
        for i in range(3):
            status, body = _post(f"{console.url}/api/v1/hooks/pre", {}, console.token)
            if status != 200:
                errors.append((status, body))
                continue
            pres.append(body["session"])
            status, body = _post(
                f"{console.url}/api/v1/hooks/post",
                {
                    "session": body["session"],
                    "writes": [{"path": f"workspace/log-{n}.md", "mode": "append", "content": f"line {i}\n"}],
                },
                console.token,
            )
            if status == 200 and body["results"][0]["status"] == "written":
                posts.append(1)
            else:
                errors.append((status, body))

    # The count so far, once Prometheus has scraped the console at least once.
    assert _until(lambda: _value(prometheus, 'up{job="memory-console"}') == 1.0, timeout=30)
    assert _until(lambda: _value(prometheus, "scrape_samples_scraped") or None, timeout=30)
    base_pre = _value(prometheus, 'sum(mgc_hook_duration_seconds_count{hook="pre"})') or 0.0
    threads = [threading.Thread(target=runner, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # What the console logged with a failed answer, so a failure says its cause.
    logged = (console.folder / "gunicorn.log").read_text(errors="replace") if errors else ""
    assert errors == [], logged[-6000:]
    wanted_pre = base_pre + len(pres)
    pre_count = _until(
        lambda: (
            _value(prometheus, 'sum(mgc_hook_duration_seconds_count{hook="pre"})') == wanted_pre
            and (_value(prometheus, 'sum(mgc_memory_writes_total{outcome="written"})') or 0) >= len(posts)
        ),
        timeout=30,
    )
    assert pre_count, _query(prometheus, "mgc_hook_duration_seconds_count")
    results = {
        expression: _value(prometheus, expression)
        for expression in (
            'sum(mgc_hook_duration_seconds_count{hook="pre"})',
            'sum(mgc_hook_duration_seconds_count{hook="post"})',
            'sum(mgc_memory_writes_total{outcome="written"})',
            'histogram_quantile(0.95, sum by (le) (rate(mgc_hook_duration_seconds_bucket{hook="pre"}[1m])))',
            'up{job="memory-console"}',
            "mgc_ready",
        )
    }
    print("\nPrometheus query results after the load:")  # quoted in the closing note
    for expression, value in results.items():
        print(f"  {expression} = {value}")
    assert results['sum(mgc_hook_duration_seconds_count{hook="pre"})'] == wanted_pre
    assert results['sum(mgc_memory_writes_total{outcome="written"})'] >= len(posts) == 12
    assert (
        0
        < results[
            'histogram_quantile(0.95, sum by (le) (rate(mgc_hook_duration_seconds_bucket{hook="pre"}[1m])))'
        ]
        < 10
    )
    assert results['up{job="memory-console"}'] == 1.0 and results["mgc_ready"] == 1.0
    # docs/DEPLOY.md's alert rules are loaded and evaluate without an error.
    status, body = _get(f"{prometheus}/api/v1/rules")
    groups = json.loads(body)["data"]["groups"]
    rules = [rule for group in groups for rule in group["rules"]]
    assert len(rules) >= 5
    evaluated = _until(
        lambda: all(
            rule.get("health") == "ok"
            for rule in json.loads(_get(f"{prometheus}/api/v1/rules")[1])["data"]["groups"][0]["rules"]
        ),
        timeout=15,
    )
    assert evaluated, json.loads(_get(f"{prometheus}/api/v1/rules")[1])
