"""Users and Groups as scim2-server's storage, over the console's records.

A resource is kept as the provider sent it (ScimUser.data, ScimGroup.data; never a password),
so every attribute it manages reads back as written; what the console itself uses lives in
its own records and wins on the way out: the account's active flag, a group's members, a
user's groups (read-only in SCIM), ids and versions. `provisioning.py` says what each change
means for the console.

Searches: `userName`, `externalId` and `displayName` compared with `eq` (what identity
providers send before creating someone) are looked up in the database; any other filter is
evaluated by scim2-models over the resources of the type. Every operation runs in one
transaction (`operation`); bulk requests are not offered.
"""

from __future__ import annotations

import re
import uuid
from typing import Any, Union

from django.core.exceptions import ValidationError
from django.db import transaction
from scim2_models import (
    InvalidValueException,
    NotFoundException,
    PreconditionFailedException,
    Resource,
    ResourceType,
    ScimFilter,
    SearchRequest,
    UniquenessException,
)
from scim2_server.storage import ScimStorage, SearchPage

from projects.models import ScimGroup, ScimUser
from projects.scim import provisioning

_NOT_KEPT = ("id", "meta", "groups", "password")
_EQUALITY = re.compile(r'^\s*(userName|externalId|displayName)\s+eq\s+"((?:[^"\\]|\\.)*)"\s*$', re.I)


def _version(row) -> str:
    return f'W/"{row.version}"'


def _uuid(value: str | None) -> uuid.UUID:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise NotFoundException(detail=f"{value!r} not found") from None


def _first_email(data: dict) -> str:
    emails = [e for e in data.get("emails") or [] if isinstance(e, dict) and e.get("value")]
    chosen = next((e for e in emails if e.get("primary")), emails[0] if emails else None)
    return str(chosen["value"]) if chosen else ""


def _names(data: dict) -> tuple[str, str]:
    name = data.get("name") or {}
    return str(name.get("givenName") or ""), str(name.get("familyName") or "")


class ConsoleScimStorage(ScimStorage):
    """`models(resource_type)` gives the scim2-models class of a resource type (the service's)."""

    def __init__(self, models):
        self.models = models

    def operation(self):
        return transaction.atomic()

    # --- Reading ------------------------------------------------------------------------------

    def get(
        self, resource_type: ResourceType, resource_id: str, *, response_parameters=None
    ) -> Resource[Any]:
        if resource_type.name == "User":
            row = ScimUser.objects.select_related("user").filter(pk=_uuid(resource_id)).first()
            if row is None:
                raise NotFoundException(detail=f"User {resource_id!r} not found")
            return self._user(resource_type, row)
        row = ScimGroup.objects.filter(pk=_uuid(resource_id)).first()
        if row is None:
            raise NotFoundException(detail=f"Group {resource_id!r} not found")
        return self._group(resource_type, row)

    def _meta(self, resource_type: ResourceType, row) -> dict:
        return {
            "resourceType": resource_type.name,
            "created": row.created_at.isoformat(),
            "lastModified": row.modified_at.isoformat(),
            "version": _version(row),
        }

    def _user(self, resource_type: ResourceType, row: ScimUser) -> Resource[Any]:
        data = dict(row.data)
        data.update(id=str(row.id), meta=self._meta(resource_type, row))
        if "active" in data or not row.user.is_active:  # the account's state, whatever was sent
            data["active"] = row.user.is_active
        groups = [
            {"value": str(g.pk), "display": g.display_name, "$ref": f"Groups/{g.pk}", "type": "direct"}
            for g in row.groups.order_by("display_name")
        ]
        if groups:
            data["groups"] = groups
        return self.models(resource_type).model_validate(data)

    def _group(self, resource_type: ResourceType, row: ScimGroup) -> Resource[Any]:
        data = dict(row.data)
        data.update(id=str(row.id), displayName=row.display_name, meta=self._meta(resource_type, row))
        # Who is in it is the console's record; how the provider labelled each one, its own.
        shown = {
            str(m.get("value")): m.get("display")
            for m in data.pop("members", None) or []
            if isinstance(m, dict)
        }
        members = [
            {
                "value": str(m.pk),
                "display": shown.get(str(m.pk)) or m.user.get_username(),
                "$ref": f"Users/{m.pk}",
                "type": "User",
            }
            for m in row.members.select_related("user").order_by("created_at")
        ]
        if members:
            data["members"] = members
        return self.models(resource_type).model_validate(data)

    def search(
        self, resource_types: list[ResourceType], search_request: SearchRequest[Any], *, position=None
    ):
        scim_filter = search_request.filter
        found = []
        for resource_type in {rt.name: rt for rt in resource_types}.values():
            found += self._candidates(resource_type, scim_filter if len(resource_types) == 1 else None)
        if scim_filter is not None:
            if not scim_filter.models and found:
                kinds = tuple(dict.fromkeys(type(r) for r in found))
                scim_filter = ScimFilter[Union[kinds]](str(scim_filter))  # noqa: UP007 - a runtime union
            found = [r for r in found if scim_filter.match(r)]
        if search_request.sort_by is not None:
            keyed = [(search_request.sort_value(r), r) for r in found]
            keyed.sort(
                key=lambda pair: (pair[0] is None, pair[0] if pair[0] is not None else "", pair[1].id),
                reverse=search_request.sort_order == SearchRequest.SortOrder.descending,
            )
            found = [r for _v, r in keyed]
        start = search_request.start_index_0 or 0
        stop = None if search_request.count is None else start + search_request.count
        return SearchPage(len(found), found[start:stop])

    def _candidates(self, resource_type: ResourceType, scim_filter) -> list[Resource[Any]]:
        """The resources a search looks at: those an `eq` on a looked-up attribute names, or all."""
        match = _EQUALITY.match(str(scim_filter)) if scim_filter is not None else None
        if resource_type.name == "User":
            rows = ScimUser.objects.select_related("user").prefetch_related("groups")
            if match and match.group(1).lower() == "username":
                rows = rows.filter(user__username__iexact=match.group(2))
            elif match and match.group(1).lower() == "externalid":
                rows = rows.filter(external_id=match.group(2))
            return [self._user(resource_type, row) for row in rows.order_by("created_at")]
        rows = ScimGroup.objects.all()
        if match and match.group(1).lower() == "displayname":
            rows = rows.filter(display_name__iexact=match.group(2))
        elif match and match.group(1).lower() == "externalid":
            rows = rows.filter(external_id=match.group(2))
        return [self._group(resource_type, row) for row in rows.order_by("created_at")]

    # --- Writing --------------------------------------------------------------------------------

    @staticmethod
    def _kept(resource: Resource[Any]) -> dict:
        data = resource.model_dump()
        for name in _NOT_KEPT:
            data.pop(name, None)
        return data

    def create(self, resource_type: ResourceType, resource: Resource[Any]) -> Resource[Any]:
        data = self._kept(resource)
        if resource_type.name == "User":
            username = self._username(data)
            first, last = _names(data)
            try:
                user = provisioning.account_provision(
                    username=username,
                    email=_first_email(data),
                    first_name=first,
                    last_name=last,
                    active=data.get("active", True) is not False,
                )
            except ValidationError as exc:
                raise UniquenessException(detail=exc.messages[0]) from None
            row = ScimUser.objects.create(user=user, external_id=str(data.get("externalId") or ""), data=data)
            return self._user(resource_type, ScimUser.objects.select_related("user").get(pk=row.pk))
        row = ScimGroup.objects.create(
            display_name=str(data.get("displayName") or "")[:255],
            external_id=str(data.get("externalId") or "")[:255],
            data=data,
        )
        self._set_members(row, resource)
        provisioning.audit_group("group.create", row)
        return self._group(resource_type, row)

    def update(
        self, resource_type: ResourceType, resource: Resource[Any], *, expected_version: str | None = None
    ) -> Resource[Any]:
        data = self._kept(resource)
        if resource_type.name == "User":
            row = ScimUser.objects.select_for_update().filter(pk=_uuid(resource.id)).first()
            if row is None:
                raise NotFoundException(detail=f"User {resource.id!r} not found")
            self._check(row, expected_version)
            user = row.user
            first, last = _names(data)
            try:
                provisioning.account_update(
                    user,
                    username=self._username(data),
                    email=_first_email(data),
                    first_name=first,
                    last_name=last,
                )
            except ValidationError as exc:
                raise UniquenessException(detail=exc.messages[0]) from None
            active = data.get("active", True) is not False
            if user.is_active and not active:
                provisioning.account_deactivate(user, how="deactivated")
            elif active and not user.is_active:
                provisioning.account_reactivate(user)
            row.data, row.external_id = data, str(data.get("externalId") or "")
            row.version += 1
            row.save()
            return self._user(resource_type, ScimUser.objects.select_related("user").get(pk=row.pk))
        row = ScimGroup.objects.select_for_update().filter(pk=_uuid(resource.id)).first()
        if row is None:
            raise NotFoundException(detail=f"Group {resource.id!r} not found")
        self._check(row, expected_version)
        renamed = (row.display_name, row.external_id) != (
            str(data.get("displayName") or "")[:255],
            str(data.get("externalId") or "")[:255],
        )
        row.display_name = str(data.get("displayName") or "")[:255]
        row.external_id = str(data.get("externalId") or "")[:255]
        row.data = data
        row.version += 1
        row.save()
        self._set_members(row, resource, everyone=renamed)
        provisioning.audit_group("group.update", row)
        return self._group(resource_type, row)

    def delete(
        self, resource_type: ResourceType, resource_id: str, *, expected_version: str | None = None
    ) -> None:
        if resource_type.name == "User":
            row = (
                ScimUser.objects.select_for_update()
                .select_related("user")
                .filter(pk=_uuid(resource_id))
                .first()
            )
            if row is None:
                raise NotFoundException(detail=f"User {resource_id!r} not found")
            self._check(row, expected_version)
            user = row.user
            provisioning.account_deactivate(user, how="deleted")
            row.delete()  # its group memberships with it
            provisioning.memberships_follow([user])
            return
        row = ScimGroup.objects.select_for_update().filter(pk=_uuid(resource_id)).first()
        if row is None:
            raise NotFoundException(detail=f"Group {resource_id!r} not found")
        self._check(row, expected_version)
        people = [m.user for m in row.members.select_related("user")]
        provisioning.audit_group("group.delete", row)
        row.delete()
        provisioning.memberships_follow(people)

    # --- Helpers --------------------------------------------------------------------------------

    @staticmethod
    def _check(row, expected_version: str | None) -> None:
        if expected_version is not None and expected_version != _version(row):
            raise PreconditionFailedException

    @staticmethod
    def _username(data: dict) -> str:
        try:
            return provisioning.username_for(data.get("userName"))
        except ValidationError as exc:
            raise InvalidValueException(detail=exc.messages[0]) from None

    @staticmethod
    def _set_members(row: ScimGroup, resource: Resource[Any], *, everyone: bool = False) -> None:
        """The group's members as sent (Users only); the memberships of everyone who joined or
        left it (everyone in it when its name changed) follow."""
        wanted = set()
        for member in getattr(resource, "members", None) or []:
            if getattr(member, "type", None) not in (None, "User"):
                raise InvalidValueException(detail="Groups here hold users only, not other groups.")
            try:
                wanted.add(uuid.UUID(str(member.value)))
            except ValueError:
                raise InvalidValueException(detail=f"No user {member.value!r}.") from None
        found = set(ScimUser.objects.filter(pk__in=wanted).values_list("pk", flat=True))
        if found != wanted:
            raise InvalidValueException(detail=f"No user {sorted(map(str, wanted - found))[0]!r}.")
        before = set(row.members.values_list("pk", flat=True))
        row.members.set(found)
        touched = (before | found) if everyone else (before ^ found)
        provisioning.memberships_follow(
            [m.user for m in ScimUser.objects.filter(pk__in=touched).select_related("user")]
        )
