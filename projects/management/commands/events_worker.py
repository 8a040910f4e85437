"""The events worker: django-tasks-db's database worker on the `events` queue, plus the
outbox relay in a thread beside it (projects/events/delivery.py). Run as many as you like,
on any hosts: tasks and events are each taken by one worker at a time."""

import logging
import threading
import time

from django.conf import settings
from django.db import close_old_connections, connection
from django_tasks_db.management.commands.db_worker import Command as DatabaseWorker

from projects.events import delivery
from projects.events.tasks import QUEUE

log = logging.getLogger("projects.events")


class Command(DatabaseWorker):
    help = (
        "Deliver webhooks and audit streams: run the events queue (Django Tasks, database "
        "backend) and relay due outbox events onto it."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.set_defaults(queue_name=QUEUE, reload=False, interval=settings.MGC_EVENTS_POLL_SECONDS)
        parser.add_argument(
            "--no-relay", action="store_true", help="Only run tasks; another worker relays the outbox."
        )

    def handle(self, *args, no_relay=False, **options):
        if not no_relay:
            threading.Thread(target=_relay_forever, name="outbox-relay", daemon=True).start()
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
