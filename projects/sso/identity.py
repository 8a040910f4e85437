"""Which account an identity at the provider is: the one rule for every way in (the browser's
sign-in pipeline, the MCP endpoint's access tokens).

An identity is linked to an account by the provider's subject (`sub`), once (a
`UserSocialAuth` row of the "oidc" provider). A known subject is its linked account, as long
as the link came through the same issuer and the account is active. An unknown subject gets
a new account named after the username claim, made under the accounts lock; a name taken in
the console (or reading like one) refuses it: an identity never takes over an account it is
not linked to. The one exception is an account the directory provisioned for that name
(SCIM, projects.scim) that no identity is linked to yet: it is this person's, and their first
sign-in (or first MCP access token) links it; while the directory has it deactivated, the
identity is refused."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from social_django.models import UserSocialAuth

from projects.audit import Actor, audit_record
from projects.governance import identities
from projects.models import Lock
from projects.scim import provisioning

PROVIDER = "oidc"  # the backend's name (backend.ConsoleOpenIdConnect.name)
CONTEXT = "_oidc_id_token_context"  # where social-auth keeps the first ID token's iss/sub/aud


class IdentityRefused(Exception):
    """The identity cannot be let in: `code` says why (identity_in_use, authentication_disallowed,
    username_invalid, username_missing, username_in_use); `details` what it concerns."""

    def __init__(self, code: str, **details):
        super().__init__(code)
        self.code, self.details = code, details


def linked(subject: str) -> UserSocialAuth | None:
    return UserSocialAuth.objects.select_related("user").filter(provider=PROVIDER, uid=str(subject)).first()


def account_checked(social: UserSocialAuth, *, issuer: str):
    """The linked account, if this identity may use it now."""
    known = (social.extra_data or {}).get(CONTEXT, {}).get("iss")
    if known and known != issuer:
        raise IdentityRefused("identity_in_use", issuer=known)
    if not social.user.is_active:
        raise IdentityRefused("authentication_disallowed", username=social.user.get_username())
    return social.user


def account_for_identity(
    *,
    issuer: str,
    subject: str,
    username_value,
    claim: str,
    email: str = "",
    first_name: str = "",
    last_name: str = "",
) -> tuple:
    """(user, link, is_new) for the identity: its linked account, the account provisioned for
    its name (linked now; not new), or one made now."""
    social = linked(subject)
    if social is not None:
        return account_checked(social, issuer=issuer), social, False
    try:
        username = identities.username_from_claim(username_value, claim=claim)
    except ValidationError as exc:
        raise IdentityRefused(exc.code or "username_invalid", claim=claim, message=exc.messages[0]) from None
    with transaction.atomic():
        Lock.hold(Lock.ACCOUNTS)
        # A first sign-in of the same person elsewhere (another tab, an MCP host) may have
        # linked it meanwhile.
        social = linked(subject)
        if social is not None:
            return account_checked(social, issuer=issuer), social, False
        extra = {CONTEXT: {"iss": issuer, "sub": str(subject)}}
        provisioned = provisioning.account_for_sign_in(username)
        if provisioned is not None:
            if not provisioned.is_active:
                raise IdentityRefused("authentication_disallowed", username=username)
            social = UserSocialAuth.objects.create(
                user=provisioned, uid=str(subject), provider=PROVIDER, extra_data=extra
            )
            audit_record(
                actor=Actor.system("sign-in"),
                action="account.link",
                obj=provisioned,
                details={"user": username, "via": "provisioned", "issuer": issuer, "subject": str(subject)},
            )
            return provisioned, social, False
        try:
            user = identities.account_create_for_identity(
                username=username,
                issuer=issuer,
                subject=str(subject),
                email=email or "",
                first_name=first_name or "",
                last_name=last_name or "",
            )
        except ValidationError as exc:
            raise IdentityRefused("username_in_use", username=username, reason=exc.code) from None
        social = UserSocialAuth.objects.create(
            user=user, uid=str(subject), provider=PROVIDER, extra_data=extra
        )
    return user, social, True
