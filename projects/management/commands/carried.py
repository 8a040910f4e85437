import json

from django.core.management.base import BaseCommand, CommandError

from projects.management import naming
from projects.memory import carried
from projects.memory.errors import StoreError
from projects.models import MemoryFile, Revision, SessionFile


class Command(BaseCommand):
    help = (
        "The sessions whose prompts carried a revision of a memory file, or one line of it "
        "(--line K): a line still in the file counts every session since it was written, a line "
        "removed in revision M the sessions that received revisions from its first up to M-1."
    )

    def add_arguments(self, parser):
        naming.add_file_arguments(parser)
        parser.add_argument("--revision", type=int, required=True, help="Revision number.")
        parser.add_argument("--line", type=int, help="Line number in that revision (1-based).")
        parser.add_argument(
            "--json",
            action="store_true",
            dest="as_json",
            help="One JSON object per session: session, agent, user, at, path, revision, section, cut.",
        )

    def handle(
        self, *args, project, path, revision, user=None, agent=None, line=None, as_json=False, **options
    ):
        found = naming.project_named(project)
        file, person = naming.file_named(found, path, user, agent)
        if file is None:  # an erased profile: who was told, and when, is all that is left
            if line is not None:
                raise CommandError(naming.erased_note(found, person))
            self.stderr.write(naming.erased_note(found, person) + " Sessions that received it:")
            carried.index_sessions()
            live = MemoryFile.objects.filter(project=found).values("pk")
            rows = (
                SessionFile.objects.filter(
                    session__agent__project=found,
                    session__user=person,
                    path="USER.md",
                    revision=revision,
                )
                .exclude(file_ref__in=live)
                .select_related("session", "session__agent", "session__user")
                .order_by("-created_at", "-pk")
            )
            self._print(rows, as_json)
            return
        if not Revision.objects.filter(file=file, number=revision).exists():
            raise CommandError(f"{file.display_path} has no revision {revision}.")
        try:
            result = carried.carried(file, revision=revision, line=line)
        except ValueError as exc:
            raise CommandError(f"{file.display_path}: {exc}.") from exc
        except StoreError as exc:
            raise CommandError(exc.message) from exc
        if line is not None:
            spans = "; ".join(
                f"{s.path} r{s.first}" + (f"-r{s.last}" if s.last != s.first else "") for s in result.spans
            )
            origin = result.origin
            self.stderr.write(
                f"line {line} of r{revision}: introduced in r{origin.number if origin else '?'}"
                f"{' of ' + origin.file.source_path if origin and origin.file_id != file.pk else ''};"
                f" held by {spans or 'no revision'}"
            )
        self._print(result.sessions, as_json)

    def _print(self, rows, as_json: bool) -> None:
        count = 0
        for row in rows.iterator(chunk_size=500):
            count += 1
            session = row.session
            fields = {
                "session": str(session.pk),
                "agent": session.agent.slug,
                "user": session.user.get_username() if session.user_id else None,
                "at": row.created_at.isoformat(),
                "path": row.path,
                "revision": row.revision,
                "section": row.tag,
                "cut": row.cut,
            }
            if as_json:
                self.stdout.write(json.dumps(fields, ensure_ascii=False))
            else:
                self.stdout.write(
                    f"{row.created_at:%Y-%m-%d %H:%M:%S} {fields['session']} {fields['agent']} "
                    f"for {fields['user'] or '-'}: {row.path} r{row.revision} in <{row.tag}>"
                    + (" (section cut)" if row.cut else "")
                )
        if not as_json:
            self.stderr.write(f"{count} session{'s' if count != 1 else ''}")
