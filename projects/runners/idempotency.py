"""Idempotency keys for the runner API (the convention of the IETF draft "The Idempotency-Key
HTTP Header Field" and of payment APIs): a runner sends a key with each post, tool or error
call and may repeat the call with the same key after a timeout or a 503.

- first time: the request runs; its answer is stored with the key (in the database, so any
  worker or host recognises the retry);
- same key, same body, answered: the stored answer comes back and nothing is written again;
- same key, same body, still running (or its worker died less than a lease ago): 409 with
  Retry-After; once the lease has passed, the retry takes over and goes on from the first
  write that had not committed;
- same key, another body: 422.
"The same body" is the same request by what it does: an endpoint may name a fingerprint of
its body that leaves out what changes nothing (a post's summary, a label), so a runtime that
ends one session twice with another summary under one key (Claude Code's Stop, then
SessionEnd) gets the first answer, not a 422.
Records are forgotten after MGC_IDEMPOTENCY_TTL_HOURS.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from projects.models import Agent, IdempotencyRecord

KEY_RE = re.compile(r"\A[\x21-\x7e]{1,200}\Z")  # visible ASCII, as header values go
LEASE = dt.timedelta(seconds=90)


class KeyReused(Exception):
    """The key was used before with another request body."""


class InProgress(Exception):
    def __init__(self, retry_after: int):
        super().__init__(retry_after)
        self.retry_after = retry_after


def valid_key(key: str) -> bool:
    return bool(KEY_RE.match(key))


def _digest(endpoint: str, body: bytes) -> str:
    return hashlib.sha256(endpoint.encode() + b"\n" + body).hexdigest()


def begin(
    *, agent: Agent, key: str, endpoint: str, body: bytes, also: tuple[bytes, ...] = ()
) -> tuple[IdempotencyRecord, bool]:
    """(record, replay): replay is True when the record holds the answer to send back.
    `body` is what identifies the request (its bytes, or a fingerprint of what it does);
    `also`: other spellings of the same request a record may hold (the raw bytes, as records
    made before the endpoint had a fingerprint were keyed)."""
    digest = _digest(endpoint, body)
    same = {digest, *(_digest(endpoint, other) for other in also)}
    now = timezone.now()
    ttl = dt.timedelta(hours=settings.MGC_IDEMPOTENCY_TTL_HOURS)
    with transaction.atomic():
        record, created = IdempotencyRecord.objects.select_for_update().get_or_create(
            agent=agent,
            key=key,
            defaults={
                "endpoint": endpoint,
                "request_sha256": digest,
                "lease_until": now + LEASE,
                "expires_at": now + ttl,
            },
        )
        if created:
            return record, False
        if record.expires_at <= now:  # forgotten: a new request under an old key
            record.endpoint, record.request_sha256, record.partial = endpoint, digest, {}
            record.state, record.response, record.status_code = (IdempotencyRecord.State.RUNNING, None, None)
            record.lease_until, record.expires_at = now + LEASE, now + ttl
            record.save()
            return record, False
        if record.request_sha256 not in same:
            raise KeyReused(key)
        if record.state == IdempotencyRecord.State.DONE:
            return record, True
        if record.lease_until > now:
            raise InProgress(max(1, int((record.lease_until - now).total_seconds())))
        record.lease_until = now + LEASE  # its worker gave up or died: take over
        record.save(update_fields=["lease_until"])
        return record, False


def note(record: IdempotencyRecord | None, index: int, result: dict) -> None:
    """Keep one write's result; call inside the write's transaction."""
    if record is None:
        return
    record.partial[str(index)] = result
    record.save(update_fields=["partial"])


def noted(record: IdempotencyRecord | None, index: int) -> dict | None:
    return None if record is None else record.partial.get(str(index))


def finish(record: IdempotencyRecord | None, status: int, response: dict) -> None:
    """Store the answer; call inside the transaction of the request's last write."""
    if record is None:
        return
    record.state, record.status_code, record.response = (IdempotencyRecord.State.DONE, status, response)
    record.save(update_fields=["state", "status_code", "response"])


def release(record: IdempotencyRecord | None) -> None:
    """The request failed before it could answer: let a retry take over at once."""
    if record is not None:
        IdempotencyRecord.objects.filter(pk=record.pk, state=IdempotencyRecord.State.RUNNING).update(
            lease_until=timezone.now()
        )


def forget_expired() -> int:
    return IdempotencyRecord.objects.filter(expires_at__lte=timezone.now()).delete()[0]
