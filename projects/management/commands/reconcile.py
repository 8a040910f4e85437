from django.core.management.base import BaseCommand, CommandError

from projects.governance import holds
from projects.memory.errors import StoreError
from projects.memory.reconcile import reconcile
from projects.models import Project
from projects.runners import idempotency


class Command(BaseCommand):
    help = (
        "Finish legal holds whose storage sweep stopped short and hold what was written to S3 "
        "directly under a standing hold; repair half-done saves, record changes written to S3 "
        "directly as 'external' revisions, adopt new files found in storage, delete orphan "
        "snapshots, and forget expired idempotency keys."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", help="Project slug (default: every project).")
        parser.add_argument(
            "--orphan-grace",
            type=int,
            default=600,
            help=(
                "Seconds an unreferenced snapshot is left alone (default 600): a save still "
                "running writes its snapshot before it commits."
            ),
        )

    def handle(self, *args, project=None, orphan_grace=600, **options):
        projects = Project.objects.all()
        if project:
            projects = projects.filter(slug=project)
            if not projects.exists():
                raise CommandError(f"No project with slug {project!r}.")
        unfinished = 0
        for hold, sweep in holds.holds_settle(projects.first() if project else None):
            if sweep.finished and not sweep.changed:
                continue  # nothing was left to do
            if sweep.finished and not sweep.releasing:
                line = f"{sweep.changed} version(s) held in storage now ({sweep.versions} in all)"
            else:
                line = holds.sweep_summary(sweep)
                unfinished += not sweep.finished
            self.stdout.write(f"{hold.project.slug}\tlegal_hold\t#{hold.pk}\t{line}")
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
        if unfinished:
            raise CommandError(f"{unfinished} legal hold(s) not yet swept to the end; run reconcile again.")
