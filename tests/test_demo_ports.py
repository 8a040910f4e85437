"""The demo prints the port it really serves on: a taken port is passed over (or, when it was
asked for by name, refused with a clear message), and the URL is printed only once the demo's
own server listens there."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from devtools import ports
from devtools.seaweed import free_ports

# A few seconds (the demo's script only refuses a port here): not marked slow.
pytestmark = pytest.mark.db_independent

ROOT = Path(__file__).resolve().parent.parent


def _listen(port: int) -> socket.socket:
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen()
    return server


def _tool(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "devtools.ports", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        **kwargs,
    )


def test_a_taken_port_is_passed_over_unless_it_was_asked_for():
    [port] = free_ports(1)
    with _listen(port):
        assert not ports.is_free(port)
        other = ports.pick(port, exact=False)
        assert other > port and ports.is_free(other)
        with pytest.raises(ports.PortTaken):
            ports.pick(port, exact=True)

        chosen = _tool(str(port), "--name", "the console")
        assert chosen.returncode == 0 and int(chosen.stdout) > port
        assert f"Port {port} on 127.0.0.1 is taken; the console uses {chosen.stdout.strip()}" in chosen.stderr

        refused = _tool(str(port), "--exact", "--name", "the console")
        assert refused.returncode == 1 and refused.stdout == ""
        assert f"Port {port} on 127.0.0.1 (the console, MGC_DEMO_PORT) is taken" in refused.stderr
    assert _tool(str(port), "--exact").stdout.strip() == str(port)  # free again


def test_the_url_is_announced_only_once_the_scripts_own_server_listens(tmp_path):
    [port] = free_ports(1)
    script = tmp_path / "serve.sh"
    # Like demo.sh: the announcer in the background, then the server in the foreground.
    script.write_text(f"""set -e
cd {ROOT}
{sys.executable} -m devtools.ports announce {port} "Console: http://127.0.0.1:{port}" &
sleep 1.5
echo listening
{sys.executable} -c "import socket, time; s = socket.create_server(('127.0.0.1', {port})); time.sleep(3)"
wait
""")
    started = time.monotonic()
    out = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60).stdout
    assert out.splitlines() == ["listening", f"Console: http://127.0.0.1:{port}"]
    assert time.monotonic() - started >= 1.5


SLOW_START = """import socket, sys, time
server = socket.create_server(("127.0.0.1", {port}))
time.sleep(1.5)  # listening, its workers still starting: a request waits
print("answering", flush=True)
while True:
    client, _ = server.accept()
    client.recv(1024)
    client.sendall(b"HTTP/1.0 302 Found\\r\\nLocation: /accounts/login/\\r\\nContent-Length: 0\\r\\n\\r\\n")
    client.close()
"""


def test_with_http_the_url_is_announced_once_the_server_answers(tmp_path):
    """demo.sh's announcer: a console that listens but is still warming up its workers holds
    the first request; the URL appears once a request is answered (a redirect counts)."""
    [port] = free_ports(1)
    (tmp_path / "server.py").write_text(SLOW_START.format(port=port))
    script = tmp_path / "serve.sh"
    script.write_text(f"""cd {ROOT}
{sys.executable} -m devtools.ports announce {port} "Console: http://127.0.0.1:{port}" --http &
ANNOUNCE=$!
{sys.executable} {tmp_path / "server.py"} &
SERVER=$!
wait $ANNOUNCE
kill $SERVER
""")
    out = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60).stdout
    assert out.splitlines() == ["answering", f"Console: http://127.0.0.1:{port}"]


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="ownership is read from /proc")
def test_someone_elses_server_on_the_port_is_not_announced(tmp_path):
    [port] = free_ports(1)
    with _listen(port):  # this test process, not a child of the script
        script = tmp_path / "lost.sh"
        script.write_text(f"""cd {ROOT}
{sys.executable} -m devtools.ports announce {port} "Console: http://127.0.0.1:{port}" &
sleep 2
kill $!
""")
        out = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60).stdout
    assert "Console:" not in out


def test_the_demo_refuses_a_port_asked_for_by_name_that_is_taken(tmp_path):
    [web, s3] = free_ports(2)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MGC_", "DATABASE_URL", "DJANGO_"))}
    env.update(
        MGC_DEMO_DIR=str(tmp_path / "demo"),
        MGC_DEMO_PORT=str(web),
        MGC_DEMO_S3_PORT=str(s3),
        PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}",
    )
    with _listen(web):
        result = subprocess.run(
            ["bash", str(ROOT / "scripts/demo.sh")],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 1
    assert f"Port {web} on 127.0.0.1 (the console, MGC_DEMO_PORT) is taken" in result.stderr
    assert "Console:" not in result.stdout and "Starting SeaweedFS" not in result.stdout
