"""A second opinion on memory text from a guard model the company runs (issue 37), beside the
rules of poisoning.py.

The model sits behind Hugging Face's text-classification inference API: POST
{"inputs": [text, ...]} answers one list of {label, score} per input (a single input may be
answered flat). Llama Prompt Guard 2 labels poisoned text MALICIOUS or LABEL_1; other guards
say INJECTION or JAILBREAK; MGC_POISON_CLASSIFIER_LABELS names them. Such models read a few
hundred tokens, so the text goes as overlapping windows in one request and the verdict is the
highest "poisoned" score of any window.

The model is asked within MGC_POISON_CLASSIFIER_TIMEOUT, all told: the request runs on a
worker thread and the caller stops waiting at the deadline, so a write is never slowed past
it whatever the server does (a slow drip, a hung connection). When the model is down, late or
answers nonsense, the verdict is "unavailable" with the reason, and the rules alone decide:
check() says so. Nothing is retried: a second opinion that is late is no opinion.

What the model said is stored beside the rules' findings (PoisonCheck.as_dict): status,
label, score, threshold, how long it took. Never the text.
"""

from __future__ import annotations

import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict, dataclass, field

import urllib3
from django.conf import settings

from projects.memory import poisoning

log = logging.getLogger(__name__)

OFF = "off"  # no guard model configured
FLAGGED = "flagged"
CLEAN = "clean"
UNAVAILABLE = "unavailable"  # down, late, or an answer that is not the API's shape

WINDOW_CHARS = 2000  # about 500 tokens, a guard model's window
WINDOW_OVERLAP = 200  # so an instruction cut by a window's end is whole in the next one
MAX_WINDOWS = 40  # 64 KB of memory, a post hook's largest write, in one request

_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="guard-model")
_http = urllib3.PoolManager(num_pools=4, maxsize=4, retries=False)


@dataclass(frozen=True)
class Verdict:
    status: str
    label: str = ""
    score: float | None = None
    threshold: float | None = None
    reason: str = ""  # why unavailable: "timeout", "HTTP 503", "connection failed", "bad answer"
    elapsed_ms: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class PoisonCheck:
    """The rules' findings and the guard model's verdict, and who decided."""

    findings: list[poisoning.PoisonFinding]
    verdict: Verdict = field(default_factory=lambda: Verdict(OFF))

    @property
    def suspect(self) -> bool:
        return bool(self.findings)

    @property
    def decided_by(self) -> str:
        if self.verdict.status == OFF:
            return "rules"
        if self.verdict.status == UNAVAILABLE:
            return "rules alone (guard model unavailable)"
        return "rules and guard model"

    @property
    def families(self) -> list[str]:
        return poisoning.families(self.findings)

    def as_dict(self) -> dict:
        return {
            "findings": [f.as_dict() for f in self.findings],
            "classifier": self.verdict.as_dict(),
            "decided_by": self.decided_by,
        }


def check(
    text: str, *, kind: str = poisoning.KIND_WORKSPACE, trusted_domains: tuple[str, ...] | list[str] = ()
) -> PoisonCheck:
    """The rules' findings, and the guard model's when one is configured: what the model flags
    and the rules missed becomes a finding of its own (family "classifier", the whole text)."""
    findings = poisoning.scan(text, kind=kind, trusted_domains=trusted_domains)
    verdict = classify(text)
    if verdict.status == FLAGGED and not findings:
        findings = [
            poisoning.PoisonFinding(
                family=poisoning.CLASSIFIER,
                reason=f"{poisoning.CLASSIFIER}.{verdict.label}",
                start=0,
                end=len(text),
                line=1,
                column=1,
                excerpt=poisoning.masked_excerpt(text, 0, min(len(text), 120)),
                signals=(f"score:{verdict.score:.2f}",),
            )
        ]
    return PoisonCheck(findings=findings, verdict=verdict)


def classify(
    text: str,
    *,
    url: str | None = None,
    token: str | None = None,
    threshold: float | None = None,
    timeout: float | None = None,
    labels: list[str] | None = None,
) -> Verdict:
    """The guard model's verdict on `text` (settings unless given)."""
    url = settings.MGC_POISON_CLASSIFIER_URL if url is None else url
    if not url:
        return Verdict(OFF)
    token = settings.MGC_POISON_CLASSIFIER_TOKEN if token is None else token
    threshold = settings.MGC_POISON_CLASSIFIER_THRESHOLD if threshold is None else threshold
    timeout = settings.MGC_POISON_CLASSIFIER_TIMEOUT if timeout is None else timeout
    poisoned = {label.upper() for label in (labels or settings.MGC_POISON_CLASSIFIER_LABELS)}
    started = time.monotonic()

    def elapsed() -> int:
        return int((time.monotonic() - started) * 1000)

    future = _pool.submit(_ask, url, token, windows(text), timeout)
    try:
        status, body = future.result(timeout=timeout)
    except FutureTimeout:
        future.cancel()
        log.warning("guard model at %s gave no answer within %.1f s", url, timeout)
        return Verdict(UNAVAILABLE, threshold=threshold, reason="timeout", elapsed_ms=elapsed())
    except (urllib3.exceptions.HTTPError, OSError) as error:
        log.warning("guard model at %s unreachable: %s", url, error)
        # NewConnectionError is a kind of TimeoutError in urllib3: a refused connection is not late.
        late = isinstance(error, urllib3.exceptions.TimeoutError)
        reason = (
            "timeout"
            if late and not isinstance(error, urllib3.exceptions.NewConnectionError)
            else "connection failed"
        )
        return Verdict(UNAVAILABLE, threshold=threshold, reason=reason, elapsed_ms=elapsed())
    if status != 200:
        return Verdict(UNAVAILABLE, threshold=threshold, reason=f"HTTP {status}", elapsed_ms=elapsed())
    try:
        label, score = _worst(json.loads(body), poisoned)
    except (ValueError, TypeError, KeyError, AttributeError):
        return Verdict(UNAVAILABLE, threshold=threshold, reason="bad answer", elapsed_ms=elapsed())
    verdict = FLAGGED if score >= threshold else CLEAN
    return Verdict(verdict, label=label, score=round(score, 4), threshold=threshold, elapsed_ms=elapsed())


def windows(text: str) -> list[str]:
    """Overlapping pieces of at most WINDOW_CHARS, at most MAX_WINDOWS of them."""
    if len(text) <= WINDOW_CHARS:
        return [text]
    step = WINDOW_CHARS - WINDOW_OVERLAP
    return [text[start : start + WINDOW_CHARS] for start in range(0, len(text), step)][:MAX_WINDOWS]


def _ask(url: str, token: str, inputs: list[str], timeout: float) -> tuple[int, bytes]:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    response = _http.request(
        "POST",
        url,
        body=json.dumps({"inputs": inputs}).encode(),
        headers=headers,
        timeout=urllib3.Timeout(connect=timeout, read=timeout),
        redirect=False,
        preload_content=True,
    )
    return response.status, response.data


def _worst(answer, poisoned: set[str]) -> tuple[str, float]:
    """The highest score of a poisoned label over every window's list of {label, score}; a
    window where no poisoned label is listed counts as 1 - the benign label's score."""
    if isinstance(answer, dict):
        answer = [answer]
    if answer and isinstance(answer[0], dict):  # one input answered flat
        answer = [answer]
    worst_label, worst = "", 0.0
    for window in answer:
        scores = {str(item["label"]).upper(): float(item["score"]) for item in window}
        hits = {label: score for label, score in scores.items() if label in poisoned}
        if not hits and len(scores) == 1:
            ((label, score),) = scores.items()
            hits = {f"NOT_{label}": 1.0 - score}
        for label, score in hits.items():
            if score > worst or not worst_label:
                worst_label, worst = label, score
    if not worst_label:
        raise ValueError("no labels")
    return worst_label, worst
