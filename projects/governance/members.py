"""Memberships: who works in a project in which role; every change audited, and a project
always keeps an admin."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from projects.audit import Actor, audit_record
from projects.models import Membership, Project


@transaction.atomic
def member_set(*, by, project: Project, user, role: str) -> Membership:
    """Grant a role or change it; audited as a permission change."""
    if role not in Membership.Role.values:
        raise ValidationError(_("Unknown role %(role)s."), code="role", params={"role": role})
    membership = Membership.objects.select_for_update().filter(project=project, user=user).first()
    before = membership.role if membership else None
    if before == role:
        return membership
    if before == Membership.Role.ADMIN:
        _keep_an_admin(project, leaving=user)
    if membership is None:
        membership = Membership.objects.create(project=project, user=user, role=role)
    else:
        membership.role = role
        membership.save(update_fields=["role"])
    audit_record(actor=Actor.person(by), action="member.grant" if before is None else "member.role",
                 project=project, obj=membership,
                 details={"user": user.get_username(), "from": before, "to": role})
    return membership


@transaction.atomic
def member_remove(*, by, membership: Membership) -> None:
    if membership.role == Membership.Role.ADMIN:
        _keep_an_admin(membership.project, leaving=membership.user)
    audit_record(actor=Actor.person(by), action="member.remove", project=membership.project,
                 obj=membership, details={"user": membership.user.get_username(),
                                          "role": membership.role})
    membership.delete()


def _keep_an_admin(project: Project, *, leaving) -> None:
    """A project without an admin can only be rescued by a superuser: refuse that."""
    others = (Membership.objects.select_for_update()
              .filter(project=project, role=Membership.Role.ADMIN).exclude(user=leaving))
    if not others.exists():
        raise ValidationError(_("This is the project's last admin. Make someone else admin first."),
                              code="last_admin")
