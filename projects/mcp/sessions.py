"""MCP sessions at the console's endpoint, each one console session of its chosen agent.

`initialize` makes an `McpSession` for the caller. Once the agent is known (from the URL
/mcp/<project>/<agent>/, a runner token's own agent, or the memory_use_agent tool) the pre
hook runs for (person, agent) and its receipt is recorded (`AgentSession.via = "mcp"`, so the
agent's writes are on the person's behalf). The client leaving (an HTTP DELETE), the session
idling past MGC_MCP_SESSION_IDLE_SECONDS, or the provider no longer vouching for the person
ends it: a last post ends the console session, as `mgc-mcp` does. Rows live in the
database, so any console process or host serves any session."""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.utils import timezone

from projects.errors import Refusal
from projects.governance import permissions
from projects.models import Agent, McpSession, Membership
from projects.runners import hooks, prehook

log = logging.getLogger(__name__)
TOUCH_SECONDS = 60  # last_seen_at is written at most this often


def reachable_agents(caller):
    """The agents the caller may work with: a person, those of their projects (as the pages
    show them); a runner token, its own agent. Archived ones are left out."""
    agents = Agent.objects.select_related("project").filter(
        archived_at__isnull=True, project__archived_at__isnull=True
    )
    if caller.token is not None:
        return agents.filter(pk=caller.token.agent_id)
    return agents.filter(project__in=permissions.visible_projects(caller.user)).order_by(
        "project__slug", "slug"
    )


def agent_named(caller, project_slug: str, agent_slug: str) -> Agent | None:
    """The agent at /mcp/<project>/<agent>/ if the caller may reach it; None alike for one
    that does not exist and one they may not see (as the pages answer 404)."""
    return reachable_agents(caller).filter(project__slug=project_slug, slug=agent_slug).first()


def session_open(*, caller, protocol_version: str, client: str) -> McpSession:
    return McpSession.objects.create(
        user=caller.user,
        token=caller.token,
        protocol_version=protocol_version,
        client=client[:200],
        last_seen_at=timezone.now(),
    )


def agent_use(mcp: McpSession, agent: Agent) -> McpSession:
    """Start the agent's console session for this MCP session (the pre hook, its receipt);
    a session that had another agent ends that one first. May raise a Refusal (an archived
    agent, storage down)."""
    if mcp.session_id is not None and mcp.agent_id == agent.pk:
        return mcp
    if mcp.session_id is not None:
        _end_console_session(mcp, "agent_changed")
    user = mcp.user
    if user is not None and not Membership.objects.filter(project=agent.project, user=user).exists():
        user = None  # a superuser outside the project: no profile to inject or write
    session, _assembly = prehook.hook_pre(agent=agent, user=user, external_ref=f"mcp:{mcp.pk}", via="mcp")
    mcp.agent, mcp.session = agent, session
    McpSession.objects.filter(pk=mcp.pk).update(agent=agent, session=session)
    return mcp


def session_for(session_id: str, caller) -> McpSession | None:
    """The caller's open session with this id; None for one that is unknown, ended, idle too
    long, or someone else's (the same answer for each, as the specification's 404)."""
    try:
        query = McpSession.objects.select_related("agent__project", "session__agent__project", "user")
        mcp = query.filter(pk=session_id, ended_at__isnull=True).first()
    except (ValueError, ValidationError):  # not a UUID
        return None
    if mcp is None:
        return None
    if caller.user is not None and mcp.user_id != caller.user.pk:
        return None
    if caller.token is not None and mcp.token_id != caller.token.pk:
        return None
    now = timezone.now()
    if now - mcp.last_seen_at > dt.timedelta(seconds=settings.MGC_MCP_SESSION_IDLE_SECONDS):
        session_end(mcp, "idle")
        return None
    if (now - mcp.last_seen_at).total_seconds() > TOUCH_SECONDS:
        McpSession.objects.filter(pk=mcp.pk).update(last_seen_at=now)
    return mcp


def session_end(mcp: McpSession, reason: str) -> None:
    """End the MCP session and its console session (the last post). Safe to repeat."""
    changed = McpSession.objects.filter(pk=mcp.pk, ended_at__isnull=True).update(
        ended_at=timezone.now(), ended_reason=reason
    )
    if changed and mcp.session_id is not None:
        _end_console_session(mcp, reason)


def _end_console_session(mcp: McpSession, reason: str) -> None:
    session = mcp.session
    if session is None or session.ended_at is not None:
        return
    summary = {
        "client_left": "MCP client left",
        "idle": "MCP session idle",
        "signed_out": "The identity provider no longer vouches for the person",
        "agent_changed": "MCP client chose another agent",
    }.get(reason, reason)
    try:
        hooks.hook_post(session=session, writes=[], summary=summary, end=True)
    except Refusal as exc:  # storage trouble cannot keep a session open
        log.warning("could not end console session %s: %s", session.pk, exc)


def end_all_for(user, *, reason: str) -> int:
    """End every open MCP session of a person; how many there were."""
    ended = 0
    for mcp in McpSession.objects.select_related("session__agent__project").filter(user=user, ended_at=None):
        session_end(mcp, reason)
        ended += 1
    return ended


def end_idle(limit: int = 100) -> int:
    """End sessions idle past MGC_MCP_SESSION_IDLE_SECONDS (clients that never said goodbye);
    run at each initialize, a few at a time."""
    cutoff = timezone.now() - dt.timedelta(seconds=settings.MGC_MCP_SESSION_IDLE_SECONDS)
    idle = McpSession.objects.select_related("session__agent__project").filter(
        Q(ended_at__isnull=True) & Q(last_seen_at__lt=cutoff)
    )[:limit]
    for mcp in idle:
        session_end(mcp, "idle")
    return len(idle)
