"""The events worker: django-tasks-db's database worker on the `events`, `holds`, `subjects`
and `scans` (poisoning scans, governance/poison_scans.py) and `jobs` queues (the last: erasures
and retention runs started from a page, governance/jobs.py), plus threads beside it: the outbox
relay (projects/events/delivery.py, which also queues again a job whose worker died, and the
sweep that stores pre hooks' prompts a console process kept but did not store, memory/receipts.py), the
legal holds' watch (projects/governance/holds.py, projects/memory/holding.py) and, every
MGC_SUBJECT_REMIND_SECONDS, the subjects' requests' reminders (governance/subjects.py; sent once
each however many workers run; their long work is on the `subjects` queue,
governance/subject_jobs.py). Run as many as you like, on any hosts: tasks, events and holds'
sweeps are each taken by one worker at a time."""

import logging
import threading
import time

from django.conf import settings
from django.db import close_old_connections, connection
from django_tasks_db.management.commands.db_worker import Command as DatabaseWorker

from projects.events import delivery
from projects.events.tasks import QUEUE
from projects.governance import holds, jobs, poison_scans, subject_jobs, subjects
from projects.governance.tasks import QUEUE as HOLDS_QUEUE
from projects.memory import receipts
from projects.memory.holding import FeedHolder

log = logging.getLogger("projects.events")

# How often the holds' watch reads which keys the standing holds cover, so the change feed
# holds a direct write under a hold placed a moment ago.
HOLDS_REFRESH_SECONDS = 2.0


class Command(DatabaseWorker):
    help = (
        "Deliver webhooks and audit streams, sweep legal holds, run erasures and retention runs "
        "started from a page, and send subjects' requests' reminders: run the events, holds, "
        "subjects and jobs queues (Django Tasks, database backend), "
        "relay due outbox events onto the first, and hold versions written past the console "
        "under a standing hold."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.set_defaults(
            queue_name=f"{QUEUE},{HOLDS_QUEUE},{subject_jobs.QUEUE},{poison_scans.QUEUE},{jobs.QUEUE}",
            reload=False,
            interval=settings.MGC_EVENTS_POLL_SECONDS,
        )
        parser.add_argument(
            "--no-relay",
            action="store_true",
            help="Only run tasks; another worker relays the outbox and sends the reminders.",
        )
        parser.add_argument(
            "--no-holds", action="store_true", help="Do not watch legal holds (another worker does)."
        )

    def handle(self, *args, no_relay=False, no_holds=False, **options):
        if not no_relay:
            threading.Thread(target=_relay_forever, name="outbox-relay", daemon=True).start()
            threading.Thread(target=_remind_forever, name="subject-reminders", daemon=True).start()
        if not no_holds:
            threading.Thread(target=_holds_forever, name="holds-watch", daemon=True).start()
        super().handle(*args, **options)


def _relay_forever() -> None:
    while True:
        try:
            close_old_connections()
            delivery.relay()
            jobs.jobs_due()
            receipts.pending_sweep()  # prompts a console process kept but died before storing
        except Exception:  # a database hiccup: log it, keep relaying
            log.exception("outbox relay failed; trying again")
            connection.close()
        time.sleep(settings.MGC_EVENTS_POLL_SECONDS)


def _holds_forever() -> None:
    """Every MGC_HOLD_SWEEP_SECONDS, queue the sweeps legal holds need (a placement or release
    that stopped short, versions written past the console since a hold's last sweep); every
    few seconds, tell the change feed (where configured) which keys the standing holds cover,
    so it holds a direct write there as it is reported."""
    feed = FeedHolder()
    last_due = 0.0
    while True:
        try:
            close_old_connections()
            feed.refresh()
            if time.monotonic() - last_due >= settings.MGC_HOLD_SWEEP_SECONDS:
                holds.holds_due()
                last_due = time.monotonic()
        except Exception:  # a database or storage hiccup: log it, keep watching
            log.exception("legal holds' watch failed; trying again")
            connection.close()
        time.sleep(min(HOLDS_REFRESH_SECONDS, settings.MGC_HOLD_SWEEP_SECONDS))


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
