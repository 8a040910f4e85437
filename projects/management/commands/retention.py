import datetime as dt

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from projects.audit import Actor, audit_prune
from projects.governance import retention
from projects.memory.errors import StoreError
from projects.models import Project


class Command(BaseCommand):
    help = (
        "Apply the projects' retention rules (what a legal hold covers is skipped), or with "
        "--dry-run print what they would expire today and in the next 30 days. Safe to "
        "repeat, and to stop: the next run finishes what a stopped one began. Run it on a "
        "schedule (docs/DEPLOY.md)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", help="Project slug (default: every project).")
        parser.add_argument("--dry-run", action="store_true", help="Print the preview; change nothing.")

    def handle(self, *args, project=None, dry_run=False, **options):
        projects = Project.objects.order_by("slug")
        if project:
            projects = projects.filter(slug=project)
            if not projects.exists():
                raise CommandError(f"No project with slug {project!r}.")
        now = timezone.now()
        for item in projects:
            try:
                if dry_run:
                    self._preview(item, now)
                else:
                    run = retention.apply(item, now=now, ran_by="retention command")
                    counts = ", ".join(f"{k} {v}" for k, v in run.as_dict().items())
                    self.stdout.write(f"{item.slug}\tapplied\t{counts}")
                    for refusal in run.refused:
                        self.stdout.write(f"{item.slug}\theld\t{refusal}")
            except StoreError as exc:
                raise CommandError(f"{item.slug}: {exc.message} Run it again to finish.") from exc
        days = settings.MGC_AUDIT_RETENTION_DAYS
        if days and not project:
            before = now - dt.timedelta(days=days)
            if dry_run:
                self.stdout.write(f"audit\twould prune events older than {before:%Y-%m-%d}")
            else:
                pruned = audit_prune(before=before, by=Actor.system("retention command"))
                self.stdout.write(f"audit\tpruned {pruned} event(s) older than {before:%Y-%m-%d}")

    def _preview(self, project: Project, now) -> None:
        rows = retention.preview(project, now=now)
        if not rows:
            self.stdout.write(f"{project.slug}\tno retention rules")
        for row in rows:
            rule = row["rule"].describe()
            self.stdout.write(
                f"{project.slug}\t{rule}\ttoday {row['today'].count}\tnext "
                f"{retention.PREVIEW_DAYS} days {row['soon_count']}\theld "
                f"{row['held']}"
            )
            for item in row["today"].due:
                self.stdout.write(f"\ttoday\t{item.label}\t{item.count}")
            for item in row["soon"]:
                self.stdout.write(f"\t{item.due:%Y-%m-%d}\t{item.label}\t{item.count}")
