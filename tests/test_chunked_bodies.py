"""Runner API request bodies sent chunked (Transfer-Encoding: chunked, no Content-Length), over a
raw socket to real server processes: gunicorn (which marks the end of a decoded body,
`wsgi.input_terminated`) reads them within the size limit, Django's runserver (which cannot)
answers 411 Length Required, both in the API's JSON error shape. Before, either read the body
as empty and answered 422 "field required". Server processes need a database they can reach:
PostgreSQL run."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from devtools.seaweed import free_ports, stop_process
from projects.models import SessionEvent

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="a server process needs a database it can reach: PostgreSQL run",
    ),
]
ROOT = Path(__file__).resolve().parent.parent
LIMIT = 4096


@pytest.fixture
def servers(tmp_path):
    """gunicorn and runserver on the test database, the API's body limit at LIMIT bytes."""
    db = connection.settings_dict
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MGC_", "DJANGO_", "DATABASE_URL"))}
    env.update(
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        MGC_API_MAX_BODY_BYTES=str(LIMIT),
        MGC_DEBUG="1",
        MGC_LOG_LEVEL="WARNING",
        MGC_WEB_GRACEFUL_TIMEOUT="1",
        MGC_WEB_WORKERS="1",
        MGC_WEB_THREADS="2",
    )
    gunicorn_port, runserver_port = free_ports(2)
    commands = {
        "gunicorn": [
            str(Path(sys.executable).with_name("gunicorn")),
            "-c",
            str(ROOT / "memoryadmin" / "gunicorn.conf.py"),
            "memoryadmin.wsgi",
            "--bind",
            f"127.0.0.1:{gunicorn_port}",
        ],
        "runserver": [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{runserver_port}"],
    }
    started = []
    try:
        for name, command in commands.items():
            log = open(tmp_path / f"{name}.log", "w")  # noqa: SIM115 - the process keeps it
            started.append(
                subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)  # noqa: S603
            )
        for port in (gunicorn_port, runserver_port):
            _wait_listening(port)
        yield {"gunicorn": gunicorn_port, "runserver": runserver_port}
    finally:
        for process in started:
            stop_process(process, 10)


def _wait_listening(port: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port}")


def _raw(port: int, path: str, token: str, body: bytes, *, chunk: int | None) -> tuple[int, dict, dict]:
    """One POST written by hand: chunked in pieces of `chunk` bytes, or with a Content-Length."""
    head = [
        f"POST {path} HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        f"Authorization: Bearer {token}",
        "Content-Type: application/json",
        "Connection: close",
    ]
    if chunk is None:
        payload = body
        head.append(f"Content-Length: {len(body)}")
    else:
        head.append("Transfer-Encoding: chunked")
        pieces = [body[i : i + chunk] for i in range(0, len(body), chunk)]
        payload = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall("\r\n".join(head).encode() + b"\r\n\r\n" + payload)
        answer = b""
        while data := sock.recv(65536):
            answer += data
    status_line, _, rest = answer.partition(b"\r\n")
    headers_raw, _, content = rest.partition(b"\r\n\r\n")
    headers = dict(line.decode().split(": ", 1) for line in headers_raw.split(b"\r\n") if b": " in line)
    if headers.get("Transfer-Encoding") == "chunked":
        content = _dechunk(content)
    return int(status_line.split()[1]), json.loads(content or b"{}"), headers


def _dechunk(data: bytes) -> bytes:
    out = b""
    while data:
        size, _, data = data.partition(b"\r\n")
        size = int(size.split(b";")[0], 16)
        if not size:
            break
        out, data = out + data[:size], data[size + 2 :]
    return out


def test_chunked_bodies_are_read_within_the_limit_or_refused_with_a_status_that_says_why(
    servers, agent, token
):
    status, answer, _ = _raw(servers["gunicorn"], "/api/v1/hooks/pre", token, b"{}", chunk=1)
    assert status == 200, answer
    session = answer["session"]
    body = json.dumps({"session": session, "name": "grep", "summary": "searched the incident notes"}).encode()

    # gunicorn: the chunks are joined and read as the body (in 7-byte pieces here).
    status, answer, _ = _raw(servers["gunicorn"], "/api/v1/hooks/tool", token, body, chunk=7)
    assert (status, answer["recorded"]) == (200, True)
    assert SessionEvent.objects.get(pk=answer["event"]).payload["name"] == "grep"

    # Over the limit: 413 in the API's shape, as a body that declared its length gets.
    big = json.dumps({"session": session, "name": "grep", "summary": "x" * LIMIT}).encode()
    for chunk in (1000, None):
        status, answer, _ = _raw(servers["gunicorn"], "/api/v1/hooks/tool", token, big, chunk=chunk)
        assert status == 413 and answer["error"]["code"] == "body_too_large", answer

    # runserver cannot tell where a chunked body ends: 411, saying what to send instead.
    status, answer, headers = _raw(servers["runserver"], "/api/v1/hooks/tool", token, body, chunk=7)
    assert status == 411 and headers["Content-Type"] == "application/json"
    assert answer["error"]["code"] == "length_required" and "Content-Length" in answer["error"]["message"]
    status, answer, _ = _raw(servers["runserver"], "/api/v1/hooks/tool", token, body, chunk=None)
    assert status == 200 and answer["recorded"] is True
    assert SessionEvent.objects.filter(session_id=session, kind="tool").count() == 2
