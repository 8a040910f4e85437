"""The hook policy as the hooks read it: which rule covers a path (`policy_rule`), how it
lets each kind of write happen (`rule_how`), what runners are told about it
(`policy_summary`); and the hooks' refusal, HookError. What a policy may hold is its schema's
(`schemas.PolicySchema`), checked when it is saved (`agent_settings`)."""

from __future__ import annotations

from projects.errors import Refusal
from projects.memory import globs
from projects.models import Agent
from projects.runners import schemas


class HookError(Refusal):
    """A caller's mistake or a refusal by the hook policy (runners.api maps codes to HTTP)."""

    def __init__(self, code: str, message: str):
        super().__init__(message, code)


def policy_rule(agent: Agent, path: str) -> dict | None:
    """The post-hook rule for a path ('AGENTS.md', 'USER.md', 'workspace/x.md'), or None: the
    most specific that matches, as `globs.governing_rule` reads it (adoption of direct S3
    writes reads the same)."""
    found = globs.governing_rule((agent.hook_policy or {}).get("post"), path)
    return found[1] if found else None


def rule_how(rule: dict | None, mode: str) -> str | None:
    """How a rule lets `mode` happen: "direct", "proposal", or None (never). Rules saved
    before delete and rename existed have no key for them: never."""
    if rule is None:
        return None
    if mode in schemas.CONTENT_MODES:
        if mode not in rule.get("modes", []):
            return None
        return "proposal" if rule.get("approval") else "direct"
    how = rule.get(mode, "never")
    return how if how in ("direct", "proposal") else None


def policy_summary(rule: dict | None) -> dict:
    """What a rule lets an agent do to a file, as runners are told: `writable` and `modes`
    (content writes), `approval`, and how `delete` and `rename` go (direct, proposal, never)."""
    modes = [m for m in schemas.CONTENT_MODES if rule_how(rule, m)]
    return {
        "writable": bool(modes),
        "modes": modes,
        "approval": bool((rule or {}).get("approval")),
        "delete": rule_how(rule, "delete") or "never",
        "rename": rule_how(rule, "rename") or "never",
    }


def log_rewrites(agent: Agent) -> list[tuple[str, list[str]]]:
    """The agent's own tool and error logs, each with what the hook policy lets the agent do
    to it besides appending (replace, delete, rename; empty: append-only, as the default
    policy has it). A log the agent can rewrite is no record of what it did."""
    found = []
    policy = agent.hook_policy or {}
    for kind in ("tool", "error"):
        path = (policy.get(kind) or {}).get("log")
        if not path:
            continue
        rule = policy_rule(agent, path)
        found.append((path, [mode for mode in ("replace", "delete", "rename") if rule_how(rule, mode)]))
    return found
