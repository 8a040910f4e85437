from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from projects.errors import explain
from projects.memory.errors import StoreError
from projects.models import Agent, Membership
from projects.runners import context as prompt_context


class Command(BaseCommand):
    help = "Print the system prompt an agent's pre hook would receive (the same assembly)."

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="Project slug.")
        parser.add_argument("--agent", required=True, help="Agent slug.")
        parser.add_argument("--user", help="Username of the employee (optional).")
        parser.add_argument("--at", default="", help="Assemble as of YYYY-MM-DDTHH:MM[:SS] (UTC).")
        parser.add_argument(
            "--stats", action="store_true", help="Print the sections and token counts to stderr."
        )

    def handle(self, *args, project, agent, user=None, at="", stats=False, **options):
        found = Agent.objects.select_related("project").filter(project__slug=project, slug=agent).first()
        if found is None:
            raise CommandError(f"No agent {agent!r} in project {project!r}.")
        person = None
        if user:
            person = get_user_model().objects.filter(username=user).first()
            if person is None or not Membership.objects.filter(user=person, project=found.project).exists():
                raise CommandError(f"No member {user!r} in project {project!r}.")
        try:
            moment = prompt_context.parse_moment(at)
            assembly = prompt_context.build_context(agent=found, user=person, at=moment)
        except ValidationError as exc:
            raise CommandError(explain(exc)) from exc
        except StoreError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(assembly.prompt, ending="")
        if stats:
            for section in assembly.sections:
                files = ", ".join(f"{f.path}@r{f.revision}" for f in section.files) or "-"
                self.stderr.write(
                    f"{section.tag}\t{section.tokens}\t{'truncated' if section.truncated else ''}\t{files}"
                )
            self.stderr.write(
                f"total\t{assembly.total_tokens}\t{assembly.tokenizer}\tsha256 {assembly.sha256}"
            )
