"""The console's steps in social-auth's sign-in pipeline (SOCIAL_AUTH_PIPELINE): they run
after the library has checked the state, exchanged the code with PKCE and validated the ID
token, and before anyone is signed in. A step that raises refuses the sign-in; errors.py
turns that into a page."""

from __future__ import annotations

import time

from django.conf import settings
from django.utils.translation import gettext as _
from social_core.exceptions import AuthAssociationError, AuthPolicyError, AuthResponseError

from projects.governance import groups as group_service
from projects.sso import identity

CONTEXT = identity.CONTEXT


def account(backend, uid, details, social=None, *args, **kwargs):
    """The account for this identity: found by the provider's subject, or made now from
    the username claim (identity.py: the same rule as the MCP endpoint's). A name taken in
    the console (or reading like one) refuses the sign-in: an identity never takes over an
    account it is not linked to."""
    claims = backend.id_token or {}
    issuer = claims.get("iss", "")
    try:
        if social is not None:
            return {"user": identity.account_checked(social, issuer=issuer), "is_new": False}
        user, social, is_new = identity.account_for_identity(
            issuer=issuer,
            subject=str(uid),
            username_value=details.get("username"),
            claim=settings.MGC_OIDC_USERNAME_CLAIM,
            email=details.get("email") or "",
            first_name=details.get("first_name") or "",
            last_name=details.get("last_name") or "",
        )
    except identity.IdentityRefused as refused:
        raise _refusal(backend, refused) from None
    if not is_new:
        return {"user": user, "social": social, "is_new": False}
    return {"user": user, "social": social, "is_new": True, "new_association": True}


def _refusal(backend, refused: identity.IdentityRefused):
    """social-auth's error for a refused identity (errors.py words it for people)."""
    details = refused.details
    if refused.code == "identity_in_use":
        return AuthAssociationError(
            backend,
            code="identity_in_use",
            stage="pipeline",
            context={
                "message": _(
                    "This identity's account was linked through another identity "
                    "provider (%(issuer)s). Nobody was signed in."
                )
                % {"issuer": details["issuer"]}
            },
        )
    if refused.code == "authentication_disallowed":
        context = {"username": details["username"]}
        return AuthPolicyError(backend, code="authentication_disallowed", stage="pipeline", context=context)
    if refused.code == "username_in_use":
        return AuthAssociationError(
            backend,
            code="username_in_use",
            stage="pipeline",
            context={"username": details["username"], "reason": details["reason"]},
        )
    return AuthResponseError(
        backend,
        code="missing_claim",
        claim=details["claim"],
        stage="pipeline",
        context={"message": details["message"]},
    )


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
