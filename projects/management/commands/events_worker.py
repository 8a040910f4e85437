"""The events worker: django-tasks-db's database worker on the `events` and `holds` queues,
plus two threads beside it: the outbox relay (projects/events/delivery.py) and the legal
holds' watch (projects/governance/holds.py, projects/memory/holding.py). Run as many as you
like, on any hosts: tasks, events and holds' sweeps are each taken by one worker at a time."""

import logging
import threading
import time

from django.conf import settings
from django.db import close_old_connections, connection
from django_tasks_db.management.commands.db_worker import Command as DatabaseWorker

from projects.events import delivery
from projects.events.tasks import QUEUE
from projects.governance import holds
from projects.governance.tasks import QUEUE as HOLDS_QUEUE
from projects.memory.holding import FeedHolder

log = logging.getLogger("projects.events")

# How often the holds' watch reads which keys the standing holds cover, so the change feed
# holds a direct write under a hold placed a moment ago.
HOLDS_REFRESH_SECONDS = 2.0


class Command(DatabaseWorker):
    help = (
        "Deliver webhooks and audit streams, and sweep legal holds: run the events and holds "
        "queues (Django Tasks, database backend), relay due outbox events onto the first, and "
        "hold versions written past the console under a standing hold."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.set_defaults(
            queue_name=f"{QUEUE},{HOLDS_QUEUE}", reload=False, interval=settings.MGC_EVENTS_POLL_SECONDS
        )
        parser.add_argument(
            "--no-relay", action="store_true", help="Only run tasks; another worker relays the outbox."
        )
        parser.add_argument(
            "--no-holds", action="store_true", help="Do not watch legal holds (another worker does)."
        )

    def handle(self, *args, no_relay=False, no_holds=False, **options):
        if not no_relay:
            threading.Thread(target=_relay_forever, name="outbox-relay", daemon=True).start()
        if not no_holds:
            threading.Thread(target=_holds_forever, name="holds-watch", daemon=True).start()
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
