from django.core.management.base import BaseCommand

from projects.management import naming
from projects.runners.consolidation import consolidate


class Command(BaseCommand):
    help = (
        "Propose consolidation of every project's memory (or one's): merge duplicate lines, fold "
        "stale episodic notes into a dated summary (with MGC_LLM_BASE_URL, the model's), mark "
        "contradictions for a person with both lines. Only proposes: nothing is written until "
        "a person approves. Safe to repeat; run it on a schedule (docs/DEPLOY.md)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", help="Project slug (default: every project).")
        parser.add_argument(
            "--agent", help="Agent slug (with --project): its files, the workspace, profiles."
        )
        parser.add_argument("--json", action="store_true", help="Print what was proposed as JSON.")

    def handle(self, *args, project=None, agent=None, json=False, **options):
        runs = [
            consolidate(project=item, agent=chosen) for item, chosen in naming.projects_chosen(project, agent)
        ]
        if json:
            self.stdout.write(naming.dumps([r.as_dict() for r in runs]))
            return
        for run in runs:
            jobs = {}
            for p in run.proposals:
                jobs[p["job"]] = jobs.get(p["job"], 0) + 1
            made = ", ".join(f"{job} {n}" for job, n in sorted(jobs.items())) or "nothing to propose"
            self.stdout.write(f"{run.project}\tproposed\t{made}")
            for p in run.proposals:
                self.stdout.write(f"\tproposal {p['id']}\t{p['job']}\t{p['path']}")
            if run.model["status"] != "off":
                reason = f" ({run.model['reason']})" if run.model.get("reason") else ""
                self.stdout.write(f"\tmodel\t{run.model['status']}{reason}\t{run.model['elapsed_ms']} ms")
            for line in run.skipped:
                self.stdout.write(f"\tskipped\t{line}")
