import json

from django.core.management.base import BaseCommand, CommandError

from projects.governance import isolation
from projects.memory import errors
from projects.models import Agent, Project
from projects.runners import credentials


class Command(BaseCommand):
    help = (
        "List objects no record owns, records whose object is missing, keys outside the "
        "layout and overlapping project prefixes. Read-only. --policy prints a project's "
        "(or with --agent, a runner's) IAM-style policy instead."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", help="Check only this project (slug).")
        parser.add_argument("--policy", action="store_true", help="Print the IAM policy JSON of --project.")
        parser.add_argument("--agent", help="With --policy: the policy of this agent's runner.")

    def handle(self, *args, project=None, policy=False, agent=None, **options):
        selected = None
        if project:
            selected = list(Project.objects.filter(slug=project))
            if not selected:
                raise CommandError(f"No project with slug {project!r}.")
        if policy:
            if not selected:
                raise CommandError("--policy needs --project.")
            if agent:
                found = Agent.objects.filter(project=selected[0], slug=agent).first()
                if found is None:
                    raise CommandError(f"No agent {agent!r} in {project}.")
                document = credentials.runner_policy(found)
            else:
                document = isolation.project_policy(selected[0])
            self.stdout.write(json.dumps(document, indent=2))
            return
        try:
            findings = isolation.check_and_record(selected, ran_by="manage.py check_isolation")
        except errors.StorageUnavailable as exc:
            raise CommandError(exc.message) from None
        for finding in findings:
            self.stdout.write(
                f"{finding.severity:8} {finding.kind:17} "
                f"s3://{finding.bucket}/{finding.key}  {finding.detail}"
            )
        broken = isolation.errors(findings)
        if broken:
            raise CommandError(f"{len(broken)} isolation finding(s)")
        warnings = len(findings) - len(broken)
        self.stdout.write(
            self.style.SUCCESS(
                "isolation intact: every object has an owner and every record its object"
                + (f" ({warnings} warning(s): leftovers that reconcile settles)" if warnings else "")
            )
        )
