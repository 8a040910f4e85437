import os
import secrets

from django.core.management.base import BaseCommand, CommandError

from projects.demo.seed import demo_seed
from projects.memory.errors import StoreError
from projects.models import Project


class Command(BaseCommand):
    help = (
        "Create demo projects (incident analysis, tenders, daily reports), agents, people "
        "and memory files; print the demo password."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--password",
            default=os.environ.get("MGC_DEMO_PASSWORD", ""),
            help="Password for the demo users (default: a new random one).",
        )
        parser.add_argument(
            "--if-empty",
            action="store_true",
            help="Seed only when there is no project yet (make demo keeps the memory of earlier runs).",
        )

    def handle(self, *args, password="", if_empty=False, **options):
        if if_empty and Project.objects.exists():
            self.stdout.write("Projects exist: keeping the memory of earlier runs.")
            return
        password = password or secrets.token_urlsafe(12)
        try:
            done = demo_seed(password=password)
        except StoreError as exc:
            raise CommandError(exc.message) from exc
        for line in done:
            self.stdout.write(line)
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo users: admin, compliance, employee (also ivan.petrov, anna.smirnova). "
                f"Password: {password}"
            )
        )
