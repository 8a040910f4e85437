"""What a directory change means for the console. Every step is audited with the provisioning
token that asked for it (actor `system:scim:<token name>`).

- **Joining**: an account without a password (the person signs in through the identity
  provider; their first sign-in links it, `account_for_sign_in`), named by `userName` under
  the console's rule for names (no existing name that reads the same in any case or spelling).
- **Leaving** (`active: false`, or the user deleted): at once, before any re-check at the
  provider, the account is deactivated and its session hash changes, so every session of the
  person ends at its next request; every runner token the person made is revoked with its S3
  credentials (they saw those secrets once: a leaver keeps none that work); a `Departure` is
  recorded, from which each project's leaver rule (retention, kind `leavers`) erases their
  profile after its days, unless a legal hold stands. Without that rule the profile is kept.
- **Coming back** (`active: true` again): the account works again and the Departure goes, so
  nothing planned for the leaver happens.
- **Groups**: a person's memberships follow the directory's groups through the same provider
  group mappings a sign-in's groups claim goes through (`governance.groups`); a group is known
  by its display name and its external id.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from projects import metrics
from projects.audit import Actor, audit_record
from projects.governance import groups as group_service
from projects.governance import identities, members
from projects.models import AgentToken, Departure, Lock, ScimGroup, ScimToken
from projects.runners import bearer
from projects.runners.credentials import CredentialsUnavailable

log = logging.getLogger(__name__)

_acting: contextvars.ContextVar[ScimToken | None] = contextvars.ContextVar("mgc_scim_token", default=None)


@contextlib.contextmanager
def acting_as(token: ScimToken):
    """The provisioning token a request came with: named by every audit event it causes."""
    reset = _acting.set(token)
    try:
        yield
    finally:
        _acting.reset(reset)


def actor() -> Actor:
    token = _acting.get()
    return Actor.system(f"scim:{token.name}" if token is not None else "scim")


def username_for(value: object) -> str:
    """A userName as the console's username, or ValidationError saying why it cannot be one."""
    return identities.username_from_claim(value, claim="userName")


def account_provision(*, username: str, email: str, first_name: str, last_name: str, active: bool):
    """A new account for a person the directory added (ValidationError: the name is taken)."""
    with transaction.atomic():
        Lock.hold(Lock.ACCOUNTS)
        members.username_free(username)
        user = get_user_model()(
            username=username,
            email=email[:254],
            first_name=first_name[:150],
            last_name=last_name[:150],
            is_active=active,
        )
        user.set_unusable_password()  # signs in through the identity provider only
        user.save()
        audit_record(
            actor=actor(),
            action="account.create",
            obj=user,
            details={"user": username, "via": "provisioning", "active": active},
        )
    return user


def account_update(user, *, username: str, email: str, first_name: str, last_name: str) -> list[str]:
    """The account follows the directory's name and e-mail; returns the fields changed."""
    changed = []
    if username != user.get_username():
        with transaction.atomic():
            Lock.hold(Lock.ACCOUNTS)
            members.username_free(username, exclude=user.pk)
        changed.append("username")
    for field, value, limit in (
        ("email", email, 254),
        ("first_name", first_name, 150),
        ("last_name", last_name, 150),
    ):
        if getattr(user, field) != value[:limit]:
            setattr(user, field, value[:limit])
            changed.append(field)
    if changed:
        before = user.get_username()
        user.username = username
        user.save(update_fields=changed)
        audit_record(
            actor=actor(),
            action="account.update",
            obj=user,
            details={"user": username, "fields": changed, **({"was": before} if before != username else {})},
        )
    return changed


def account_deactivate(user, *, how: str) -> int:
    """The person left (deactivated or deleted in the directory): signed out everywhere at their
    next request, the runner tokens they made revoked, their departure recorded. Returns how
    many tokens were revoked. Safe to repeat."""
    was_active = user.is_active
    user.is_active = False
    user.set_unusable_password()  # a new session hash: every session of theirs ends
    user.save(update_fields=["is_active", "password"])
    departure, made = Departure.objects.get_or_create(
        user=user, defaults={"left_at": timezone.now(), "how": how}
    )
    if not made and departure.how != how:  # deactivated first, deleted later: since the first
        departure.how = how
        departure.save(update_fields=["how"])
    revoked = 0
    for token in AgentToken.objects.filter(created_by=user, revoked_at__isnull=True).select_related(
        "agent", "agent__project"
    ):
        try:
            bearer.token_revoke(token=token, by=None, actor=actor(), reason=f"{user.get_username()} left")
        except CredentialsUnavailable as exc:  # the token is refused already; its S3 user lingers
            log.warning("runner token %s revoked, its S3 credentials still live: %s", token.pk, exc.message)
        revoked += 1
    audit_record(
        actor=actor(),
        action="account.deprovision",
        obj=user,
        details={
            "user": user.get_username(),
            "how": how,
            "was_active": was_active,
            "tokens_revoked": revoked,
        },
    )
    if was_active:
        metrics.sessions_ended.labels("deprovisioned").inc()
    return revoked


def account_reactivate(user) -> None:
    """The person is back: the account works again, and nothing planned for a leaver happens."""
    user.is_active = True
    user.save(update_fields=["is_active"])
    Departure.objects.filter(user=user).delete()
    audit_record(actor=actor(), action="account.reactivate", obj=user, details={"user": user.get_username()})


def audit_group(action: str, group: ScimGroup) -> None:
    audit_record(
        actor=actor(),
        action=action,
        obj=group,
        details={
            "group": group.display_name,
            "external_id": group.external_id,
            "members": group.members.count() if action != "group.delete" else None,
        },
    )


def group_names(user) -> list[str]:
    """The directory's groups of the person, as group mappings name them."""
    names = []
    for display_name, external_id in ScimGroup.objects.filter(members__user=user).values_list(
        "display_name", "external_id"
    ):
        names += [n for n in (display_name, external_id) if n]
    return sorted(set(names))


def memberships_follow(users) -> None:
    """Each person's group memberships follow their directory groups now."""
    for user in users:
        try:
            group_service.memberships_follow_groups(user=user, groups=group_names(user), actor=actor())
        except ValidationError as exc:  # kept, said in the log (a project's last admin)
            log.warning("provisioning kept a membership of %s: %s", user.get_username(), exc.messages[0])


def account_for_sign_in(username: str):
    """The account the directory provisioned under this username, if no identity is linked to
    it yet: a first sign-in through the provider links it (single sign-on's pipeline)."""
    from social_django.models import UserSocialAuth

    user = get_user_model().objects.filter(username=username, scim__isnull=False).first()
    if user is None or UserSocialAuth.objects.filter(user=user).exists():
        return None
    return user
