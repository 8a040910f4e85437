"""A webhook receiver on 127.0.0.1 for the tests: a real HTTP server in a thread of the test
process that records each request, answers from a script of statuses (then 200), can hold
requests until released, and checks signatures with the `standardwebhooks` library."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks import Webhook


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float = field(default_factory=time.monotonic)

    @property
    def id(self) -> str:
        return self.headers.get("webhook-id", "")


class Receiver:
    def __init__(self):
        self.requests: list[Request] = []
        self.statuses: list[int] = []  # answered in order; 200 once used up
        self.location = ""  # for 3xx answers
        self.delay = 0.0
        self.hold = threading.Event()  # while cleared and `holding`, requests wait for it
        self.holding = False
        self.arrived = threading.Condition()
        self.in_flight: dict[str, int] = {}
        self.overlaps: list[str] = []  # ids delivered twice at the same time
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                request = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with receiver._lock:
                    now = receiver.in_flight.get(request.id, 0) + 1
                    receiver.in_flight[request.id] = now
                    if now > 1:
                        receiver.overlaps.append(request.id)
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                with receiver.arrived:
                    receiver.requests.append(request)
                    receiver.arrived.notify_all()
                try:
                    if receiver.holding:
                        receiver.hold.wait(30)
                    if receiver.delay:
                        time.sleep(receiver.delay)
                    answer = b'{"ok": true}' if status < 300 else b"receiver says no"
                    self.send_response(status)
                    if 300 <= status < 400:
                        self.send_header("Location", receiver.location)
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    self.wfile.write(answer)
                except OSError:
                    pass  # the sender is gone (a killed worker)
                finally:
                    with receiver._lock:
                        receiver.in_flight[request.id] -= 1

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Request]:
        """Block until `count` requests arrived (or fail)."""
        deadline = time.monotonic() + timeout
        with self.arrived:
            while len(self.requests) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{len(self.requests)} of {count} requests arrived")
                self.arrived.wait(left)
        return list(self.requests)

    def verified(self, secret: str, request: Request | None = None):
        """The body of a request as the standardwebhooks library verifies it."""
        request = request or self.requests[-1]
        return Webhook(secret).verify(request.body, request.headers)

    def close(self) -> None:
        self.hold.set()
        self.server.shutdown()
        self.server.server_close()
