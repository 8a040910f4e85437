"""The shape of every refusal: a stable `code` for programs and a `message` for people.

The store's errors (memory.errors), the hooks' refusals (runners.policy.HookError) and the
credentials' (runners.credentials) derive from Refusal. Django's ValidationError stays the
refusal of forms and model checks. The runner API maps refusals to HTTP in one place
(runners.api), the console pages turn either kind into one message here (`explain`). Every
error the runner API answers has one body (`error_body`), whether its handlers or the
middleware (Django's own 404, 405 and 500 under the API root) write it.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError


class Refusal(Exception):
    code = "refused"

    def __init__(self, message: str, code: str | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


def explain(exc: Refusal | ValidationError) -> str:
    """What a person reads about a refusal of either kind."""
    if isinstance(exc, Refusal):
        return exc.message
    return " ".join(exc.messages)


def error_body(code: str, message: str, **extra) -> dict:
    """The runner API's error, as JSON: {"error": {"code", "message", ...}}."""
    return {"error": {"code": code, "message": message, **extra}}
