import datetime as dt
import json

from django.core.management.base import BaseCommand, CommandError
from django.utils.dateparse import parse_datetime

from projects.governance import restore


class Command(BaseCommand):
    help = (
        "After restoring the database and the bucket (docs/DEPLOY.md, section 8): report every "
        "disagreement between them (snapshots and their sha256, heads, kept prompts, the audit "
        "chain, legal holds in storage, what reconcile would adopt). What was written to the "
        "bucket after the dump is listed apart: reconcile adopts it. Exit status 1 on any "
        "disagreement."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--since",
            help="When the database dump began (ISO 8601, e.g. 2026-12-05T03:15:00Z); objects "
            "written later are 'after the dump'. Default: the newest moment the database records.",
        )
        parser.add_argument("--json", action="store_true", help="The report as JSON.")

    def handle(self, *args, since=None, json=False, **options):
        moment = None
        if since:
            moment = parse_datetime(since.replace("Z", "+00:00"))
            if moment is None:
                raise CommandError(f"--since: not an ISO 8601 date and time: {since!r}")
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=dt.UTC)
        report = restore.restore_check(since=moment)
        if json:
            self.stdout.write(_dumps(report.as_dict()))
        else:
            self._print(report)
        if not report.consistent:
            raise CommandError(
                f"{len(report.disagreements)} disagreement(s) between the database and the bucket"
            )

    def _print(self, report) -> None:
        self.stdout.write(f"restore check: the dump is taken as of {report.since.isoformat()}")
        by_check = {}
        for finding in report.disagreements:
            by_check.setdefault(finding.check, []).append(finding)
        labels = {
            "snapshots": "revision snapshots present with their sha256",
            "heads": "files whose head object is their recorded head",
            "prompts": "kept prompts matching their receipts",
            "audit": "audit events in an intact chain",
            "holds": "held versions carrying their S3 legal hold",
            "reconcile": "objects in the bucket owned by a record",
        }
        for check in restore.CHECKS:
            found = by_check.get(check, [])
            mark = "OK  " if not found else "FAIL"
            self.stdout.write(f"  {mark} {check:<10} {report.checked[check]:>6} checked: {labels[check]}")
            for finding in found:
                self.stdout.write(f"         {finding.project} {finding.key}: {finding.problem}")
        if report.after_dump:
            self.stdout.write(
                f"  written after the dump: {len(report.after_dump)} (manage.py reconcile adopts them)"
            )
            for finding in report.after_dump:
                self.stdout.write(f"         {finding.project} {finding.key}: {finding.problem}")
        if report.consistent:
            self.stdout.write(
                self.style.SUCCESS("consistent: no disagreement between the database and the bucket")
            )


def _dumps(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)
