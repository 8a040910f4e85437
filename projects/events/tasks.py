"""The events worker's task (Django's Tasks framework; `manage.py events_worker` runs them)."""

from django.tasks import task

from projects.events import delivery

QUEUE = "events"


@task(queue_name=QUEUE)
def deliver_event(outbox_id: int) -> str:
    """One attempt at one outbox event (a no-op when it is not due or another worker has it)."""
    return delivery.deliver(outbox_id)
