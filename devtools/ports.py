"""The demo's ports: the one asked for, or the next free one, so what the demo prints is
where it really serves.

    python -m devtools.ports 8000 --name console           # 8000, or the next free one
    python -m devtools.ports 8000 --name console --exact   # 8000, or exit 1 saying why
    python -m devtools.ports announce 8000 "Console: ..."  # print it once we serve there
    python -m devtools.ports announce 8000 "Console: ..." --http  # ... and answer HTTP

The port goes to stdout; what happened (another port chosen, or why none) to stderr.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

HOST = "127.0.0.1"
TRIES = 100  # 8000 taken: 8001 ... 8099


class PortTaken(Exception):
    pass


def is_free(port: int, host: str = HOST) -> bool:
    """Whether a server could listen on host:port now (SO_REUSEADDR as servers set it, so a
    port in TIME_WAIT after the last demo counts as free; one with a listener does not)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def pick(preferred: int, *, exact: bool, tries: int = TRIES, host: str = HOST) -> int:
    """preferred if free; else, unless exact, the next free port after it."""
    if is_free(preferred, host):
        return preferred
    if not exact:
        for port in range(preferred + 1, min(preferred + tries, 65536)):
            if is_free(port, host):
                return port
    raise PortTaken(preferred)


def listener_pids(port: int) -> set[int] | None:
    """Processes holding a socket that listens on 127.0.0.1 or 0.0.0.0 at port (Linux /proc);
    None where /proc cannot tell."""
    try:
        table = Path("/proc/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return None
    inodes = set()
    for row in table:
        fields = row.split()
        address, state, inode = fields[1], fields[3], fields[9]
        host, _, hex_port = address.partition(":")
        if state == "0A" and int(hex_port, 16) == port and host in ("0100007F", "00000000"):
            inodes.add(f"socket:[{inode}]")
    pids = set()
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            if any(os.readlink(fd) in inodes for fd in fd_dir.iterdir()):
                pids.add(int(fd_dir.parent.name))
        except OSError:
            continue  # gone, or not ours to read
    return pids


def _descends_from(pid: int, ancestor: int) -> bool:
    for _ in range(8):
        if pid == ancestor:
            return True
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            return False
        if pid <= 1:
            return False
    return False


def serving(port: int, parent: int) -> bool:
    """Whether a child of `parent` (the demo script) listens on port: a listener of someone
    else's, taken in the moment between the check and the server's start, does not count."""
    pids = listener_pids(port)
    if pids is None:  # no /proc: that something answers is all we can know
        try:
            socket.create_connection((HOST, port), timeout=1).close()
        except OSError:
            return False
        return True
    return any(_descends_from(pid, parent) for pid in pids)


def answers_http(port: int, timeout: float = 30.0) -> bool:
    """Whether an HTTP request to the port gets an answer (any status). A server that listens
    but is still starting its workers holds the request until one is ready."""
    request = urllib.request.Request(f"http://{HOST}:{port}/", method="HEAD")  # noqa: S310 - loopback
    try:
        with _NO_REDIRECTS.open(request, timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True  # an answer all the same (a redirect to the login page, a 404)
    except (OSError, ValueError):
        return False


class _Stay(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # the redirect is the answer


_NO_REDIRECTS = urllib.request.build_opener(_Stay)


def announce(port: int, message: str, timeout: float = 300.0, http: bool = False) -> int:
    """Print message once the demo's own server listens on port (with `http`: and answers a
    request, so the first page a person opens is served by a started worker); nothing if it
    never does."""
    parent = os.getppid()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if serving(port, parent) and (not http or answers_http(port)):
            print(message, flush=True)
            return 0
        if os.getppid() != parent:
            return 1  # the demo script is gone
        time.sleep(0.2)
    return 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["announce"]:
        return announce(int(argv[1]), argv[2], http="--http" in argv[3:])
    parser = argparse.ArgumentParser(prog="python -m devtools.ports")
    parser.add_argument("port", type=int)
    parser.add_argument(
        "--exact", action="store_true", help="the port was asked for by name: fail rather than take another"
    )
    parser.add_argument("--name", default="the demo", help="what the port is for, in messages")
    parser.add_argument("--variable", default="MGC_DEMO_PORT")
    args = parser.parse_args(argv)
    try:
        port = pick(args.port, exact=args.exact)
    except PortTaken:
        if args.exact:
            print(
                f"Port {args.port} on {HOST} ({args.name}, {args.variable}) is taken. Free it, "
                f"or pick another, e.g. make demo {args.variable}={args.port + 1}",
                file=sys.stderr,
            )
        else:
            print(
                f"Ports {args.port}-{args.port + TRIES - 1} on {HOST} ({args.name}) are all "
                f"taken. Free one, or pick one with {args.variable}=...",
                file=sys.stderr,
            )
        return 1
    if port != args.port:
        print(f"Port {args.port} on {HOST} is taken; {args.name} uses {port} instead.", file=sys.stderr)
    print(port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
