"""The console's steps in social-auth's sign-in pipeline (SOCIAL_AUTH_PIPELINE): they run
after the library has checked the state, exchanged the code with PKCE and validated the ID
token, and before anyone is signed in. A step that raises refuses the sign-in; errors.py
turns that into a page."""

from __future__ import annotations

import time

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _
from social_core.exceptions import AuthAssociationError, AuthPolicyError, AuthResponseError
from social_django.models import UserSocialAuth

from projects.audit import Actor, audit_record
from projects.governance import groups as group_service
from projects.governance import identities
from projects.models import Lock
from projects.scim import provisioning

CONTEXT = "_oidc_id_token_context"  # where social-auth keeps the first ID token's iss/sub/aud


def account(backend, uid, details, social=None, *args, **kwargs):
    """The account for this identity: found by the provider's subject, or made now from
    the username claim. A name taken in the console (or reading like one) refuses the
    sign-in: an identity never takes over an account it is not linked to."""
    claims = backend.id_token or {}
    if social is not None:
        known = (social.extra_data or {}).get(CONTEXT, {}).get("iss")
        if known and known != claims.get("iss"):
            raise AuthAssociationError(
                backend,
                code="identity_in_use",
                stage="pipeline",
                context={
                    "message": _(
                        "This identity's account was linked through another identity "
                        "provider (%(issuer)s). Nobody was signed in."
                    )
                    % {"issuer": known}
                },
            )
        if not social.user.is_active:
            raise AuthPolicyError(
                backend,
                code="authentication_disallowed",
                stage="pipeline",
                context={"username": social.user.get_username()},
            )
        return {"user": social.user, "is_new": False}
    claim = settings.MGC_OIDC_USERNAME_CLAIM
    try:
        username = identities.username_from_claim(details.get("username"), claim=claim)
    except ValidationError as exc:
        raise AuthResponseError(
            backend, code="missing_claim", claim=claim, stage="pipeline", context={"message": exc.messages[0]}
        ) from None
    with transaction.atomic():
        Lock.hold(Lock.ACCOUNTS)
        # A first sign-in of the same person in another tab may have linked it meanwhile.
        linked = UserSocialAuth.objects.filter(provider=backend.name, uid=str(uid)).first()
        if linked is not None:
            return {"user": linked.user, "social": linked, "is_new": False}
        # An account the directory provisioned for this name (SCIM) is this person's: their
        # first sign-in links it, as long as nothing is linked to it yet.
        provisioned = provisioning.account_for_sign_in(username)
        if provisioned is not None:
            if not provisioned.is_active:
                raise AuthPolicyError(
                    backend,
                    code="authentication_disallowed",
                    stage="pipeline",
                    context={"username": username},
                )
            social = backend.strategy.storage.user.create_social_auth(provisioned, str(uid), backend.name)
            audit_record(
                actor=Actor.system("sign-in"),
                action="account.link",
                obj=provisioned,
                details={
                    "user": username,
                    "via": "provisioned",
                    "issuer": claims.get("iss", ""),
                    "subject": str(uid),
                },
            )
            return {"user": provisioned, "social": social, "is_new": False, "new_association": True}
        try:
            user = identities.account_create_for_identity(
                username=username,
                issuer=claims.get("iss", ""),
                subject=str(uid),
                email=details.get("email") or "",
                first_name=details.get("first_name") or "",
                last_name=details.get("last_name") or "",
            )
        except ValidationError as exc:
            raise AuthAssociationError(
                backend,
                code="username_in_use",
                stage="pipeline",
                context={"username": username, "reason": exc.code},
            ) from None
        social = backend.strategy.storage.user.create_social_auth(user, str(uid), backend.name)
    return {"user": user, "social": social, "is_new": True, "new_association": True}


def memberships(backend, user, groups=None, *args, **kwargs):
    """Memberships granted by group mappings follow the groups the provider names now
    (`groups`: social_details read them from the MGC_OIDC_GROUPS_CLAIM claim)."""
    group_service.memberships_follow_groups(user=user, groups=groups or [])


def keep_tokens(backend, response, *args, **kwargs):
    """Hand this sign-in's tokens to the session that login() is about to make (session.py
    stores them when the user_logged_in signal fires, after Django renews the session)."""
    claims = backend.id_token or {}
    backend.strategy.request.mgc_provider_session = {
        "refresh_token": response.get("refresh_token") or "",
        "id_token": response.get("id_token") or "",
        # What a refreshed ID token must repeat (OpenID Connect Core 12.2).
        "context": {
            name: claims[name] for name in ("iss", "sub", "aud", "auth_time", "nonce") if name in claims
        },
        "expires_at": claims.get("exp"),
        "checked_at": time.time(),
    }
