"""A wrong-password flood against the sign-in page, in a process of its own:

    python -m bench.flood --port 8000 [--connections 32] [--addresses 1] [--rate 0]

Each connection posts wrong passwords for random account names with the login page's CSRF
cookie and token, as fast as it is answered, on a kept-alive connection (as a scripted attack
does). With --addresses N the connections come from N loopback addresses (127.1.0.1 ...), so
that the console sees N clients; with --rate R it sends at most R attempts a second. Every
half second it prints one JSON line: the answers so far by status ("none": the connection
failed). It stops at SIGTERM or when its standard input closes.

It runs apart from the bench's own clients so that it does not share their interpreter: in one
process, 32 flooding threads took the GIL from the 8 threads timing pre hooks, and the figure
measured the load generator more than the console. It is one thread over non-blocking sockets
with each request's bytes made by a format string, so the flood costs the machine little of its
own CPU beside what it costs the console.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import re
import selectors
import signal
import socket
import sys
import threading
import time
from collections import deque


def _csrf(port: int) -> tuple[str, str]:
    """The login page's CSRF cookie and a form token that goes with it."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/accounts/login/")
    page = conn.getresponse()
    html = page.read().decode()
    cookie = page.getheader("Set-Cookie", "").split(";", 1)[0]
    conn.close()
    return cookie, re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)


class _Connection:
    def __init__(self, port: int, source: str | None):
        self.port, self.source = port, source
        self.sock: socket.socket | None = None
        self.buffer = b""

    def open(self) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if self.source:
            sock.bind((self.source, 0))
        sock.connect(("127.0.0.1", self.port))
        sock.setblocking(False)
        self.sock, self.buffer = sock, b""
        return sock

    def answer(self) -> tuple[str, bool] | None:
        """(status, keep the connection) once a whole answer is buffered, else None; a 429's
        status names the refusal ("429 Sign-in paused", "429 Too many sign-ins at once")."""
        head_end = self.buffer.find(b"\r\n\r\n")
        if head_end < 0:
            return None
        head = self.buffer[:head_end].decode("latin-1")
        length = re.search(r"(?im)^content-length:\s*(\d+)", head)
        if re.search(r"(?im)^transfer-encoding:\s*chunked", head):
            end = self.buffer.find(b"\r\n0\r\n\r\n", head_end)  # the last chunk (no trailers)
            if end < 0:
                return None
            total = end + 7
        else:
            total = head_end + 4 + (int(length.group(1)) if length else 0)
        if len(self.buffer) < total:
            return None
        body, self.buffer = self.buffer[head_end + 4 : total], self.buffer[total:]
        status = head.split(" ", 2)[1]
        if status == "429":  # which refusal: the page's title (English, the flood sends no language)
            title = re.search(rb"<h1>(.*?)</h1>", body)
            status = f"429 {title.group(1).decode() if title else ''}".strip()
        return status, not re.search(r"(?im)^connection:\s*close", head)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--addresses", type=int, default=1)
    parser.add_argument(
        "--rate", type=float, default=0, help="attempts a second at most (0: as fast as answered)"
    )
    args = parser.parse_args()

    cookie, token = _csrf(args.port)
    template = (
        "POST /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\nCookie: {cookie}\r\n"
        "Referer: http://127.0.0.1:{port}/accounts/login/\r\nContent-Length: {length}\r\n\r\n{body}"
    )

    def request() -> bytes:
        body = (
            f"csrfmiddlewaretoken={token}&username=intruder{random.randrange(10**6)}"
            f"&password=wrong{random.randrange(10**6)}"
        )
        return template.format(port=args.port, cookie=cookie, length=len(body), body=body).encode()

    sources = (
        [None] if args.addresses <= 1 else [f"127.1.{n // 250}.{n % 250 + 1}" for n in range(args.addresses)]
    )
    selector = selectors.DefaultSelector()
    answers: dict[str, int] = {}
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()

    ready: deque[_Connection] = deque()  # answered, waiting for the rate to allow the next
    bucket = {"tokens": 1.0, "at": time.monotonic()}

    def may_send() -> bool:
        if args.rate <= 0:
            return True
        now = time.monotonic()
        capacity = max(1.0, args.rate * 0.05)
        bucket["tokens"] = min(capacity, bucket["tokens"] + (now - bucket["at"]) * args.rate)
        bucket["at"] = now
        if bucket["tokens"] < 1:
            return False
        bucket["tokens"] -= 1
        return True

    def start(conn: _Connection) -> None:
        sock = conn.open()
        selector.register(sock, selectors.EVENT_READ, conn)
        ready.append(conn)

    dead: list[_Connection] = []

    def restart(conn: _Connection) -> None:
        selector.unregister(conn.sock)
        conn.sock.close()
        dead.append(conn)

    dead += [_Connection(args.port, sources[n % len(sources)]) for n in range(args.connections)]
    next_report = time.monotonic() + 0.5
    while not stop.is_set():
        for conn in list(dead):
            try:
                start(conn)
                dead.remove(conn)
            except OSError:
                answers["none"] = answers.get("none", 0) + 1
        while ready and may_send():
            conn = ready.popleft()
            try:
                conn.sock.sendall(request())
            except OSError:
                restart(conn)
        for key, _ in selector.select(0.002 if ready else 0.1):
            conn: _Connection = key.data
            try:
                data = conn.sock.recv(65536)
            except OSError:
                data = b""
            if not data:
                answers["none"] = answers.get("none", 0) + 1
                restart(conn)
                continue
            conn.buffer += data
            done = conn.answer()
            if done is None:
                continue
            status, keep = done
            answers[status] = answers.get(status, 0) + 1
            if keep:
                ready.append(conn)
            else:
                restart(conn)
        if time.monotonic() >= next_report:
            print(json.dumps(answers), flush=True)
            next_report += 0.5
    print(json.dumps(answers), flush=True)


if __name__ == "__main__":
    main()
