"""Provider groups mapped to project roles, and memberships that follow a person's groups.

An admin maps a group to a role in a project ("group `sre` -> incident-analysis, employee").
At each sign-in (and each time the provider re-confirms a session with a fresh ID token) the
person's group memberships are brought in line with the groups the provider names:

- a mapped group the person is in, in a project where they have no membership: granted;
- a group membership whose best mapping now gives another role: changed;
- a group membership no mapping of their groups supports any more: removed;
- a membership an admin granted by hand: never touched (the hand grant wins in its project).

Several of a person's groups mapped into one project give the highest of their roles. Every
change is audited with the mapping that caused it; a change that would leave a project
without an admin is skipped and logged (members.py keeps that rule).
"""

from __future__ import annotations

import logging

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from projects.audit import Actor, audit_record
from projects.governance import members
from projects.models import GroupMapping, Membership, Project

log = logging.getLogger(__name__)

_RANK = {Membership.Role.EMPLOYEE: 1, Membership.Role.COMPLIANCE: 2, Membership.Role.ADMIN: 3}
SIGN_IN = Actor.system("sign-in")


def _details(mapping: GroupMapping) -> dict:
    return {"group": mapping.group, "role": mapping.role, "mapping_id": mapping.pk}


@transaction.atomic
def mapping_save(
    *, by, project: Project, group: str, role: str, mapping: GroupMapping | None = None
) -> GroupMapping:
    """Create a mapping, or change an existing one's group or role; audited. People's
    memberships follow at their next sign-in."""
    if role not in Membership.Role.values:
        raise ValidationError(_("Unknown role %(role)s."), code="role", params={"role": role})
    before = _details(mapping) if mapping is not None else None
    if mapping is None:
        mapping = GroupMapping(project=project, created_by=by)
    mapping.group, mapping.role = group, role
    try:
        with transaction.atomic():
            mapping.save()
    except IntegrityError:
        raise ValidationError(
            _("The group %(group)s is already mapped in this project: change that mapping's role instead."),
            code="mapping_exists",
            params={"group": group},
        ) from None
    audit_record(
        actor=Actor.person(by),
        action="mapping.update" if before else "mapping.create",
        project=project,
        obj=mapping,
        details={"from": before, "to": _details(mapping)},
    )
    return mapping


@transaction.atomic
def mapping_delete(*, by, mapping: GroupMapping) -> None:
    """Delete a mapping; the memberships it granted stay marked as group memberships and go
    at each person's next sign-in (unless another of their groups maps to the project)."""
    audit_record(
        actor=Actor.person(by),
        action="mapping.delete",
        project=mapping.project,
        obj=mapping,
        details={"from": _details(mapping)},
    )
    mapping.delete()


def mappings_for(groups: list[str]) -> dict:
    """project id -> the mapping giving the highest role among `groups` (ties: the oldest)."""
    best: dict = {}
    for mapping in GroupMapping.objects.filter(group__in=groups).select_related("project").order_by("pk"):
        held = best.get(mapping.project_id)
        if held is None or _RANK[mapping.role] > _RANK[held.role]:
            best[mapping.project_id] = mapping
    return best


def memberships_follow_groups(*, user, groups: list[str], actor: Actor = SIGN_IN) -> list[dict]:
    """Bring the person's group memberships in line with `groups`; returns the changes made
    (and the ones skipped to keep a project's last admin), each naming its mapping. `actor`:
    the sign-in (the groups claim) or provisioning (the directory's groups, SCIM)."""
    wanted = mappings_for(groups)
    changes = []
    for membership in Membership.objects.filter(user=user).select_related("project", "mapping"):
        mapping = wanted.pop(membership.project_id, None)
        if membership.source != Membership.Source.GROUP:
            continue  # granted by hand: the admin's decision stands
        try:
            if mapping is None:
                members.member_remove(by=None, membership=membership, actor=actor)
                changes.append({"project": membership.project.slug, "removed": membership.role})
            elif mapping.role != membership.role or mapping.pk != membership.mapping_id:
                members.member_set(
                    by=None,
                    project=membership.project,
                    user=user,
                    role=mapping.role,
                    mapping=mapping,
                    actor=actor,
                )
                changes.append(
                    {"project": membership.project.slug, "role": mapping.role, "mapping": str(mapping)}
                )
        except ValidationError as exc:  # the project's last admin: kept, and said in the log
            log.warning(
                "sign-in of %s kept a membership in %s: %s",
                user.get_username(),
                membership.project.slug,
                exc.messages[0],
            )
            changes.append({"project": membership.project.slug, "kept": exc.code})
    for mapping in wanted.values():
        members.member_set(
            by=None, project=mapping.project, user=user, role=mapping.role, mapping=mapping, actor=actor
        )
        changes.append({"project": mapping.project.slug, "role": mapping.role, "mapping": str(mapping)})
    return changes
