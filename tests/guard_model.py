"""A stand-in guard model for the tests: Hugging Face's text-classification API on 127.0.0.1,
in a process of its own (python tests/guard_model.py prints its port, then serves).

POST {"inputs": [text, ...]} (or one string) answers one list of {label, score} per input, as
Llama Prompt Guard 2 behind an inference server does. It flags a text that holds "zebra
protocol" or "quietly reroute" (phrases the scanner's rules do not know), scoring 0.97.
The path picks the behaviour:
  /classify   that answer
  /flat       a single input answered flat ([{label, score}, ...])
  /slow       the answer after 5 s
  /drip       the answer a byte every 0.5 s (each read well within a socket timeout)
  /error      503
  /garbage    200 with a body that is not JSON
GET /requests answers what it was sent: [{path, authorization, inputs}], for the tests.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FLAG_WORDS = ("zebra protocol", "quietly reroute")
received: list[dict] = []
lock = threading.Lock()


def verdict(text: str) -> list[dict]:
    bad = any(word in text.lower() for word in FLAG_WORDS)
    malicious = 0.97 if bad else 0.02
    return [{"label": "MALICIOUS", "score": malicious}, {"label": "BENIGN", "score": round(1 - malicious, 2)}]


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def _send(self, status: int, body: bytes, drip: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not drip:
            self.wfile.write(body)
            return
        for byte in body:
            self.wfile.write(bytes([byte]))
            self.wfile.flush()
            time.sleep(0.5)

    def do_GET(self):
        with lock:
            body = json.dumps(received).encode()
        self._send(200, body)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        payload = json.loads(self.rfile.read(length) or b"{}")
        inputs = payload.get("inputs")
        inputs = [inputs] if isinstance(inputs, str) else list(inputs or [])
        with lock:
            received.append(
                {"path": self.path, "authorization": self.headers.get("Authorization", ""), "inputs": inputs}
            )
        if self.path == "/error":
            return self._send(503, b'{"error": "model loading"}')
        if self.path == "/garbage":
            return self._send(200, b"<html>not json</html>")
        if self.path == "/slow":
            time.sleep(5)
        answer = [verdict(text) for text in inputs]
        if self.path == "/flat":
            answer = answer[0]
        self._send(200, json.dumps(answer).encode(), drip=self.path == "/drip")


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    sys.stdout.close()
    server.serve_forever()


if __name__ == "__main__":
    main()
