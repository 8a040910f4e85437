"""Who wrote an object that reached the bucket without the console: a runner's proof.

A runner writing straight to S3 (runnerkit's direct sandbox) labels the object with metadata:
`mgc-agent` (agent id), `mgc-session` (session id) and `mgc-proof`, an HMAC-SHA256 keyed with
the sha256 of its bearer token over the key, the body's sha256 and the session id. Anyone who
can write the key can write metadata, so the claim counts only when the proof checks against
one of that agent's live tokens, whose sha256 is what the console stores. Without a valid
proof the change is recorded as external and unattributed: authorship is never guessed.

runnerkit/direct.py computes the same proof on the runner's side.
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from dataclasses import dataclass

from django.db.models import Q
from django.utils import timezone

from projects.models import Agent, AgentSession, AgentToken

META_AGENT, META_SESSION, META_PROOF = "mgc-agent", "mgc-session", "mgc-proof"


def proof(token_sha256: str, key: str, body_sha256: str, session: str) -> str:
    message = f"{key}\n{body_sha256}\n{session}".encode()
    return hmac.new(token_sha256.encode(), message, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Claim:
    agent: Agent
    session: str


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def verified_writer(
    *,
    project_id,
    key: str,
    metadata: dict[str, str],
    data: bytes | None = None,
    body_sha256: str | None = None,
) -> Claim | None:
    """The agent (and session) that provably wrote `data` (or the body with `body_sha256`) at
    `key`, or None."""
    agent_id, session, given = (
        metadata.get(META_AGENT, ""),
        metadata.get(META_SESSION, ""),
        metadata.get(META_PROOF, ""),
    )
    if not (agent_id and given):
        return None
    try:
        uuid.UUID(agent_id)
        if session:
            uuid.UUID(session)
    except ValueError:
        return None
    agent = Agent.objects.filter(pk=agent_id, project_id=project_id).first()
    if agent is None:
        return None
    if session and not AgentSession.objects.filter(pk=session, agent=agent).exists():
        return None
    body_sha = body_sha256 if body_sha256 is not None else sha256_hex(data or b"")
    now = timezone.now()
    live = (
        AgentToken.objects.filter(agent=agent, revoked_at__isnull=True)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .values_list("token_hash", flat=True)
    )
    for token_sha in live:
        if hmac.compare_digest(proof(token_sha, key, body_sha, session), given):
            return Claim(agent=agent, session=session)
    return None
