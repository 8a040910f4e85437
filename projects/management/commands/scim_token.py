from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.core.management.base import BaseCommand, CommandError

from projects.models import ScimToken
from projects.scim import tokens


class Command(BaseCommand):
    help = (
        "The identity provider's bearer tokens for SCIM provisioning (/scim/v2/): make one (shown "
        "once), list them, revoke one. Made and revoked in a superuser's name; audited."
    )

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["create", "list", "revoke"])
        parser.add_argument("token", nargs="?", type=int, help="revoke: the token's number (from list).")
        parser.add_argument("--name", default="identity provider", help="create: which provider it is for.")
        parser.add_argument(
            "--by", default="", help="The superuser acting (a username; required to create or revoke)."
        )

    def handle(self, *args, action, token=None, name="", by="", **options):
        if action == "list":
            for item in ScimToken.objects.select_related("created_by"):
                state = f"revoked {item.revoked_at:%Y-%m-%d}" if item.revoked_at else "live"
                used = f"{item.last_used_at:%Y-%m-%d %H:%M}" if item.last_used_at else "never"
                self.stdout.write(f"#{item.pk}\t{item.name}\t{item.prefix}…\t{state}\tlast used {used}")
            return
        actor = get_user_model().objects.filter(username=by).first() if by else None
        if actor is None or not actor.is_superuser:
            raise CommandError("--by must name a superuser.")
        try:
            if action == "create":
                made, raw = tokens.token_create(by=actor, name=name)
                self.stdout.write(f"provisioning token #{made.pk} ({made.name}), shown once:")
                self.stdout.write(raw)
                return
            found = ScimToken.objects.filter(pk=token).first() if token else None
            if found is None:
                raise CommandError("Name the token to revoke by its number (scim_token list).")
            tokens.token_revoke(by=actor, token=found)
            self.stdout.write(f"revoked provisioning token #{found.pk} ({found.name})")
        except PermissionDenied as exc:
            raise CommandError(str(exc)) from None
