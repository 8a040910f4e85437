"""The identity provider's bearer tokens for /scim/v2/: shown once, stored as sha256, made and
revoked by a superuser (audited: scim_token.create, scim_token.revoke)."""

from __future__ import annotations

import hashlib
import secrets

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from projects.audit import Actor, audit_record
from projects.models import ScimToken

TOKEN_PREFIX = "mgcscim_"
SHOWN_CHARS = len(TOKEN_PREFIX) + 4


def _hash(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _superuser(by) -> None:
    if by is None or not by.is_active or not by.is_superuser:
        raise PermissionDenied("Only a superuser makes or revokes provisioning tokens.")


def token_create(*, by, name: str) -> tuple[ScimToken, str]:
    """A new token for a provider; the raw value is returned once and never stored."""
    _superuser(by)
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        token = ScimToken.objects.create(
            name=(name or "identity provider")[:100],
            prefix=raw[:SHOWN_CHARS],
            token_hash=_hash(raw),
            created_by=by,
        )
        audit_record(
            actor=Actor.person(by), action="scim_token.create", obj=token, details={"name": token.name}
        )
    return token, raw


def token_revoke(*, by, token: ScimToken) -> None:
    """Refused from now on; safe to repeat."""
    _superuser(by)
    with transaction.atomic():
        locked = ScimToken.objects.select_for_update().get(pk=token.pk)
        if locked.revoked_at is None:
            locked.revoked_at = timezone.now()
            locked.save(update_fields=["revoked_at"])
            audit_record(
                actor=Actor.person(by), action="scim_token.revoke", obj=locked, details={"name": locked.name}
            )


def token_authenticate(raw: str) -> ScimToken | None:
    if not raw or not raw.startswith(TOKEN_PREFIX) or len(raw) > 200:
        return None
    token = ScimToken.objects.filter(token_hash=_hash(raw), revoked_at__isnull=True).first()
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
        ScimToken.objects.filter(pk=token.pk).update(last_used_at=now)  # at most once a minute
    return token
