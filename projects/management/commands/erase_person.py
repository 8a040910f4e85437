from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from projects.governance import erasure
from projects.memory.errors import Held, StoreError
from projects.models import Project


class Command(BaseCommand):
    help = (
        "Erase a person's profile memory in every project (or the ones named): USER.md, "
        "every snapshot and stored version, what agents were told about them, the "
        "proposals and flags that quote it. Refused, naming the hold, where a legal hold "
        "stands. One audit tombstone per project."
    )

    def add_arguments(self, parser):
        parser.add_argument("--user", required=True, help="The person's username.")
        parser.add_argument("--reason", required=True, help="Why (kept in the tombstone).")
        parser.add_argument(
            "--project", action="append", default=[], help="Only this project (repeat for several)."
        )
        parser.add_argument("--by", default="", help="Who acts (a superuser by default).")

    def handle(self, *args, user, reason, project, by="", **options):
        users = get_user_model().objects
        person = users.filter(username=user).first()
        if person is None:
            raise CommandError(f"No user {user!r}.")
        actor = (
            users.filter(username=by).first()
            if by
            else users.filter(is_superuser=True).order_by("pk").first()
        )
        if actor is None:
            raise CommandError("Name who acts with --by (no superuser exists).")
        projects = erasure.person_projects(person, by=actor)
        if project:
            unknown = set(project) - {p.slug for p in Project.objects.filter(slug__in=project)}
            if unknown:
                raise CommandError(f"No project {', '.join(sorted(unknown))}.")
            projects = [p for p in projects if p.slug in project]
        if not projects:
            raise CommandError(f"{user} has no profile memory {actor.get_username()} may erase.")
        try:
            done = erasure.profile_erase(by=actor, user=person, reason=reason, projects=projects)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from exc
        except Held as exc:  # nothing was erased: the hold says what to do
            raise CommandError(exc.message) from exc
        except StoreError as exc:  # storage failed partway: a second run finishes it
            raise CommandError(f"{exc.message} Run it again to finish.") from exc
        self.stdout.write(
            self.style.SUCCESS(
                f"erased {user}'s profile in {', '.join(done.projects)}: {done.files} file(s), "
                f"{done.revisions} revision(s), {done.objects} object(s) and version(s)"
            )
        )
