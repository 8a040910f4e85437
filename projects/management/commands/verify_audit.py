from django.core.management.base import BaseCommand, CommandError

from projects.audit import audit_verify
from projects.models import AuditEvent


class Command(BaseCommand):
    help = "Check the audit trail's hash chain: edited or deleted events are reported."

    def handle(self, *args, **options):
        problems = audit_verify()
        for problem in problems:
            self.stderr.write(problem)
        if problems:
            raise CommandError(f"audit trail is NOT intact: {len(problems)} problem(s)")
        self.stdout.write(self.style.SUCCESS(f"audit trail intact: {AuditEvent.objects.count()} event(s)"))
