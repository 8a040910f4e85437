"""The optional model consolidation asks to summarise notes: any OpenAI-compatible chat
completions endpoint (MGC_LLM_BASE_URL + /chat/completions, bearer MGC_LLM_API_KEY, model
MGC_LLM_MODEL). Its answer only ever becomes a proposal; a person decides.

Asked within MGC_LLM_TIMEOUT all told (the request runs on a worker thread and the caller stops
waiting at the deadline, as memory.classifier asks its guard model). Down, late or an answer
not of the API's shape: the summary is "unavailable" with the reason, and the deterministic
jobs go on without it. Nothing is retried.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

import urllib3
from django.conf import settings

OFF, OK, UNAVAILABLE = "off", "ok", "unavailable"
MAX_ANSWER_CHARS = 20_000
PROMPT = (
    "You consolidate an AI agent's memory notes. Summarise the notes below into a few short "
    "Markdown bullet points that keep every fact still useful (numbers, names, decisions) and "
    "drop repetition. Do not add anything that is not in the notes. Answer with the bullet "
    "points only."
)

_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="consolidation-model")
_http = urllib3.PoolManager(num_pools=4, maxsize=4, retries=False)


@dataclass(frozen=True)
class Summary:
    status: str
    text: str = ""
    reason: str = ""  # why unavailable: "timeout", "HTTP 503", "connection failed", "bad answer"
    model: str = ""
    elapsed_ms: int = 0


def configured() -> bool:
    return bool(settings.MGC_LLM_BASE_URL)


def summarise(notes: list[str]) -> Summary:
    """The model's summary of `notes`, or why there is none."""
    if not configured():
        return Summary(OFF)
    started = time.monotonic()
    timeout = settings.MGC_LLM_TIMEOUT
    future = _pool.submit(_ask, notes, timeout)
    try:
        text = future.result(timeout=timeout)
    except FutureTimeout:
        return Summary(UNAVAILABLE, reason="timeout", model=settings.MGC_LLM_MODEL, elapsed_ms=_ms(started))
    except _Unavailable as exc:
        return Summary(UNAVAILABLE, reason=str(exc), model=settings.MGC_LLM_MODEL, elapsed_ms=_ms(started))
    return Summary(OK, text=text, model=settings.MGC_LLM_MODEL, elapsed_ms=_ms(started))


class _Unavailable(Exception):
    pass


def _ms(started: float) -> int:
    return round((time.monotonic() - started) * 1000)


def _ask(notes: list[str], timeout: float) -> str:
    url = settings.MGC_LLM_BASE_URL.rstrip("/") + "/chat/completions"
    headers = {"Content-Type": "application/json"}
    if settings.MGC_LLM_API_KEY:
        headers["Authorization"] = f"Bearer {settings.MGC_LLM_API_KEY}"
    body = {
        "model": settings.MGC_LLM_MODEL,
        "messages": [
            {"role": "system", "content": PROMPT},
            {"role": "user", "content": "\n".join(notes)},
        ],
        "temperature": 0,
    }
    try:
        answer = _http.request(
            "POST",
            url,
            body=json.dumps(body).encode(),
            headers=headers,
            # The caller's deadline decides; these only free the thread after it.
            timeout=urllib3.Timeout(connect=timeout + 1, read=timeout + 1),
        )
    except urllib3.exceptions.NewConnectionError as exc:  # a subclass of the timeout error
        raise _Unavailable("connection failed") from exc
    except urllib3.exceptions.TimeoutError as exc:
        raise _Unavailable("timeout") from exc
    except urllib3.exceptions.HTTPError as exc:
        raise _Unavailable("connection failed") from exc
    if answer.status != 200:
        raise _Unavailable(f"HTTP {answer.status}")
    try:
        text = json.loads(answer.data)["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise _Unavailable("bad answer") from exc
    if not isinstance(text, str) or not text.strip():
        raise _Unavailable("bad answer")
    return text.strip()[:MAX_ANSWER_CHARS] + "\n"
