"""What the commands share: the project, person, agent and file a command line names (blame,
carried, scan_memory), the projects and agent `--project`/`--agent` choose (memory_health,
consolidate), what is said about a profile that was erased, and JSON as they print it."""

from __future__ import annotations

import json

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from projects.memory import records
from projects.models import Agent, AuditEvent, MemoryFile, Project


def add_file_arguments(parser) -> None:
    parser.add_argument("--project", required=True, help="Project slug.")
    parser.add_argument(
        "--path",
        required=True,
        help="workspace/<path>.md, USER.md (with --user), SOUL.md/AGENTS.md/TOOLS.md (with --agent), "
        "or the path as pages show it (users/<name>/USER.md, agents/<slug>/SOUL.md).",
    )
    parser.add_argument("--user", help="Username, for USER.md.")
    parser.add_argument("--agent", help="Agent slug, for SOUL.md, AGENTS.md, TOOLS.md.")


def project_named(slug: str) -> Project:
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise CommandError(f"No project {slug!r}.")
    return project


def projects_chosen(project_slug: str | None, agent_slug: str | None) -> list[tuple[Project, Agent | None]]:
    """The projects `--project` names (every live one without it), each with the agent `--agent`
    names in it (None without it); CommandError for a name that is not there."""
    projects = Project.objects.filter(archived_at__isnull=True).order_by("slug")
    if project_slug:
        projects = Project.objects.filter(slug=project_slug)
        if not projects.exists():
            raise CommandError(f"No project with slug {project_slug!r}.")
    elif agent_slug:
        raise CommandError("--agent needs --project.")
    chosen = []
    for project in projects:
        agent = None
        if agent_slug:
            agent = Agent.objects.filter(project=project, slug=agent_slug).first()
            if agent is None:
                raise CommandError(f"No agent {agent_slug!r} in {project.slug}.")
        chosen.append((project, agent))
    return chosen


def dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


def file_named(project: Project, path: str, username: str | None, agent_slug: str | None):
    """(the file, the person named) or CommandError; the file is None when the person's
    profile was erased (the caller says what is left)."""
    user = agent = None
    if username:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}.")
    if agent_slug:
        agent = Agent.objects.filter(project=project, slug=agent_slug).first()
        if agent is None:
            raise CommandError(f"No agent {agent_slug!r} in project {project.slug!r}.")
    file = records.file_by_path(project=project, path=path, user=user, agent=agent)
    if file is None:
        if user is not None and path.rsplit("/", 1)[-1] == "USER.md" and erasure_of(project, user):
            return None, user
        raise CommandError(f"No file {path!r} in project {project.slug!r}" + _hint(path, user, agent) + ".")
    return file, user


def _hint(path: str, user, agent) -> str:
    name = path.rsplit("/", 1)[-1]
    if name == "USER.md" and user is None:
        return " (USER.md needs --user)"
    if name in ("SOUL.md", "AGENTS.md", "TOOLS.md") and agent is None:
        return f" ({name} needs --agent)"
    return ""


def erasure_of(project: Project, user) -> AuditEvent | None:
    """The audit tombstone of the person's profile erasure in the project, if any."""
    return (
        AuditEvent.objects.filter(project=project, action="profile.erase", details__user_id=user.pk)
        .order_by("-created_at")
        .first()
    )


def erased_note(project: Project, user) -> str:
    event = erasure_of(project, user)
    return (
        f"users/{user.get_username()}/USER.md was erased on {event.created_at:%Y-%m-%d %H:%M} UTC "
        f"by {event.actor_label} ({event.details.get('revisions', '?')} revisions): its lines are not kept."
    )


def file_label(file: MemoryFile) -> str:
    return file.display_path
