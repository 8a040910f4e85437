from django.core.management.base import BaseCommand, CommandError

from projects.memory import errors, lineage
from projects.models import LineMap, MemoryFile


class Command(BaseCommand):
    help = (
        "Fill in the line maps (where each line came from) that older history lacks, from S3. "
        "Every save records its own, and the upgrade's migration fills in what the search copies "
        "allow; the first blame of a file fills the rest. Run this once after upgrading to do "
        "that ahead of time, e.g. for histories saved before search existed."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", help="Only this project (slug).")

    def handle(self, *args, project=None, **options):
        files = MemoryFile.objects.filter(head__isnull=False).select_related("head", "project").order_by("pk")
        if project:
            files = files.filter(project__slug=project)
        maps = LineMap.objects.filter(file__project__slug=project) if project else LineMap.objects.all()
        before, done = maps.count(), 0
        for file in files.iterator(chunk_size=200):
            try:
                added = lineage.fill_file(file)
            except errors.StoreError as exc:
                raise CommandError(
                    f"{file.display_path}: {exc.message} ({maps.count() - before} map(s) stored before that)"
                ) from None
            if added:
                done += 1
                self.stderr.write(f"{file.project.slug} {file.display_path}: {added} filled in")
        # (A file a rename brought lines from is filled in with the file it went to.)
        self.stdout.write(self.style.SUCCESS(f"{maps.count() - before} line map(s) stored, {done} file(s)"))
