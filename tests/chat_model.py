"""A stand-in chat model for the tests: OpenAI's chat completions API on 127.0.0.1, in a
process of its own (python tests/chat_model.py prints its port, then serves).

POST <prefix>/chat/completions answers one choice whose content summarises the user message:
"- summary of N notes" and the first note. The prefix picks the behaviour:
  /v1      that answer
  /slow    the answer after 5 s
  /error   503
GET /requests answers what it was sent: [{path, authorization, model}].
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

received: list[dict] = []
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        with lock:
            body = json.dumps(received).encode()
        self._send(200, body)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        payload = json.loads(self.rfile.read(length) or b"{}")
        with lock:
            received.append(
                {
                    "path": self.path,
                    "authorization": self.headers.get("Authorization"),
                    "model": payload.get("model"),
                }
            )
        if self.path.startswith("/error"):
            self._send(503, b'{"error": "overloaded"}')
            return
        if self.path.startswith("/slow"):
            time.sleep(5)
        notes = [n for n in payload["messages"][-1]["content"].splitlines() if n.strip()]
        content = f"- summary of {len(notes)} notes (stand-in model)\n{notes[0] if notes else ''}"
        answer = {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
        self._send(200, json.dumps(answer).encode())


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)
