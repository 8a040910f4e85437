"""Bearer tokens of agent runners: shown once, stored as sha256, revocable, optional expiry.
Revoking a token deletes its S3 credentials too (runners.credentials)."""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets

from django.db import transaction
from django.utils import timezone

from projects.audit import Actor, audit_record
from projects.models import Agent, AgentToken
from projects.prepared import Prepared
from projects.runners import credentials

TOKEN_PREFIX = "mgc_"
# What the console keeps and shows of a token to recognise it: "mgc_" and 4 characters (24
# bits), enough to tell a project's tokens apart, too little to narrow a guess.
SHOWN_CHARS = len(TOKEN_PREFIX) + 4


def token_hash(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def token_create(
    *, agent: Agent, name: str, created_by, expires_at: dt.datetime | None = None
) -> tuple[AgentToken, str]:
    """A new bearer token; the raw value is returned once and never stored."""
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        token = AgentToken.objects.create(
            agent=agent,
            name=name[:100],
            prefix=raw[:SHOWN_CHARS],
            token_hash=token_hash(raw),
            created_by=created_by,
            expires_at=expires_at,
        )
        audit_record(
            actor=Actor.person(created_by),
            action="token.create",
            project=agent.project,
            obj=token,
            details={"agent": agent.slug, "name": token.name},
        )
    return token, raw


def token_revoke(*, token: AgentToken, by, actor: Actor | None = None, reason: str = "") -> None:
    """Refuse the token at once, then delete its S3 credentials. If the object store does not
    answer, the token stays revoked and CredentialsUnavailable says the credentials are still
    live (revoking again finishes the job). `actor` when no person revokes it (provisioning:
    the person who made it left); `reason` goes into the audit event."""
    actor = actor or Actor.person(by)
    with transaction.atomic():
        if token.revoked_at is None:
            token.revoked_at = timezone.now()
            token.save(update_fields=["revoked_at"])
            audit_record(
                actor=actor,
                action="token.revoke",
                project=token.agent.project,
                obj=token,
                details={"agent": token.agent.slug, **({"reason": reason} if reason else {})},
            )
    credentials.credentials_revoke(token=token, by=by, actor=actor)


# The token with its agent and project, in one query compiled once (projects.prepared):
# compiling it cost more CPU than running it, on every runner API request. The hash is
# unique: no order needed.
_by_hash = Prepared(
    lambda token_hash: (
        AgentToken.objects.select_related("agent", "agent__project").filter(token_hash=token_hash).order_by()
    ),
    "token_hash",
)


def token_authenticate(raw: str) -> AgentToken | None:
    if not raw or not raw.startswith(TOKEN_PREFIX) or len(raw) > 200:
        return None
    token = _by_hash.first(token_hash=token_hash(raw))
    now = timezone.now()
    if (
        token is None
        or token.revoked_at is not None
        or (token.expires_at is not None and token.expires_at <= now)
    ):
        return None
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
        AgentToken.objects.filter(pk=token.pk).update(last_used_at=now)  # at most once a minute
    return token
