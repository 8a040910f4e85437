from django.core.management.base import BaseCommand, CommandError

from projects.memory import errors, indexing, reading
from projects.models import MemoryFile


class Command(BaseCommand):
    help = (
        "Build the search copy of every file's current text from S3. Saves keep it up to "
        "date; run this once for files saved before search existed, or after a restore."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", help="Only this project (slug).")

    def handle(self, *args, project=None, **options):
        files = MemoryFile.objects.filter(head__isnull=False, head__is_deletion=False).select_related(
            "head", "project"
        )
        if project:
            files = files.filter(project__slug=project)
        done = 0
        try:
            for file in files.iterator(chunk_size=500):
                indexing.index_head(file, reading.revision_read(file.head))
                done += 1
        except errors.StoreError as exc:
            raise CommandError(f"{exc.message} ({done} file(s) indexed before that)") from None
        self.stdout.write(self.style.SUCCESS(f"indexed {done} file(s)"))
