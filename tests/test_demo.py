"""`make demo` keeps its memory: an edit made in the console survives Ctrl+C and a restart.

Runs scripts/demo.sh twice as a person would (SeaweedFS, migrations, seed, gunicorn) in a
folder of its own, on free ports, and drives the console over HTTP in between.
"""

import http.cookiejar
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from devtools.seaweed import free_ports
from tests.receiver import Receiver

# Slow: make demo's script twice, from an empty folder (migrations, seed data, servers).
pytestmark = [pytest.mark.demo, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent


class Demo:
    def __init__(self, folder: Path):
        self.folder = folder
        self.web_port, self.s3_port = free_ports(2)
        self.process = None
        self.output = ""

    def start(self) -> str:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MGC_", "DATABASE_URL", "DJANGO_"))}
        env.update(
            MGC_DEMO_DIR=str(self.folder),
            MGC_DEMO_PORT=str(self.web_port),
            MGC_DEMO_S3_PORT=str(self.s3_port),
            PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}",
        )
        log = open(self.folder.parent / f"demo-{self.web_port}.log", "w+")  # noqa: SIM115
        self.process = subprocess.Popen(
            ["bash", str(ROOT / "scripts/demo.sh")],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            log.seek(0)
            self.output = log.read()
            if "Listening at: " in self.output or self.process.poll() is not None:
                break
            time.sleep(0.3)
        assert self.process.poll() is None, self.output
        self._wait_http()
        return self.output

    def _wait_http(self) -> None:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{self.url}/accounts/login/", timeout=2).read()
                return
            except OSError:
                time.sleep(0.2)
        raise AssertionError("the console did not answer")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def ctrl_c(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGINT)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            raise


class Browser:
    """Just enough of a browser: cookies, CSRF tokens from forms."""

    def __init__(self, base: str):
        self.base = base
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )

    def get(self, path: str) -> str:
        return self.opener.open(self.base + path, timeout=20).read().decode()

    def post(self, path: str, fields: dict, page: str) -> str:
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        data = urllib.parse.urlencode({**fields, "csrfmiddlewaretoken": token}).encode()
        request = urllib.request.Request(self.base + path, data=data, headers={"Referer": self.base + path})
        return self.opener.open(request, timeout=20).read().decode()


def _webhook_delivered_within_seconds(demo, output: str, env: dict, folder: Path) -> None:
    """The issue's 'done means': a webhook added with demo-manage.sh, then a post hook's write,
    reaches a receiver on 127.0.0.1 signed, within seconds (the demo's events worker)."""
    receiver = Receiver()
    try:
        added = subprocess.run(
            [
                "bash",
                str(ROOT / "scripts/demo-manage.sh"),
                "webhooks",
                "add",
                "--project",
                "incident-analysis",
                "--url",
                receiver.url,
                "--events",
                "memory.revision.created",
            ],
            cwd=ROOT,
            env={**env, "MGC_DEMO_DIR": str(folder), "PYTHON_BIN": sys.executable},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert added.returncode == 0, added.stderr
        secret = re.search(r"(whsec_\S+)", added.stdout).group(1)
        token = re.search(r"runner token for incident-analyst: (mgc_\S+)", output).group(1)

        def call(path: str, body: dict) -> dict:
            request = urllib.request.Request(
                demo.url + path,
                data=json.dumps(body).encode(),
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            )
            return json.loads(urllib.request.urlopen(request, timeout=20).read())

        session = call("/api/v1/hooks/pre", {"user": "employee"})["session"]
        started = time.monotonic()
        call(
            "/api/v1/hooks/post",
            {
                "session": session,
                "writes": [{"path": "workspace/notes/webhook.md", "mode": "append", "content": "- sent\n"}],
            },
        )
        [request] = receiver.wait_for(1, timeout=15)
        assert time.monotonic() - started < 10
        body = receiver.verified(secret, request)
        assert body["type"] == "memory.revision.created"
        assert body["data"]["path"] == "workspace/notes/webhook.md"
    finally:
        receiver.close()


def _running_on(folder: Path) -> list[str]:
    """Processes whose command line names the demo's folder (weed's -dir, the workers)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            line = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(folder) in line and proc.name.isdigit():
            found.append(f"{proc.name}: {line[:200]}")
    return found


@pytest.fixture
def demos():
    started: list[Demo] = []
    yield started
    for demo in started:  # a failed test still stops what it started
        demo.ctrl_c()


def test_an_edit_survives_ctrl_c_and_a_second_demo(tmp_path, demos):
    folder = tmp_path / "demo"
    # Secrets as token_urlsafe makes them one time in 64: starting with "-", which a command
    # line takes for an option (CI once failed so). They must reach the commands intact.
    folder.mkdir()
    (folder / "secrets.env").write_text(
        "MGC_S3_ACCESS_KEY_ID=demo-0123456789abcdef\n"
        "MGC_S3_SECRET_ACCESS_KEY=-s3cret-with-a-leading-dash\n"
        "MGC_DEMO_PASSWORD=-pw-with-a-leading-dash\n"
    )
    # A log left by an earlier run, as every second run finds it: the script must wait for
    # this run's SeaweedFS, not read the old "ready on" (it did, about one time in ten).
    (folder / "s3.log").write_text("SeaweedFS S3 ready on http://127.0.0.1:9 (stale); filer 127.0.0.1:9.19\n")
    demo = Demo(folder)
    demos.append(demo)
    first = demo.start()
    password = re.search(r"password: (\S+)", first).group(1)
    assert password == "-pw-with-a-leading-dash"
    # manage.py against the running demo's data, as the README says.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MGC_", "DATABASE_URL"))}
    prompt = subprocess.run(
        [
            "bash",
            str(ROOT / "scripts/demo-manage.sh"),
            "assemble_context",
            "--project",
            "incident-analysis",
            "--agent",
            "incident-analyst",
            "--user",
            "employee",
        ],
        cwd=ROOT,
        env={**env, "MGC_DEMO_DIR": str(folder), "PYTHON_BIN": sys.executable},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert prompt.returncode == 0, prompt.stderr
    assert "<agent_identity>" in prompt.stdout
    assert "runner token for incident-analyst: mgc_" in first
    _webhook_delivered_within_seconds(demo, first, env, folder)
    assert "unsigned requests get 403" in first
    browser = Browser(demo.url)
    login = browser.get("/accounts/login/")
    browser.post("/accounts/login/", {"username": "admin", "password": password}, login)
    tree = browser.get("/p/incident-analysis/workspace/?dir=decisions")
    file_url = re.search(r'href="(/p/incident-analysis/f/[0-9a-f-]+/)"', tree).group(1)
    editor = browser.get(file_url + "edit/")
    base = re.search(r'name="base_revision" value="(\d+)"', editor).group(1)
    browser.post(
        file_url + "edit/",
        {"content": "Edited before Ctrl+C.\n", "message": "demo", "base_revision": base},
        editor,
    )
    assert "Edited before Ctrl+C." in browser.get(file_url)
    demo.ctrl_c()
    assert demo.process.returncode is not None
    # A quiet Ctrl+C: every worker stopped within the graceful timeout, none was killed.
    log = (folder.parent / f"demo-{demo.web_port}.log").read_text()
    # (A worker's own "Worker exiting" line may not reach the log when the whole process
    # group gets the SIGINT at once; the arbiter's SIGKILL line always would.)
    assert "SIGKILL" not in log, log[-2000:]
    # Nothing of the first run is left holding the data folder or a port: SeaweedFS runs in
    # a session of its own, so Ctrl+C reaches it only through the script's trap.
    deadline = time.monotonic() + 10
    while _running_on(folder) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _running_on(folder) == []

    again = Demo(folder)
    demos.append(again)
    second = again.start()
    assert "keeping the memory of earlier runs" in second
    assert f"password: {password}" in second
    browser = Browser(again.url)
    login = browser.get("/accounts/login/")
    browser.post("/accounts/login/", {"username": "admin", "password": password}, login)
    assert "Edited before Ctrl+C." in browser.get(file_url)
    again.ctrl_c()
