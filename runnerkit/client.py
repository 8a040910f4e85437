"""HTTP client of the runner API (JSON, bearer token)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message


class Client:
    def __init__(self, base_url: str, token: str, timeout: float = 30.0):
        if not base_url.startswith(("http://", "https://")):
            raise ValueError("The console URL must start with http:// or https://")
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def _call(self, path: str, body: dict) -> dict:
        request = urllib.request.Request(  # noqa: S310 - scheme checked in __init__
            f"{self.base_url}/api/v1/{path}", data=json.dumps(body).encode("utf-8"),
            method="POST", headers={"Authorization": f"Bearer {self.token}",
                                    "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 - checked
                return json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            try:
                error = json.loads(exc.read().decode("utf-8"))["error"]
            except (ValueError, KeyError):
                error = {"code": "http_error", "message": exc.reason}
            raise ApiError(exc.code, error.get("code", ""), error.get("message", "")) from None

    def pre(self, user: str | None = None, session: str | None = None) -> dict:
        body = {k: v for k, v in {"user": user, "session": session}.items() if v}
        return self._call("hooks/pre", body)

    def post(self, session: str, writes: list[dict], summary: str | None = None) -> dict:
        body = {"session": session, "writes": writes}
        if summary:
            body["summary"] = summary
        return self._call("hooks/post", body)

    def tool(self, session: str, name: str, summary: str = "", details: dict | None = None
             ) -> dict:
        body = {"session": session, "name": name, "summary": summary}
        if details:
            body["details"] = details
        return self._call("hooks/tool", body)

    def error(self, session: str, message: str, details: dict | None = None) -> dict:
        body = {"session": session, "message": message}
        if details:
            body["details"] = details
        return self._call("hooks/error", body)

    def sandbox_files(self, session: str) -> dict:
        return self._call("sandbox/files", {"session": session})
