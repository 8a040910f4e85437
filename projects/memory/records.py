"""The records of memory files: found by path, and made when a file is first named (before any
content is written), new workspace names checked against look-alikes of existing ones."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from projects.memory import layout, lookalikes
from projects.models import Agent, Lock, MemoryFile, Project


def file_lookup(
    *, project: Project, scope: str, agent: Agent | None = None, user=None, path: str
) -> MemoryFile | None:
    key = layout.file_key(
        project.prefix,
        scope,
        agent_id=agent.pk if agent else None,
        user_id=user.pk if user else None,
        path=path,
    )
    return (
        MemoryFile.objects.select_related("head", "project", "agent", "user")
        .filter(project=project, key=key)
        .first()
    )


def file_by_display_path(*, project: Project, path: str) -> MemoryFile | None:
    """The project's file a person names by the path pages show (MemoryFile.display_path):
    workspace/<path>, agents/<agent>/<SOUL.md|AGENTS.md|TOOLS.md>, users/<username>/USER.md.
    None for anything else."""
    path = layout.nfc(path.strip().strip("/"))
    files = MemoryFile.objects.select_related("head", "project", "agent", "user").filter(project=project)
    prefix = f"{layout.SCOPE_WORKSPACE}/"
    if path.startswith(prefix):
        return files.filter(scope=MemoryFile.Scope.WORKSPACE, path=path[len(prefix) :]).first()
    owner, _, name = path.partition("/")
    whose, _, name = name.partition("/")
    if owner == "agents" and whose and name:
        return files.filter(scope=MemoryFile.Scope.AGENT, agent__slug=whose, path=name).first()
    if owner == "users" and whose and name:
        return files.filter(scope=MemoryFile.Scope.USER, user__username=whose, path=name).first()
    return None


def file_ensure(
    *, project: Project, scope: str, agent: Agent | None = None, user=None, path: str
) -> MemoryFile:
    """The record of a memory file, created (without content) if it does not exist yet.

    The record is committed on its own, before any content is written, so that a half-done
    first save still has a record (and a history folder id) that reconcile can complete.
    """
    if scope == layout.SCOPE_WORKSPACE:
        path = layout.validate_workspace_path(path)
    if agent is not None and agent.project_id != project.pk:
        raise ValidationError(_("The agent belongs to another project."), code="agent_project")
    key = layout.file_key(
        project.prefix,
        scope,
        agent_id=agent.pk if agent else None,
        user_id=user.pk if user else None,
        path=path,
    )
    with transaction.atomic():
        record, _created = MemoryFile.objects.get_or_create(
            project=project,
            key=key,
            defaults={"scope": scope, "agent": agent, "user": user, "path": path},
        )
    return MemoryFile.objects.select_related("head", "project", "agent", "user").get(pk=record.pk)


def workspace_file_new(*, project: Project, path: str) -> MemoryFile:
    """The record of a workspace file a person or a runner names, made if it is new and its
    name is free (`workspace_name_free`). New names in a project are made one at a time, so
    two look-alike names created at once cannot both pass the check."""
    path = layout.validate_workspace_path(path)
    with transaction.atomic():
        existing = file_lookup(project=project, scope=MemoryFile.Scope.WORKSPACE, path=path)
        if existing is not None:
            return existing
        Lock.hold(f"ws-names:{project.pk}")
        workspace_name_free(project=project, path=path)
        return file_ensure(project=project, scope=MemoryFile.Scope.WORKSPACE, path=path)


def workspace_name_free(*, project: Project, path: str) -> None:
    """ValidationError if another workspace file's path reads the same as `path` (case,
    look-alike letters: `Notes/Runbook.md`, Cyrillic `nоtes/runbook.md`): a reader could not
    tell them apart, and a case-insensitive disk (a runner's sandbox) would hold only one.
    For new names from people and runners; what the bucket already holds is adopted as is."""
    wanted = lookalikes.name_key(path)
    paths = MemoryFile.objects.filter(project=project, scope=MemoryFile.Scope.WORKSPACE)
    for other in paths.values_list("path", flat=True).iterator():
        if other != path and lookalikes.name_key(other) == wanted:
            raise ValidationError(
                _("%(path)s reads the same as the existing %(other)s; use that file or pick another name."),
                code="path_lookalike",
                params={"path": path, "other": other},
            )


def file_by_path(*, project: Project, path: str, user=None, agent: Agent | None = None) -> MemoryFile | None:
    """The file a person names on a command line: `workspace/<path>` (or the workspace path
    alone), `USER.md` with a user, `SOUL.md`/`AGENTS.md`/`TOOLS.md` with an agent, or the path
    as pages show it (`users/<name>/USER.md`, `agents/<slug>/SOUL.md`). None when there is none."""
    path = layout.nfc(path.strip().lstrip("/"))
    parts = path.split("/")
    if len(parts) == 3 and parts[0] == "users" and parts[2] == layout.USER_FILE and user is None:
        return (
            MemoryFile.objects.select_related("head", "project", "agent", "user")
            .filter(project=project, scope=MemoryFile.Scope.USER, user__username=parts[1], path=parts[2])
            .first()
        )
    if len(parts) == 3 and parts[0] == "agents" and parts[2] in layout.AGENT_FILES and agent is None:
        agent = Agent.objects.filter(project=project, slug=parts[1]).first()
        path = parts[2]
    if path == layout.USER_FILE:
        if user is None:
            return None
        return file_lookup(project=project, scope=MemoryFile.Scope.USER, user=user, path=path)
    if path in layout.AGENT_FILES:
        if agent is None:
            return None
        return file_lookup(project=project, scope=MemoryFile.Scope.AGENT, agent=agent, path=path)
    path = path.removeprefix(f"{layout.SCOPE_WORKSPACE}/")
    try:
        path = layout.validate_workspace_path(path)
    except ValidationError:
        return None
    return file_lookup(project=project, scope=MemoryFile.Scope.WORKSPACE, path=path)
