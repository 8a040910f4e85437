"""Failed sign-ins, counted per account name and client (a device, or an address)."""

from django.db import models
from django.utils import timezone


class SignInFailure(models.Model):
    """Failed password sign-ins for one account name from one client within the cool-off
    (projects.governance.signin). Past the limit that pair is locked; the rows of clients
    without a device cookie also add up per address and per account (a paused address, an
    account whose new clients are slowed down)."""

    account = models.CharField(
        max_length=255,
        help_text="The account name as sign-ins are counted: NFKC, case and look-alikes folded.",
    )
    client = models.CharField(
        max_length=80, help_text="device:<id> (a valid device cookie for this account) or address:<address>."
    )
    trusted = models.BooleanField(
        default=False, help_text="The client held a device cookie for this account."
    )
    address = models.CharField(
        max_length=64, help_text="The client address the last failure came from (an IPv6 client: its /64)."
    )
    failures = models.PositiveIntegerField(
        default=0, help_text="Failures since the first within the cool-off."
    )
    last_failure = models.DateTimeField(default=timezone.now, help_text="When the latest failure was.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["account", "client"], name="signin_failure_pair")]
        indexes = [
            models.Index(fields=["account", "last_failure"], name="signin_failure_account"),
            models.Index(fields=["address", "last_failure"], name="signin_failure_address"),
            models.Index(fields=["last_failure"], name="signin_failure_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.account} from {self.client}: {self.failures}"
