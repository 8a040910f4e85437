"""Memberships: who works in a project in which role; every change audited, and a project
always keeps an admin. Project admins also create accounts for new people here, who then
choose their own password through a one-time link (Django's password reset tokens)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.db import transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from django.utils.translation import gettext as _

from projects.audit import Actor, audit_record
from projects.memory import lookalikes
from projects.models import GroupMapping, Lock, Membership, Project


@transaction.atomic
def member_set(
    *, by, project: Project, user, role: str, mapping: GroupMapping | None = None, actor: Actor | None = None
) -> Membership:
    """Grant a role or change it; audited as a permission change. With `mapping` the
    membership is the group mapping's (it follows the person's groups, and the audit event
    names the mapping); without, it is a hand-made one, which sign-ins leave alone."""
    if role not in Membership.Role.values:
        raise ValidationError(_("Unknown role %(role)s."), code="role", params={"role": role})
    _hold_members(project)
    membership = Membership.objects.select_for_update().filter(project=project, user=user).first()
    before = membership.role if membership else None
    source = Membership.Source.GROUP if mapping is not None else Membership.Source.MANUAL
    if before == role and (mapping is None or membership.mapping_id == mapping.pk):
        return membership
    if before == Membership.Role.ADMIN and role != before:
        _keep_an_admin(project, leaving=user)
    if membership is None:
        membership = Membership.objects.create(
            project=project, user=user, role=role, source=source, mapping=mapping
        )
    else:
        membership.role, membership.source, membership.mapping = role, source, mapping
        membership.save(update_fields=["role", "source", "mapping"])
    details = {"user": user.get_username(), "from": before, "to": role}
    if mapping is not None:
        details.update(mapping=str(mapping), mapping_id=mapping.pk)
    audit_record(
        actor=actor or Actor.person(by),
        action="member.grant" if before is None else "member.role",
        project=project,
        obj=membership,
        details=details,
    )
    return membership


def username_free(name: str, *, exclude: int | None = None) -> None:
    """ValidationError if `name` (already NFKC, as the login form reads it) reads like an
    existing username in any case or spelling ("MARIA", "ｍａｒｉａ", Cyrillic "mаria"), which
    the audit trail could not tell apart. Compared in Python: SQLite folds ASCII case only."""
    key = lookalikes.name_key(name)
    others = get_user_model().objects.exclude(pk=exclude) if exclude else get_user_model().objects
    for existing in others.values_list("username", flat=True).iterator():
        if lookalikes.name_key(existing) != key:
            continue
        if existing.casefold() == name.casefold():
            raise ValidationError(
                _(
                    "The username %(name)s is taken. Pick another, or add "
                    'the existing account with "Add member" above.'
                ),
                code="username_taken",
                params={"name": name},
            )
        raise ValidationError(
            _("%(name)s reads the same as the existing username %(existing)s. Pick another."),
            code="username_lookalike",
            params={"name": name, "existing": existing},
        )


@transaction.atomic
def account_create(
    *,
    by,
    project: Project,
    username: str,
    role: str,
    email: str = "",
    first_name: str = "",
    last_name: str = "",
) -> Membership:
    """A new account without a usable password, added to the project with a role; audited as
    "account.create" and "member.grant". The person sets a password through invite_path().
    Two admins creating look-alike names at once are serialized by a lock, so the second
    sees the first."""
    accounts = get_user_model().objects
    username = accounts.model.normalize_username(username)
    Lock.hold(Lock.ACCOUNTS)
    username_free(username)
    user = accounts.model(username=username, email=email, first_name=first_name, last_name=last_name)
    user.set_unusable_password()  # nobody, the admin included, knows a password for it
    user.save()
    audit_record(
        actor=Actor.person(by),
        action="account.create",
        project=project,
        obj=user,
        details={"user": username, "role": role, "email_given": bool(email)},
    )
    return member_set(by=by, project=project, user=user, role=role)


def invite_path(user) -> str:
    """The set-password link for a new account: a password reset token, so it works once
    (setting the password changes what the token was made from) and expires after
    PASSWORD_RESET_TIMEOUT."""
    return reverse(
        "password_reset_confirm",
        kwargs={
            "uidb64": urlsafe_base64_encode(force_bytes(user.pk)),
            "token": default_token_generator.make_token(user),
        },
    )


def can_reinvite(*, by, user) -> bool:
    """A new set-password link: for an account that never chose a password (the first link
    expired or was lost). An account with a password is its owner's (or a superuser's):
    a project admin's link to it would let that admin take it over."""
    if by.is_superuser:
        return True
    return not user.has_usable_password() and not user.is_superuser


@transaction.atomic
def invite_renew(*, by, project: Project, user) -> None:
    """Record that a new set-password link was made (the link itself is never stored)."""
    audit_record(
        actor=Actor.person(by),
        action="account.invite",
        project=project,
        obj=user,
        details={"user": user.get_username(), "email_given": bool(user.email)},
    )


def invite_send(*, user, link: str, project: Project, by) -> bool:
    """E-mail the link when the account has an address and the console may send mail; False
    when nothing was sent, so the admin passes the link on."""
    if not user.email or not settings.MGC_SENDS_EMAIL:
        return False
    days = max(1, settings.PASSWORD_RESET_TIMEOUT // 86400)
    body = _(
        "%(admin)s created an account for you in the Memory Governance Console "
        "(project %(project)s). Your username is %(name)s.\n\n"
        "Choose your password here (the link works once, for %(days)s days):\n%(link)s\n"
    ) % {
        "admin": by.get_full_name() or by.get_username(),
        "project": project.name,
        "name": user.get_username(),
        "days": days,
        "link": link,
    }
    try:
        send_mail(_("Your account in the Memory Governance Console"), body, None, [user.email])
    except OSError:  # smtplib's errors included: the account exists, the admin passes it on
        return False
    return True


@transaction.atomic
def member_remove(*, by, membership: Membership, actor: Actor | None = None) -> None:
    """Remove a membership; a group membership's event names the mapping that granted it."""
    _hold_members(membership.project)
    if membership.role == Membership.Role.ADMIN:
        _keep_an_admin(membership.project, leaving=membership.user)
    details = {"user": membership.user.get_username(), "role": membership.role}
    if membership.source == Membership.Source.GROUP:
        details.update(
            mapping=str(membership.mapping) if membership.mapping else "(deleted mapping)",
            mapping_id=membership.mapping_id,
        )
    audit_record(
        actor=actor or Actor.person(by),
        action="member.remove",
        project=membership.project,
        obj=membership,
        details=details,
    )
    membership.delete()


def _hold_members(project: Project) -> None:
    """One membership change of a project at a time: two admins removing (or demoting) each
    other at once locked each other's rows in opposite orders, a deadlock."""
    Lock.hold(f"members:{project.pk}")


def _keep_an_admin(project: Project, *, leaving) -> None:
    """A project without an admin can only be rescued by a superuser: refuse that."""
    others = (
        Membership.objects.select_for_update()
        .filter(project=project, role=Membership.Role.ADMIN)
        .exclude(user=leaving)
    )
    if not others.exists():
        raise ValidationError(
            _("This is the project's last admin. Make someone else admin first."), code="last_admin"
        )
