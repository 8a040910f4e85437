"""Accounts made just in time for people the identity provider vouches for.

The username comes from a claim the deploy names (MGC_OIDC_USERNAME_CLAIM). It must be free in
the console's strict sense: no existing username that reads the same in any case or
spelling (members.username_free), checked under the accounts lock so two first sign-ins of
look-alike names cannot both pass. A claim that collides with an existing account never takes
it over: the sign-in is refused and no account is made. Accounts are found again by the
provider's subject (`sub`), not by name, so a renamed person keeps their account."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from projects.audit import Actor, audit_record
from projects.governance import members
from projects.models import Lock


def username_from_claim(value: object, *, claim: str) -> str:
    """The claim's value as a username (NFKC, as the login form reads names), or a
    ValidationError saying why it cannot be one."""
    model = get_user_model()
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(
            _("The identity provider sent no %(claim)s claim to name your account after."),
            code="username_missing",
            params={"claim": claim},
        )
    name = model.normalize_username(value.strip())
    limit = model._meta.get_field(model.USERNAME_FIELD).max_length
    try:
        UnicodeUsernameValidator()(name)
        if len(name) > limit:
            raise ValidationError("too long")
    except ValidationError:
        raise ValidationError(
            _(
                "The identity provider's %(claim)s claim, %(name)s, cannot be a "
                "username here (at most %(limit)s letters, digits and @ . + - _)."
            ),
            code="username_invalid",
            params={"claim": claim, "name": name[:200], "limit": limit},
        ) from None
    return name


@transaction.atomic
def account_create_for_identity(
    *, username: str, issuer: str, subject: str, email: str = "", first_name: str = "", last_name: str = ""
):
    """A new account without a password for a person signing in through the provider;
    audited as account.create. Call inside the transaction that links the identity."""
    Lock.hold(Lock.ACCOUNTS)
    members.username_free(username)
    model = get_user_model()
    user = model(
        username=username,
        email=email or "",
        first_name=(first_name or "")[:150],
        last_name=(last_name or "")[:150],
    )
    user.set_unusable_password()  # signs in through the provider only
    user.save()
    audit_record(
        actor=Actor.system("sign-in"),
        action="account.create",
        obj=user,
        details={
            "user": username,
            "via": "single sign-on",
            "issuer": issuer,
            "subject": subject,
            "email_given": bool(email),
        },
    )
    return user
