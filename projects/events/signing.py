"""Secrets and signatures, as the Standard Webhooks specification has them (`whsec_` secrets,
`v1,<base64 HMAC-SHA256>` over `<webhook-id>.<webhook-timestamp>.<body>`), computed by the
`standardwebhooks` library. During a rotation's overlap window every delivery carries a
signature by each secret, space-separated, so receivers may switch secrets at their pace."""

from __future__ import annotations

import base64
import secrets
from datetime import datetime

from django.utils import timezone
from standardwebhooks import Webhook

from projects.models import WebhookSubscription

SECRET_BYTES = 32


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def signing_secrets(subscription: WebhookSubscription, now: datetime | None = None) -> list[str]:
    """The current secret, and the previous one while its overlap window lasts."""
    now = now or timezone.now()
    found = [subscription.secret]
    if (
        subscription.previous_secret
        and subscription.previous_secret_until
        and subscription.previous_secret_until > now
    ):
        found.append(subscription.previous_secret)
    return found


def headers(
    subscription: WebhookSubscription, event_id: str, body: str, at: datetime | None = None
) -> dict[str, str]:
    """webhook-id, webhook-timestamp and webhook-signature for one attempt."""
    at = at or timezone.now()
    signatures = [Webhook(secret).sign(event_id, at, body) for secret in signing_secrets(subscription, at)]
    return {
        "webhook-id": event_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": " ".join(signatures),
    }
