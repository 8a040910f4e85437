from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from projects.governance import holds
from projects.models import LegalHold, MemoryFile, Project


class Command(BaseCommand):
    help = (
        "Place, release or list legal holds. While a hold stands, erasure, deletion and "
        "retention refuse what it covers, and the storage holds every version of it (S3 "
        "Object Lock legal hold)."
    )

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["place", "release", "list", "sweep"])
        parser.add_argument(
            "--project", help="Project slug (required, except for sweep: every project's holds without it)."
        )
        target = parser.add_mutually_exclusive_group()
        target.add_argument("--user", help="A person: their profile in every project.")
        target.add_argument("--path", help="Workspace files: workspace/<glob>.md.")
        target.add_argument("--file", help="A file's id.")
        target.add_argument("--hold", type=int, help="release: the hold's number.")
        parser.add_argument("--reason", default="", help="Why (place: required).")
        parser.add_argument("--case", default="", help="The case or matter reference.")
        parser.add_argument(
            "--by", default="", help="Who acts (a username; default: the project's first admin)."
        )

    def handle(
        self,
        *args,
        action,
        project,
        user=None,
        path=None,
        file=None,
        hold=None,
        reason="",
        case="",
        by="",
        **options,
    ):
        project_obj = Project.objects.filter(slug=project).first() if project else None
        if action == "sweep":
            if project and project_obj is None:
                raise CommandError(f"No project with slug {project!r}.")
            for item, sweep in holds.holds_sweep_again(project=project_obj):
                self.stdout.write(
                    f"#{item.pk}\t{item.describe()}: {sweep.versions} version(s) held in storage"
                )
                if sweep.note:
                    self.stdout.write(self.style.WARNING(sweep.note))
            return
        if project_obj is None:
            raise CommandError(f"No project with slug {project!r}." if project else "--project is required.")
        if action == "list":
            for item in holds.holds_of(project_obj):
                state = "released" if item.released_at else "standing"
                self.stdout.write(
                    f"#{item.pk}\t{state}\t{item.describe()}\t{item.reason}\t"
                    f"{item.case_reference}\t{item.placed_at:%Y-%m-%d}"
                )
            return
        actor = self._actor(project_obj, by)
        if action == "place":
            person = self._user(user) if user else None
            file_obj = self._file(project_obj, file) if file else None
            try:
                placed, sweep = holds.hold_place(
                    by=actor,
                    project=project_obj,
                    reason=reason,
                    case_reference=case,
                    user=person,
                    file=file_obj,
                    glob=path or "",
                )
            except ValidationError as exc:
                raise CommandError(" ".join(exc.messages)) from exc
            self.stdout.write(
                self.style.SUCCESS(
                    f"placed legal hold #{placed.pk} on {placed.describe()}: {sweep.versions} "
                    f"version(s) held in storage"
                )
            )
            if sweep.note:
                self.stdout.write(self.style.WARNING(sweep.note))
            return
        found = self._find(project_obj, hold, user, path, file)
        for item in found:
            sweep = holds.hold_release(by=actor, hold=item, note=reason)
            self.stdout.write(
                self.style.SUCCESS(
                    f"released legal hold #{item.pk} on {item.describe()}: {sweep.versions} "
                    f"version(s) released in storage"
                )
            )

    def _find(self, project, number, user, path, file):
        standing = holds.holds_of(project, standing_only=True)
        if number:
            standing = standing.filter(pk=number)
        elif user:
            standing = standing.filter(kind=LegalHold.Kind.PERSON, user=self._user(user))
        elif path:
            standing = standing.filter(kind=LegalHold.Kind.GLOB, glob=path)
        elif file:
            standing = standing.filter(kind=LegalHold.Kind.FILE, file=self._file(project, file))
        else:
            standing = standing.filter(kind=LegalHold.Kind.PROJECT)
        found = list(standing)
        if not found:
            raise CommandError("No standing hold matches.")
        return found

    def _user(self, name: str):
        person = get_user_model().objects.filter(username=name).first()
        if person is None:
            raise CommandError(f"No user {name!r}.")
        return person

    def _file(self, project, file_id: str):
        try:
            return MemoryFile.objects.select_related("project").get(project=project, pk=file_id)
        except (MemoryFile.DoesNotExist, ValidationError):
            raise CommandError(f"No file {file_id!r} in {project.slug}.") from None

    def _actor(self, project, name: str):
        users = get_user_model().objects
        if name:
            actor = users.filter(username=name).first()
            if actor is None:
                raise CommandError(f"No user {name!r}.")
            return actor
        actor = (
            users.filter(memberships__project=project, memberships__role="admin").order_by("pk").first()
            or users.filter(is_superuser=True).order_by("pk").first()
        )
        if actor is None:
            raise CommandError("Name who acts with --by.")
        return actor
