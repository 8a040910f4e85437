"""The events worker's task (Django's Tasks framework; `manage.py events_worker` runs them)."""

from django.tasks import task

from projects.events import delivery

QUEUE = "events"


@task(queue_name=QUEUE, takes_context=True)
def deliver_event(context, outbox_id: int) -> str:
    """One attempt at one outbox event (a no-op when it is not due or another worker has it),
    under the name of the worker running it."""
    worker_ids = context.task_result.worker_ids
    return delivery.deliver(outbox_id, worker=worker_ids[-1] if worker_ids else None)
