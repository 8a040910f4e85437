"""Log lines as a platform reads them: one JSON object a line (MGC_LOG_FORMAT=json), or text
for a terminal, each carrying the request it belongs to.

The standard library's logging does the work (every module here, Django, social-auth and
gunicorn already log through it); this module adds three things to every record, whoever
wrote it:

- the request's context: its id (`X-Request-ID`: a trusted proxy's, else made here), the
  signed-in person, the project, the agent and the runner session, where known. Kept in a
  context variable for the request's thread; a person or an agent is read only once the
  request has loaded them (it never costs a query of its own);
- a scrub of what must never be written down: runner tokens (`mgc_...`), webhook secrets
  (`whsec_...`), SCIM tokens, bearer credentials, set-password links, and the configured
  secrets (the secret key, S3, OIDC and metrics secrets) by their value. Memory texts and
  prompts are kept out by not logging them at all (tests/test_logs.py writes a marker through
  every path and looks for it);
- the JSON shape: `ts`, `level`, `logger`, `message`, the context's fields, `exc` for a
  traceback, and what a line adds under `extra={"fields": {...}}`.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import json
import logging
import re

_context: contextvars.ContextVar[dict | None] = contextvars.ContextVar("mgc_log_context", default=None)

FIELDS = ("request_id", "user", "project", "agent", "session")


def begin(request_id: str, request=None) -> contextvars.Token:
    """A request starts: its lines carry `request_id` (and what `request` loads: its person,
    its runner token's agent). Returns the token `end` takes."""
    return _context.set({"request_id": request_id, "_request": request})


def end(token: contextvars.Token) -> None:
    _context.reset(token)


def bind(**fields) -> None:
    """Name what the request is about (project, agent, session...) for its later lines."""
    current = _context.get()
    if current is not None:
        current.update({k: str(v) for k, v in fields.items() if v is not None})


def current() -> dict:
    """The context's fields now (request id, person, project, agent, session), for a line."""
    found = _context.get()
    if not found:
        return {}
    out = {k: v for k, v in found.items() if not k.startswith("_")}
    request = found.get("_request")
    if request is not None:
        user = getattr(request, "_cached_user", None)  # loaded by the request, never here
        if user is not None and getattr(user, "is_authenticated", False):
            out.setdefault("user", user.get_username())
        token = getattr(request, "auth", None)  # the runner API's authenticated token
        agent = getattr(token, "agent", None)
        if agent is not None:
            out.setdefault("agent", agent.slug)
            out.setdefault("project", agent.project.slug)
    return out


class ContextFilter(logging.Filter):
    """Puts the request's context on every record (as attributes the formatters read)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.mgc_context = current()
        return True


# --- What never reaches a log ---------------------------------------------------------------------

_PATTERNS = [
    (re.compile(r"\bmgc_[A-Za-z0-9_\-]{6,}"), "mgc_[redacted]"),
    (re.compile(r"\bmgcscim_[A-Za-z0-9_\-]{6,}"), "mgcscim_[redacted]"),
    (re.compile(r"\bwhsec_[A-Za-z0-9+/=_\-]{6,}"), "whsec_[redacted]"),
    (re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=\-]{8,}"), r"\1\2[redacted]"),
    (re.compile(r"(/accounts/set-password/)[^/\s]+/[^/\s]+/"), r"\1[redacted]/"),
    (re.compile(r"(?i)((?:password|secret|passwd)[\"']?\s*[:=]\s*[\"']?)[^\s\"',&]+"), r"\1[redacted]"),
]
_secrets: list[str] = []


def known_secrets(values) -> None:
    """The configured secrets, scrubbed by their value wherever they appear (settings.py)."""
    _secrets[:] = sorted({v for v in values if v and len(v) >= 8}, key=len, reverse=True)


def scrub(text: str) -> str:
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, "[redacted]")
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


# --- Formatters -------------------------------------------------------------------------------------


class JsonFormatter(logging.Formatter):
    """One JSON object a line."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "ts": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": scrub(record.getMessage()),
        }
        line.update(getattr(record, "mgc_context", None) or {})
        extra = getattr(record, "fields", None)
        if isinstance(extra, dict):
            line.update({k: v for k, v in extra.items() if k not in line})
        if record.exc_info:
            line["exc"] = scrub(self.formatException(record.exc_info))
        elif record.stack_info:
            line["stack"] = scrub(self.formatStack(record.stack_info))
        return json.dumps(line, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """For a terminal: time, level, logger, the message, then the context as key=value."""

    def __init__(self):
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        context = getattr(record, "mgc_context", None) or {}
        extra = getattr(record, "fields", None)
        pairs = {**context, **(extra if isinstance(extra, dict) else {})}
        if pairs:
            head, sep, rest = text.partition("\n")
            text = head + " [" + " ".join(f"{k}={v}" for k, v in pairs.items()) + "]" + sep + rest
        return scrub(text)
