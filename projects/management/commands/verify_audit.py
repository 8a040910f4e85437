from django.core.management.base import BaseCommand, CommandError

from projects.audit import audit_check


class Command(BaseCommand):
    help = (
        "Check the audit trail's hash chain: edited or deleted events are reported. Safe while "
        "the console writes: the chain is checked as it stood when the check began."
    )

    def handle(self, *args, **options):
        found = audit_check()
        for problem in found.problems:
            self.stderr.write(problem)
        if found.problems:
            raise CommandError(f"audit trail is NOT intact: {len(found.problems)} problem(s)")
        self.stdout.write(
            self.style.SUCCESS(f"audit trail intact: {found.events} event(s), through event {found.through}")
        )
