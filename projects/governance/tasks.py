"""The legal holds' background task (Django's Tasks framework, on the queue `manage.py
events_worker` runs beside the events': one worker process for both, see docs/DEPLOY.md)."""

from django.tasks import task

from projects.governance import holds

QUEUE = "holds"


@task(queue_name=QUEUE)
def sweep_hold(hold_id: int) -> str:
    """A few listing pages of a hold's storage sweep; the next task takes the rest."""
    return holds.hold_continue(hold_id)
