"""The events worker: django-tasks-db's database worker on the `events` queue (and the
`subjects` queue: subjects' requests' long work, governance/subject_jobs.py), plus the outbox
relay in a thread beside it (projects/events/delivery.py) and, every
MGC_SUBJECT_REMIND_SECONDS, the subjects' requests' reminders (sent once each however many
workers run). Run as many as you like, on any hosts: tasks and events are each taken by one
worker at a time."""

import logging
import threading
import time

from django.conf import settings
from django.db import close_old_connections, connection
from django_tasks_db.management.commands.db_worker import Command as DatabaseWorker

from projects.events import delivery
from projects.events.tasks import QUEUE
from projects.governance import subject_jobs, subjects

log = logging.getLogger("projects.events")


class Command(DatabaseWorker):
    help = (
        "Deliver webhooks and audit streams: run the events queue (Django Tasks, database "
        "backend) and relay due outbox events onto it."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.set_defaults(
            queue_name=f"{QUEUE},{subject_jobs.QUEUE}",
            reload=False,
            interval=settings.MGC_EVENTS_POLL_SECONDS,
        )
        parser.add_argument(
            "--no-relay",
            action="store_true",
            help="Only run tasks; another worker relays the outbox and sends the reminders.",
        )

    def handle(self, *args, no_relay=False, **options):
        if not no_relay:
            threading.Thread(target=_relay_forever, name="outbox-relay", daemon=True).start()
            threading.Thread(target=_remind_forever, name="subject-reminders", daemon=True).start()
        super().handle(*args, **options)


def _relay_forever() -> None:
    while True:
        try:
            close_old_connections()
            delivery.relay()
        except Exception:  # a database hiccup: log it, keep relaying
            log.exception("outbox relay failed; trying again")
            connection.close()
        time.sleep(settings.MGC_EVENTS_POLL_SECONDS)


def _remind_forever() -> None:
    while True:
        try:
            close_old_connections()
            sent = subjects.reminders_send()
            if sent["due_soon"] or sent["overdue"]:
                log.info("subject request reminders sent: %s", sent)
        except Exception:  # a database hiccup: log it, try at the next round
            log.exception("subject request reminders failed; trying again")
            connection.close()
        time.sleep(settings.MGC_SUBJECT_REMIND_SECONDS)
