"""The governance's background tasks (Django's Tasks framework, on the queues `manage.py
events_worker` runs beside the events': one worker process for all, see docs/DEPLOY.md): the
legal holds' sweeps, and the long actions a page queued (governance/jobs.py)."""

from django.tasks import task

from projects.governance import holds, jobs

QUEUE = "holds"


@task(queue_name=QUEUE)
def sweep_hold(hold_id: int) -> str:
    """A few listing pages of a hold's sweep; the next task takes the rest."""
    return holds.hold_continue(hold_id)


@task(queue_name=jobs.QUEUE)
def run_job(job_id: int) -> str:
    """An erasure or a retention run a page queued, to its end (or to its failure)."""
    return jobs.job_run(job_id)
