from django.core.management.base import BaseCommand, CommandError

from projects.memory.errors import StoreError
from projects.memory.reconcile import reconcile
from projects.models import Project
from projects.runners import idempotency


class Command(BaseCommand):
    help = (
        "Repair half-done saves, record changes written to S3 directly as 'external' "
        "revisions, adopt new files found in storage, delete orphan snapshots, and forget "
        "expired idempotency keys."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", help="Project slug (default: every project).")
        parser.add_argument(
            "--orphan-grace",
            type=int,
            default=600,
            help="Seconds an unreferenced snapshot is left alone (default 600).",
        )

    def handle(self, *args, project=None, orphan_grace=600, **options):
        projects = Project.objects.all()
        if project:
            projects = projects.filter(slug=project)
            if not projects.exists():
                raise CommandError(f"No project with slug {project!r}.")
        total = 0
        for item in projects:
            try:
                findings = reconcile(project=item, orphan_grace_seconds=orphan_grace)
            except StoreError as exc:
                raise CommandError(f"{item.slug}: {exc.message}") from exc
            for finding in findings:
                self.stdout.write(f"{item.slug}\t{finding.kind}\t{finding.key}\t{finding.detail}")
            total += len(findings)
        forgotten = idempotency.forget_expired()
        self.stdout.write(
            self.style.SUCCESS(
                f"reconcile: {total} finding(s); {forgotten} expired idempotency record(s) forgotten"
            )
        )
