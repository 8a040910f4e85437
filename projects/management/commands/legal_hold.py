from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db.models import Q

from projects.governance import holds
from projects.models import LegalHold, MemoryFile, Project


class Command(BaseCommand):
    help = (
        "Place, release or list legal holds. While a hold stands, erasure, deletion and "
        "retention refuse what it covers, and the storage holds every version of it (S3 "
        "Object Lock legal hold). Placing the same hold again (same scope and case) finishes "
        "one whose storage sweep stopped short; it never makes a second hold. `sweep` puts "
        "every standing hold's S3 holds back from the first version (after a restore)."
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
        parser.add_argument(
            "--background",
            action="store_true",
            help="Sweep the first 1,000 versions here and leave the rest to the events worker.",
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
        background=False,
        **options,
    ):
        project_obj = Project.objects.filter(slug=project).first() if project else None
        if action == "sweep":
            if project and project_obj is None:
                raise CommandError(f"No project with slug {project!r}.")
            unfinished = []
            for item, sweep in holds.holds_sweep_again(project=project_obj):
                what = f"legal hold #{item.pk} on {item.describe()}"
                if not sweep.finished:
                    self.stdout.write(self.style.WARNING(f"{what}: {holds.sweep_summary(sweep)}"))
                    unfinished.append(f"#{item.pk}")
                    continue
                self.stdout.write(
                    self.style.SUCCESS(f"swept {what}: {sweep.versions} version(s) held in storage")
                )
                if sweep.note:
                    self.stdout.write(self.style.WARNING(sweep.note))
            if unfinished:
                raise CommandError(
                    f"legal hold(s) {', '.join(unfinished)} not yet held in storage everywhere; "
                    "run the same command again."
                )
            return
        if project_obj is None:
            raise CommandError(f"No project with slug {project!r}." if project else "--project is required.")
        if action == "list":
            for item in holds.holds_of(project_obj):
                state = "released" if item.released_at else "standing"
                self.stdout.write(
                    f"#{item.pk}\t{state}\t{item.describe()}\t{item.reason}\t"
                    f"{item.case_reference}\t{item.placed_at:%Y-%m-%d}\t{_storage_state(item)}"
                )
            return
        actor = self._actor(project_obj, by)
        budget = holds.INLINE_VERSIONS if background else None
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
                    budget=budget,
                )
            except ValidationError as exc:
                raise CommandError(" ".join(exc.messages)) from exc
            self._report(f"legal hold #{placed.pk} on {placed.describe()}", sweep, "placed")
            return
        for item in self._find(project_obj, hold, user, path, file):
            sweep = holds.hold_release(by=actor, hold=item, note=reason, budget=budget)
            self._report(f"legal hold #{item.pk} on {item.describe()}", sweep, "released")

    def _report(self, what: str, sweep, done: str) -> None:
        if sweep.finished:
            again = (
                " (the hold recorded before: no second one)" if sweep.existing and done == "placed" else ""
            )
            verb = "held" if done == "placed" else "released"
            self.stdout.write(
                self.style.SUCCESS(f"{done} {what}{again}: {sweep.versions} version(s) {verb} in storage")
            )
            if sweep.note:
                self.stdout.write(self.style.WARNING(sweep.note))
            return
        self.stdout.write(self.style.WARNING(f"{what}: {holds.sweep_summary(sweep)}"))
        if not (sweep.busy or sweep.background):
            # Recorded, refused over by the console, but not yet held by the storage everywhere:
            # a script must not take that for done.
            raise CommandError(f"{what} is not yet {done} in storage everywhere; run the same command again.")

    def _find(self, project, number, user, path, file):
        # A hold whose release stopped short is found again, so releasing it again finishes it.
        standing = holds.holds_of(project).filter(
            Q(released_at__isnull=True) | Q(state=LegalHold.State.RELEASING)
        )
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


def _storage_state(hold: LegalHold) -> str:
    """The storage's side, for `list`: placed, being placed (how far), released..."""
    failed = len((hold.sweep_cursor or {}).get("failed", []))
    if hold.state == LegalHold.State.PLACING:
        text = f"being placed: {hold.swept_versions} version(s) held so far"
        text += f", {failed} not yet" if failed else ""
        return text + (f" ({hold.sweep_error})" if hold.sweep_error else "")
    if hold.state == LegalHold.State.RELEASING:
        return f"being released: {hold.swept_versions} version(s) released so far"
    if hold.state == LegalHold.State.RELEASED:
        return "released in storage"
    if not hold.storage_enforced:
        return "placed: the console only (the bucket has no Object Lock)"
    return f"placed: {hold.swept_versions} version(s) held in storage"
