"""The memory file a path names as an agent writes it: `SOUL.md`, `AGENTS.md` and `TOOLS.md`
(the agent's own), `USER.md` (the session's user's, while they are a member) or
`workspace/<path>.md`. The post, tool and error hooks write to `file_to_write` (a record is
made for a new file); the reads and moves look up `file_named` (nothing is made)."""

from __future__ import annotations

from django.core.exceptions import ValidationError

from projects.memory import layout, records
from projects.models import AgentSession, Membership, MemoryFile
from projects.runners import injection
from projects.runners.policy import HookError


def file_to_write(session: AgentSession, path: str) -> MemoryFile:
    """The record of the file a write goes to, made if the file is new."""
    agent = session.agent
    if path in layout.AGENT_FILES:
        return records.file_ensure(
            project=agent.project, scope=MemoryFile.Scope.AGENT, agent=agent, path=path
        )
    if path == layout.USER_FILE:
        if session.user is None:
            raise HookError("no_user", "This session has no user, so USER.md has no owner.")
        if not Membership.objects.filter(project=agent.project, user=session.user).exists():
            # Left the project since the pre hook: no profile is written for them (the pre
            # hook would not serve them now either).
            raise HookError(
                "not_a_member",
                "The session's user is no longer a member of this project, so their USER.md is not written.",
            )
        return records.file_ensure(
            project=agent.project, scope=MemoryFile.Scope.USER, user=session.user, path=path
        )
    if path.startswith(injection.WORKSPACE_PREFIX):
        try:
            return records.workspace_file_new(
                project=agent.project, path=path[len(injection.WORKSPACE_PREFIX) :]
            )
        except ValidationError as exc:
            raise HookError("bad_path", " ".join(exc.messages)) from None
    raise HookError(
        "bad_path", "Paths are SOUL.md, AGENTS.md, TOOLS.md, USER.md or workspace/<relative path>.md."
    )


def file_named(session: AgentSession, path: str) -> MemoryFile | None:
    """The record of a file an agent names, or None; nothing is made (see `file_to_write`)."""
    agent = session.agent
    if path in layout.AGENT_FILES:
        return records.file_lookup(
            project=agent.project, scope=MemoryFile.Scope.AGENT, agent=agent, path=path
        )
    if path == layout.USER_FILE:
        if session.user is None:
            raise HookError("no_user", "This session has no user, so USER.md has no owner.")
        if not Membership.objects.filter(project=agent.project, user=session.user).exists():
            raise HookError(
                "not_a_member",
                "The session's user is no longer a member of this project, so their USER.md is not changed.",
            )
        return records.file_lookup(
            project=agent.project, scope=MemoryFile.Scope.USER, user=session.user, path=path
        )
    if path.startswith(injection.WORKSPACE_PREFIX):
        try:
            relative = layout.validate_workspace_path(path[len(injection.WORKSPACE_PREFIX) :])
        except ValidationError as exc:
            raise HookError("bad_path", " ".join(exc.messages)) from None
        return records.file_lookup(project=agent.project, scope=MemoryFile.Scope.WORKSPACE, path=relative)
    raise HookError(
        "bad_path", "Paths are SOUL.md, AGENTS.md, TOOLS.md, USER.md or workspace/<relative path>.md."
    )
