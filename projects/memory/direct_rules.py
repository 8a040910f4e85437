"""Which direct S3 writes to the workspace the agents' hook policies allow, as adoption reads
them.

A runner's S3 credentials may replace in place what a workspace glob lets its agent replace
without approval (`runners.credentials.runner_policy`), even where a stricter rule governs
some of the glob's files: `workspace/**.md` is granted around the default policy's
append-only `workspace/logs/**.md`. IAM allows cannot say "all of the workspace but the logs".
A store that takes Deny statements (AWS, MinIO) refuses the PUT on the stricter rule's key
pattern; SeaweedFS takes none, so what lands there is judged here when the console finds it:
an append, where the stricter rule allows appends without approval, is adopted; anything
else is refused (`refusals`, reason `not_direct`), never injected.

Only agents with live runner credentials count: no one else's credentials reach the
workspace, and a write outside every granted glob could not come from a runner.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from projects.memory import globs
from projects.models import Agent, Project


def rule_direct(rule: dict | None, mode: str) -> bool:
    """Whether a hook-policy rule lets `mode` (append, replace) happen without approval."""
    return bool(rule) and mode in rule.get("modes", []) and not rule.get("approval")


@dataclass(frozen=True)
class Stricter:
    """A rule that governs a workspace path inside a glob runners may replace in place."""

    agent: str  # the agent's slug
    target: str  # the stricter rule, e.g. "workspace/logs/**.md"
    appends: bool  # it allows appends without approval


def stricter_rules(project: Project, path: str) -> list[Stricter]:
    """For each agent with live runner credentials whose hook policy grants a direct replace
    over `path` ('workspace/logs/tools.md') while a stricter rule governs it: that rule. Empty
    when every runner that may write the path may replace it."""
    if not (project.runner_writable or {}).get("workspace"):
        return []  # no runner credential writes the workspace: no query
    found = []
    agents = Agent.objects.filter(project=project, credentials__revoked_at__isnull=True).distinct()
    for agent in agents.only("pk", "slug", "hook_policy"):
        rules = (agent.hook_policy or {}).get("post") or {}
        governing = globs.governing_rule(rules, path)
        if governing is None or rule_direct(governing[1], "replace"):
            continue
        granted = any(
            target.startswith(globs.WORKSPACE_PREFIX)
            and rule_direct(rule, "replace")
            and globs.source_matches(target, path)
            for target, rule in rules.items()
        )
        if granted:
            found.append(Stricter(agent.slug, governing[0], rule_direct(governing[1], "append")))
    return found


def direct_refusal(
    project: Project, path: str, old: Callable[[], bytes], new: bytes
) -> tuple[dict | None, bool]:
    """Whether a direct write of `new` at a workspace path is refused: (the refused write's
    detail, or None to adopt it; whether a stricter rule governs the path, so that adopting
    it adopts an append). `old` gives the recorded head's bytes (b"" for none), read only
    when a stricter rule governs; an addition at the end (`new` starts with all of it) is an
    append."""
    stricter = stricter_rules(project, path)
    if not stricter:
        return None, False
    appended = new.startswith(old())
    for rule in stricter:
        if not (appended and rule.appends):
            return {"rule": rule.target, "agent": rule.agent, "appends": rule.appends}, True
    return None, True
