"""Provisioning from the directory (SCIM 2.0): the identity provider's bearer tokens, the users
and groups it manages, and the people it deprovisioned (their profiles' leaver rule)."""

import uuid

from django.conf import settings
from django.db import models


class ScimToken(models.Model):
    """A bearer token an identity provider sends to /scim/v2/. Only its sha256 is stored; made
    and revoked by a superuser (audited)."""

    name = models.CharField(max_length=100, help_text="Which provider or connector it is for.")
    prefix = models.CharField(max_length=16, help_text="First characters, to recognise it.")
    token_hash = models.CharField(max_length=64, unique=True, help_text="sha256 of the token.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The superuser who made it.",
    )
    created_at = models.DateTimeField(auto_now_add=True, help_text="When it was made.")
    revoked_at = models.DateTimeField(null=True, blank=True, help_text="When it was revoked.")
    last_used_at = models.DateTimeField(null=True, blank=True, help_text="Last accepted request.")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def audit_label(self) -> tuple[str, dict]:
        return "scim_token", {"name": self.name}


class ScimUser(models.Model):
    """A person the directory manages: the SCIM resource as the provider last sent it (the
    console's account holds what it uses of it: username, names, e-mail, active)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, help_text="The SCIM id.")
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="scim",
        help_text="The console's account for this person.",
    )
    external_id = models.CharField(max_length=255, blank=True, help_text="The provider's own id.")
    data = models.JSONField(default=dict, help_text="The SCIM attributes as sent (no password).")
    version = models.PositiveIntegerField(default=1, help_text="Moves with every change (the ETag).")
    created_at = models.DateTimeField(auto_now_add=True, help_text="When it was provisioned.")
    modified_at = models.DateTimeField(auto_now=True, help_text="Last change.")

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"SCIM user {self.id}"


class ScimGroup(models.Model):
    """A group the directory manages. Its display name (and external id) are what provider
    group mappings name, as the groups claim of a sign-in does."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, help_text="The SCIM id.")
    display_name = models.CharField(max_length=255, help_text="The group's name.")
    external_id = models.CharField(max_length=255, blank=True, help_text="The provider's own id.")
    data = models.JSONField(default=dict, help_text="The SCIM attributes as sent, members aside.")
    members = models.ManyToManyField(ScimUser, blank=True, related_name="groups", help_text="Its people.")
    version = models.PositiveIntegerField(default=1, help_text="Moves with every change (the ETag).")
    created_at = models.DateTimeField(auto_now_add=True, help_text="When it was provisioned.")
    modified_at = models.DateTimeField(auto_now=True, help_text="Last change.")

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return self.display_name

    def audit_label(self) -> tuple[str, dict]:
        return "scim_group", {"name": self.display_name}


class Departure(models.Model):
    """A person the directory deactivated or deleted: since when. Retention's leaver rule of
    each project erases their profile there after the rule's days (unless a legal hold
    stands); reactivating the person removes the row, and with it what was planned."""

    class How(models.TextChoices):
        DEACTIVATED = "deactivated", "deactivated"
        DELETED = "deleted", "deleted"

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="departure", help_text="Who left."
    )
    left_at = models.DateTimeField(help_text="When the directory deprovisioned them.")
    how = models.CharField(max_length=12, choices=How.choices, help_text="Deactivated or deleted.")

    def __str__(self) -> str:
        return f"{self.user} {self.how} {self.left_at:%Y-%m-%d}"
