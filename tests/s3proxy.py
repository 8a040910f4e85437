"""An HTTP proxy in front of the test S3 server that can be told to fail.

The console under test talks to S3 through this proxy, so faults are injected on the wire:
the app's own functions are never patched. A rule matches a method and a key (regex on the
request path) and answers a status, drops the connection, or delays, for its next N matches.
"""

from __future__ import annotations

import http.client
import re
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_HOP_HEADERS = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "proxy-connection",
    "te",
    "upgrade",
    "trailer",
}


@dataclass
class Fault:
    method: str  # "PUT", "GET", "*"
    path_regex: str
    action: str  # "status" | "drop" | "delay" (then forward) | "stall" (then drop)
    #              | "lose" (forward, so the server acts, then drop the answer)
    status: int = 503
    delay: float = 0.0
    times: int = 1
    hits: int = 0
    body_regex: str = ""  # e.g. "Action=CreateUser" for the IAM API (POST /)
    every: int = 1  # act on every n-th matching request only (3: the 3rd, 6th, 9th ...)
    seen: int = 0

    def matches(self, method: str, path: str, body: bytes = b"") -> bool:
        found = (
            self.times > 0
            and self.method in ("*", method)
            and re.search(self.path_regex, path) is not None
            and (not self.body_regex or re.search(self.body_regex, body.decode("latin-1")) is not None)
        )
        if not found or self.every <= 1:
            return found
        self.seen += 1  # (called under the proxy's lock)
        return self.seen % self.every == 0


class FaultProxy:
    def __init__(self, upstream_host: str, upstream_port: int):
        self.upstream = (upstream_host, upstream_port)
        self.faults: list[Fault] = []
        self.requests: list[tuple[str, str]] = []
        self.down = False
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes; with Nagle's algorithm on, the client's
            # delayed ACK held each answer back ~40 ms.
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def _handle(self):
                body = self._read_body()
                with proxy._lock:
                    proxy.requests.append((self.command, self.path))
                    fault = next((f for f in proxy.faults if f.matches(self.command, self.path, body)), None)
                    if fault is not None:
                        fault.times -= 1
                        fault.hits += 1
                    down = proxy.down
                if fault and fault.action == "stall":
                    time.sleep(fault.delay)  # longer than the client waits; then give up
                if down or (fault and fault.action in ("drop", "stall")):
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if fault and fault.action == "status":
                    payload = (
                        f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>"
                        f"{'ServiceUnavailable' if fault.status == 503 else 'InternalError'}"
                        f"</Code><Message>injected fault</Message></Error>"
                    ).encode()
                    self.send_response(fault.status)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if fault and fault.action == "delay":
                    time.sleep(fault.delay)
                if fault and fault.action == "lose":
                    self._forward(body, answer=False)
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                self._forward(body)

            def _read_body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            break
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                    return b"".join(chunks)
                length = int(self.headers.get("Content-Length", "0") or 0)
                return self.rfile.read(length) if length else b""

            def _forward(self, body: bytes, answer: bool = True):
                conn = http.client.HTTPConnection(*proxy.upstream, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_HEADERS}
                if body or self.command in ("PUT", "POST"):
                    headers["Content-Length"] = str(len(body))
                conn.request(self.command, self.path, body=body, headers=headers)
                response = conn.getresponse()
                payload = response.read()
                if not answer:
                    conn.close()
                    return
                self.send_response(response.status, response.reason)
                for key, value in response.getheaders():
                    if key.lower() not in _HOP_HEADERS and key.lower() != "content-length":
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)
                conn.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> FaultProxy:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def inject(
        self,
        method: str,
        path_regex: str,
        action: str = "status",
        *,
        status: int = 503,
        delay: float = 0.0,
        times: int = 1,
        body_regex: str = "",
        every: int = 1,
    ) -> Fault:
        fault = Fault(
            method,
            path_regex,
            action,
            status=status,
            delay=delay,
            times=times,
            body_regex=body_regex,
            every=every,
        )
        with self._lock:
            self.faults.append(fault)
        return fault

    def heal(self) -> None:
        """No more faults; the record of requests stays."""
        with self._lock:
            self.faults.clear()
            self.down = False

    def clear(self) -> None:
        with self._lock:
            self.faults.clear()
            self.requests.clear()
            self.down = False
