"""Provider groups mapped to project roles, from the command line: the same service as the
project's Provider groups page, audited (as the account named with --by, else the console).

    group_mapping                                        # list: group, project, role
    group_mapping --set sre=incident-analysis:employee   # add or change (repeatable)
    group_mapping --delete sre=incident-analysis         # remove (repeatable)
"""

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from projects.governance import groups
from projects.models import GroupMapping, Membership, Project


class Command(BaseCommand):
    help = "List, set (GROUP=PROJECT:ROLE) or delete (GROUP=PROJECT) provider group mappings."

    def add_arguments(self, parser):
        parser.add_argument("--set", action="append", default=[], metavar="GROUP=PROJECT:ROLE")
        parser.add_argument("--delete", action="append", default=[], metavar="GROUP=PROJECT")
        parser.add_argument("--by", help="the admin's username recorded in the audit trail")

    def handle(self, *args, set=(), delete=(), by=None, **options):  # noqa: A002 - the option's name
        admin = get_user_model().objects.filter(username=by).first() if by else None
        if by and admin is None:
            raise CommandError(f"No account {by}.")
        for spec in set:
            group, project, role = self._parse(spec, with_role=True)
            mapping = GroupMapping.objects.filter(project=project, group=group).first()
            if mapping is None or mapping.role != role:
                try:
                    mapping = groups.mapping_save(
                        by=admin, project=project, group=group, role=role, mapping=mapping
                    )
                except ValidationError as exc:
                    raise CommandError(exc.messages[0]) from None
            self.stdout.write(str(mapping))
        for spec in delete:
            group, project, _ = self._parse(spec, with_role=False)
            mapping = GroupMapping.objects.filter(project=project, group=group).first()
            if mapping is not None:
                groups.mapping_delete(by=admin, mapping=mapping)
            self.stdout.write(f"group {group} is not mapped in {project.slug}")
        if not (set or delete):
            for mapping in GroupMapping.objects.select_related("project"):
                self.stdout.write(f"{mapping.group}\t{mapping.project.slug}\t{mapping.role}")

    def _parse(self, spec: str, *, with_role: bool):
        group, _, target = spec.rpartition("=")
        slug, _, role = target.partition(":") if with_role else (target, "", "")
        if not group or not slug or (with_role and role not in Membership.Role.values):
            shape = (
                "GROUP=PROJECT:ROLE (role: admin, compliance or employee)" if with_role else "GROUP=PROJECT"
            )
            raise CommandError(f"{spec!r}: expected {shape}")
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"No project {slug}.")
        return group, project, role
