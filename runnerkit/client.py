"""HTTP client of the runner API (JSON, bearer token), safe to retry.

Every pre, post, tool and error call carries an Idempotency-Key of its own; a call that times out,
loses its connection or gets a 503 (S3 trouble) is sent again with the same key and body, so
the console applies it at most once and answers every attempt with the first answer.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid

from runnerkit.version import __version__

RETRY_STATUSES = {502, 503, 504}
# Calls that write nothing: repeating them is harmless (the pre hook, which opens a session,
# carries an Idempotency-Key instead).
SAFE_TO_REPEAT = {"sandbox/files", "files/list", "files/read"}


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, outcome: str = ""):
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message, self.outcome = status, code, message, outcome


class Client:
    def __init__(
        self, base_url: str, token: str, timeout: float = 30.0, attempts: int = 4, backoff: float = 0.5
    ):
        if not base_url.startswith(("http://", "https://")):
            raise ValueError("The console URL must start with http:// or https://")
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.attempts = max(1, attempts)
        self.backoff = backoff

    def _call(self, path: str, body: dict, *, idempotent: bool = False, key: str | None = None) -> dict:
        data = json.dumps(body).encode("utf-8")
        headers = {
            "Authorization": f"Bearer {self.token}",
            "Content-Type": "application/json",
            "User-Agent": f"runnerkit/{__version__}",
        }
        if idempotent:
            # The same for every retry below. A caller that may send the same event again
            # (a replayed hook) passes a key derived from the event instead.
            headers["Idempotency-Key"] = key or uuid.uuid4().hex
        retryable = idempotent or path in SAFE_TO_REPEAT
        delay = self.backoff
        for attempt in range(1, self.attempts + 1):
            request = urllib.request.Request(  # noqa: S310 - scheme checked in __init__
                f"{self.base_url}/api/v1/{path}", data=data, method="POST", headers=headers
            )
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                    return json.loads(response.read().decode("utf-8"))
            except urllib.error.HTTPError as exc:
                error = _error_of(exc)
                retry_after = _retry_after(exc, error)
                if attempt < self.attempts and retryable and retry_after is not None:
                    time.sleep(max(delay, retry_after))
                    delay *= 2
                    continue
                raise ApiError(
                    exc.code, error.get("code", ""), error.get("message", ""), error.get("outcome", "")
                ) from None
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                if attempt < self.attempts and retryable:
                    time.sleep(delay)
                    delay *= 2
                    continue
                raise ApiError(
                    0, "unreachable", f"The console did not answer: {exc}", "unknown" if idempotent else ""
                ) from None
        raise AssertionError("unreachable")

    def pre(self, user: str | None = None, session: str | None = None, key: str | None = None) -> dict:
        body = {k: v for k, v in {"user": user, "session": session}.items() if v}
        # A key of its own: a retry after a lost answer gets the same session, not a second.
        return self._call("hooks/pre", body, idempotent=True, key=key)

    def post(
        self,
        session: str,
        writes: list[dict],
        summary: str | None = None,
        key: str | None = None,
        end: bool = True,
    ) -> dict:
        """Writes back (append, replace, delete, rename). `end=False` keeps the session open
        for more posts (a runtime that writes as it goes); the default ends it."""
        body = {"session": session, "writes": writes}
        if summary:
            body["summary"] = summary[:2000]
        if not end:
            body["end"] = False
        return self._call("hooks/post", body, idempotent=True, key=key)

    def tool(
        self, session: str, name: str, summary: str = "", details: dict | None = None, key: str | None = None
    ) -> dict:
        body = {"session": session, "name": name[:100], "summary": summary[:2000]}
        if details:
            body["details"] = details
        return self._call("hooks/tool", body, idempotent=True, key=key)

    def error(self, session: str, message: str, details: dict | None = None, key: str | None = None) -> dict:
        body = {"session": session, "message": (message or "error")[:2000]}
        if details:
            body["details"] = details
        return self._call("hooks/error", body, idempotent=True, key=key)

    def sandbox_files(self, session: str) -> dict:
        return self._call("sandbox/files", {"session": session})

    def files_list(self, session: str) -> dict:
        """Every memory file the session's agent may read: path, revision, size, policy."""
        return self._call("files/list", {"session": session})

    def files_read(self, session: str, path: str) -> dict:
        """One file as it stands now: exists, revision, content, policy."""
        return self._call("files/read", {"session": session, "path": path})


def _error_of(exc: urllib.error.HTTPError) -> dict:
    try:
        return json.loads(exc.read().decode("utf-8"))["error"]
    except (ValueError, KeyError):
        return {"code": "http_error", "message": str(exc.reason)}


def _retry_after(exc: urllib.error.HTTPError, error: dict) -> float | None:
    """Seconds to wait before retrying, or None when retrying would not help."""
    if exc.code in RETRY_STATUSES or error.get("code") == "idempotency_in_progress":
        try:
            return float(exc.headers.get("Retry-After") or 0)
        except ValueError:
            return 0.0
    return None
