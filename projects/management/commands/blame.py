import json

from django.core.management.base import BaseCommand, CommandError

from projects.management import naming
from projects.memory import blame
from projects.memory.errors import StoreError
from projects.models import Revision


class Command(BaseCommand):
    help = (
        "For each line of a memory file (its head, or --revision N): the revision that introduced "
        "it, its author, agent session and time. --json prints one object per line."
    )

    def add_arguments(self, parser):
        naming.add_file_arguments(parser)
        parser.add_argument("--revision", type=int, help="Revision number (default: the head).")
        parser.add_argument(
            "--json",
            action="store_true",
            dest="as_json",
            help="One JSON object per line: line, text, revision, author, author_kind, session, at.",
        )

    def handle(self, *args, project, path, user=None, agent=None, revision=None, as_json=False, **options):
        found = naming.project_named(project)
        file, person = naming.file_named(found, path, user, agent)
        if file is None:
            raise CommandError(naming.erased_note(found, person))
        chosen = file.head
        if revision is not None:
            chosen = Revision.objects.filter(file=file, number=revision).first()
            if chosen is None:
                raise CommandError(f"{file.display_path} has no revision {revision}.")
        if chosen is None:
            raise CommandError(f"{file.display_path} has no revision yet.")
        if chosen.is_deletion:
            raise CommandError(
                f"{file.display_path} has no lines at revision {chosen.number}: it was deleted there."
            )
        try:
            result = blame.blame(file, chosen)
        except StoreError as exc:
            raise CommandError(exc.message) from exc
        if result.text_error:
            self.stderr.write(
                f"The text could not be read ({result.text_error}); lines are shown without it."
            )
        elif result.text_gone:
            self.stderr.write(
                f"The text of revision {chosen.number} is not kept (expired or erased): who and when only."
            )
        for line in result.lines:
            self.stdout.write(_as_json(line) if as_json else _as_text(file, line))


def _fields(line) -> dict:
    revision = line.origin.revision
    return {
        "line": line.number,
        "text": line.text,
        "revision": revision.number or None,
        "author": revision.author_shown if revision.number else None,
        "author_kind": revision.author_kind if revision.number else None,
        "session": revision.session_ref or None,
        "at": revision.created_at.isoformat() if revision.created_at else None,
    }


def _as_json(line) -> str:
    return json.dumps(_fields(line), ensure_ascii=False)


def _as_text(file, line) -> str:
    fields = _fields(line)
    origin = line.origin
    where = f"r{fields['revision']}"
    if origin.revision.number and origin.revision.file_id != file.pk:  # brought by a rename
        where += f" of {origin.revision.file.source_path}"
    when = origin.revision.created_at.strftime("%Y-%m-%d %H:%M") if origin.revision.created_at else "?"
    session = f" session {fields['session'][:8]}" if fields["session"] else ""
    marks = "".join([" [held]" if origin.held else "", " [may be older]" if origin.approximate else ""])
    tools = ""
    if origin.tool_calls:
        tools = " after " + ", ".join(
            c.name + (f" ({c.resource})" if c.resource else "") for c in origin.tool_calls
        )
    text = "(text not kept)" if line.text is None else line.text
    return f"{line.number:>5} {where:>6} {when} {fields['author']}{session}{marks}{tools} | {text}"
