"""S3 credentials of agent runners: issued, refreshed and revoked through the object store's
IAM API (SeaweedFS and MinIO serve it on the S3 endpoint, AWS at its own), so the store itself
enforces each project's isolation, not only the console.

Each runner token can have one IAM user, `mgc-runner-<token id>`, carrying the policy of
`runner_policy` below: its project's prefix only, read-only where the agent's hook policy
allows no direct replace, never the `_history/` snapshots. Every IAM call here may be
repeated safely: a user that exists is reused, issuing again rotates the access key, and
deleting what is already gone counts as done, so an answer lost on the way back is settled by
trying again.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass

from botocore.exceptions import BotoCoreError, ClientError
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from projects.audit import Actor, audit_record
from projects.errors import Refusal
from projects.memory import iam, layout
from projects.memory.storage import error_code, iam_client
from projects.models import Agent, AgentToken, RunnerCredential
from projects.runners import injection

logger = logging.getLogger(__name__)

POLICY_NAME = "mgc-runner"


class CredentialsUnavailable(Refusal):
    """The IAM API did not answer properly; `message` says what to do."""

    code = "iam_unavailable"


def iam_user_name(token: AgentToken) -> str:
    return f"mgc-runner-{token.pk}"


def _failed(exc: Exception) -> CredentialsUnavailable:
    logger.warning("IAM request failed: %s", exc)
    return CredentialsUnavailable(
        _(
            "The object store's IAM API did not answer properly (%(error)s). Nothing is live that "
            "you were not shown; try again in a moment."
        )
        % {"error": error_code(exc) or "no answer"}
    )


def _gone(exc: Exception) -> bool:
    return error_code(exc) in {"NoSuchEntity", "NoSuchEntityException", "NotFound"}


def credentials_issue(*, token: AgentToken, by) -> tuple[RunnerCredential, str]:
    """Give a runner token S3 credentials of its own; returns the record and the secret key,
    which is shown once and never stored. Issuing again rotates the key."""
    if token.revoked_at is not None:
        raise ValidationError(_("This token is revoked; create a new one first."), code="token_revoked")
    agent = token.agent
    name = iam_user_name(token)
    iam = iam_client()
    try:
        try:
            iam.create_user(UserName=name)
        except ClientError as exc:
            if error_code(exc) != "EntityAlreadyExists":
                raise
        for old in iam.list_access_keys(UserName=name).get("AccessKeyMetadata", []):
            iam.delete_access_key(UserName=name, AccessKeyId=old["AccessKeyId"])
        key = iam.create_access_key(UserName=name)["AccessKey"]
        policy = _put_policy(iam, name, agent)
    except (ClientError, BotoCoreError) as exc:
        raise _failed(exc) from exc
    with transaction.atomic():
        RunnerCredential.objects.filter(token=token, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        credential = RunnerCredential.objects.create(
            token=token,
            agent=agent,
            iam_user=name,
            access_key_id=key["AccessKeyId"],
            policy=policy,
            created_by=by,
        )
        _note_writable(agent.project)
        audit_record(
            actor=Actor.person(by),
            action="credentials.issue",
            project=agent.project,
            obj=credential,
            details={
                "agent": agent.slug,
                "token": token.name,
                "access_key_id": key["AccessKeyId"],
                "iam_user": name,
            },
        )
    return credential, key["SecretAccessKey"]


def credentials_revoke(*, token: AgentToken, by, actor: Actor | None = None) -> int:
    """Delete the token's IAM user with its keys and policy; how many live records it ended.
    Raises CredentialsUnavailable when the store did not answer (they stay live: retry)."""
    live = list(RunnerCredential.objects.filter(token=token, revoked_at__isnull=True))
    if not live:
        return 0
    iam = iam_client()
    name = iam_user_name(token)
    try:
        for step in (_delete_keys, _delete_policy, _delete_user):
            step(iam, name)
    except (ClientError, BotoCoreError) as exc:
        raise _failed(exc) from exc
    with transaction.atomic():
        now = timezone.now()
        for credential in live:
            credential.revoked_at = now
            credential.save(update_fields=["revoked_at"])
            audit_record(
                actor=actor or Actor.person(by),
                action="credentials.revoke",
                project=credential.agent.project,
                obj=credential,
                details={"agent": credential.agent.slug, "access_key_id": credential.access_key_id},
            )
        _note_writable(live[0].agent.project)
    return len(live)


def credentials_refresh(*, agent: Agent, by) -> int:
    """Write the current runner policy to every live credential of the agent (after its hook
    policy changed); how many were updated."""
    live = list(RunnerCredential.objects.filter(agent=agent, revoked_at__isnull=True))
    if not live:
        return 0
    iam = iam_client()
    try:
        for credential in live:
            policy = _put_policy(iam, credential.iam_user, agent)
    except (ClientError, BotoCoreError) as exc:
        raise _failed(exc) from exc
    with transaction.atomic():
        RunnerCredential.objects.filter(pk__in=[c.pk for c in live]).update(policy=policy)
        _note_writable(agent.project)
        audit_record(
            actor=Actor.person(by),
            action="credentials.policy",
            project=agent.project,
            obj=agent,
            details={"credentials": [c.access_key_id for c in live]},
        )
    return len(live)


def _delete_keys(iam, name: str) -> None:
    try:
        for key in iam.list_access_keys(UserName=name).get("AccessKeyMetadata", []):
            iam.delete_access_key(UserName=name, AccessKeyId=key["AccessKeyId"])
    except ClientError as exc:
        if not _gone(exc):
            raise


def _delete_policy(iam, name: str) -> None:
    try:
        iam.delete_user_policy(UserName=name, PolicyName=POLICY_NAME)
    except ClientError as exc:
        if not _gone(exc):
            raise


def _delete_user(iam, name: str) -> None:
    try:
        iam.delete_user(UserName=name)
    except ClientError as exc:
        if not _gone(exc):
            raise


# --- What a runner's credentials may do ------------------------------------------------------


def runner_policy(agent: Agent, *, deny: bool = True) -> dict:
    """What one agent's runner may do straight in the bucket, no more than the hook API gives
    it: read its agent's files and the project's workspace; read and write scratch space
    under its own agent's sessions; replace the files the agent's hook policy lets it
    replace without a person's approval. Never a profile (USER.md reaches a runner only
    through the pre hook, one person per session), never the `_history/` snapshots or the
    kept `_prompts/`, never another agent's sessions or another project's keys, no delete.

    Files the hook policy allows only appends to, or only with approval, stay read-only here:
    those changes go through the post hook, where the policy and the audit trail apply. A
    glob that allows a direct replace is granted even when a stricter rule governs some of
    its files (`workspace/**.md` around the append-only `workspace/logs/**.md`): with `deny`,
    the stricter rules' key patterns are denied (`DenyWhatStricterRulesGovern`), as are names
    the console refuses (`layout.refused_workspace_patterns`). Stores that take no Deny
    statements (SeaweedFS) get the policy without them, and adoption refuses such objects
    instead (`memory.direct_rules`, `memory.refusals`). IAM's `*` crosses folders, so
    `workspace/decisions/*.md` also admits deeper files (the console records whatever lands
    as an external revision either way)."""
    project = agent.project
    bucket, prefix = project.bucket_name, project.prefix
    readable = [layout.agent_prefix(prefix, agent.pk), layout.workspace_prefix(prefix)]
    scratch = layout.agent_sessions_prefix(prefix, agent.pk)
    statements = [
        iam.list_statement(bucket, readable + [scratch]),
        {
            "Sid": "ReadOwnMemory",
            "Effect": "Allow",
            "Action": ["s3:GetObject"],
            "Resource": [iam.arn(bucket, p + "*") for p in readable],
        },
        {
            "Sid": "WriteOwnSessionScratch",
            "Effect": "Allow",
            "Action": ["s3:GetObject", "s3:PutObject"],
            "Resource": iam.arn(bucket, f"{scratch}*"),
        },
    ]
    rules = direct_write_rules(agent)
    writable = [rule.pattern for rule in rules]
    if writable:
        statements.append(
            {
                "Sid": "WriteWhatTheHookPolicyAllows",
                "Effect": "Allow",
                "Action": ["s3:PutObject"],
                "Resource": [iam.arn(bucket, pattern) for pattern in writable],
            }
        )
        stricter = sorted({pattern for rule in rules for pattern in rule.stricter_patterns})
        if deny and stricter:
            statements.append(
                {
                    "Sid": "DenyWhatStricterRulesGovern",
                    "Effect": "Deny",
                    "Action": ["s3:PutObject"],
                    "Resource": [iam.arn(bucket, pattern) for pattern in stricter],
                }
            )
        if deny and any(p.startswith(layout.workspace_prefix(prefix)) for p in writable):
            statements.append(
                {
                    "Sid": "DenyNamesTheConsoleRefuses",
                    "Effect": "Deny",
                    "Action": ["s3:PutObject"],
                    "Resource": [
                        iam.arn(bucket, pattern) for pattern in layout.refused_workspace_patterns(prefix)
                    ],
                }
            )
    return {"Version": "2012-10-17", "Statement": statements}


@dataclass(frozen=True)
class RunnerAccess:
    """What an agent's runner credentials reach, in words a settings page can list."""

    reads: list[str]  # key prefixes read
    scratch: str  # the prefix of its own sessions' scratch space (read and write)
    rules: list  # DirectRule: what it may replace in place, and what is left out
    deny_taken: bool | None  # the store took the Deny statement (None: no live credentials)


def runner_access(agent: Agent) -> RunnerAccess:
    prefix = agent.project.prefix
    live = list(
        RunnerCredential.objects.filter(agent=agent, revoked_at__isnull=True).values_list("policy", flat=True)
    )
    return RunnerAccess(
        reads=[layout.agent_prefix(prefix, agent.pk), layout.workspace_prefix(prefix)],
        scratch=layout.agent_sessions_prefix(prefix, agent.pk),
        rules=direct_write_rules(agent),
        deny_taken=all(has_deny(p) for p in live) if live else None,
    )


def runner_writable(project) -> dict:
    """Where the project's live runner credentials may write directly, read from the policies
    attached to them: {"workspace": bool, "agents": [agent ids whose folder they may write]}.
    Only these prefixes can change behind the console's back between two pre hooks, so only
    these need a look at the bucket (memory.freshness)."""
    workspace = layout.workspace_prefix(project.prefix)
    agents, anywhere = set(), False
    for agent_id, policy in RunnerCredential.objects.filter(
        agent__project=project, revoked_at__isnull=True
    ).values_list("agent_id", "policy"):
        for statement in (policy or {}).get("Statement", []):
            if statement.get("Sid") != "WriteWhatTheHookPolicyAllows":
                continue
            for resource in statement.get("Resource", []):
                key = resource.split(":::", 1)[-1].split("/", 1)[-1]
                if key.startswith(workspace):
                    anywhere = True
                elif key.startswith(layout.agent_prefix(project.prefix, agent_id)):
                    agents.add(str(agent_id))
    return {"workspace": anywhere, "agents": sorted(agents)}


def _note_writable(project) -> None:
    """Keep Project.runner_writable in step with the live credentials (inside their change's
    transaction, so a pre hook never reads one without the other)."""
    value = runner_writable(project)
    if project.runner_writable != value:
        type(project).objects.filter(pk=project.pk).update(runner_writable=value)
        project.runner_writable = value


def stale_credentials(agent: Agent) -> int:
    """How many of the agent's live runner credentials carry an S3 policy other than the one
    its hook policy makes now (a migration changed the hook policy; the next save of the hook
    policy writes theirs)."""
    live = RunnerCredential.objects.filter(agent=agent, revoked_at__isnull=True).values_list(
        "policy", flat=True
    )
    return sum(1 for stored in live if stored != runner_policy(agent, deny=has_deny(stored or {})))


def has_deny(policy: dict) -> bool:
    return any(statement.get("Effect") == "Deny" for statement in policy.get("Statement", []))


def _put_policy(client, user_name: str, agent: Agent) -> dict:
    """Attach the runner policy; a store that refuses Deny statements (SeaweedFS: "Only
    'Allow' is possible") gets it without them. Returns the policy attached."""
    policy = runner_policy(agent)
    try:
        client.put_user_policy(UserName=user_name, PolicyName=POLICY_NAME, PolicyDocument=json.dumps(policy))
        return policy
    except ClientError as exc:
        if not has_deny(policy) or error_code(exc) != "MalformedPolicyDocument":
            raise
    policy = runner_policy(agent, deny=False)
    client.put_user_policy(UserName=user_name, PolicyName=POLICY_NAME, PolicyDocument=json.dumps(policy))
    return policy


def direct_write_allowed(target: str, rule: dict | None) -> bool:
    """Whether a runner may replace a file straight in S3 under a hook-policy rule: the rule
    allows replace, with no approval (runner_policy grants PutObject on exactly these).
    Never USER.md: a profile is the session's person's, which one set of credentials for the
    agent cannot express (it would reach every member's profile); it goes through the hook."""
    return (
        target != layout.USER_FILE
        and bool(rule)
        and "replace" in rule.get("modes", [])
        and not rule.get("approval")
    )


@dataclass(frozen=True)
class DirectRule:
    """One hook-policy rule that allows a direct replace, as the runner's S3 policy reads it."""

    target: str  # the rule's path or glob, e.g. "workspace/**.md"
    pattern: str  # the key pattern in IAM's wildcards
    stricter: tuple[str, ...] = ()  # stricter rules governing some of its files, e.g. workspace/logs/**.md
    stricter_patterns: tuple[str, ...] = ()  # their key patterns (the Deny statement's)


def direct_write_rules(agent: Agent) -> list[DirectRule]:
    """Every rule that allows a direct replace, with its key pattern; the runner's credentials
    get each of them. When a stricter rule governs some of a glob's files (the most specific
    rule wins in the hooks, `globs.governing_rule`), the glob is granted all the same and the
    stricter rule's files are protected twice over: a Deny statement on their key pattern
    where the store takes one (`runner_policy`), and at adoption, where a direct write the
    stricter rule does not allow is refused (`memory.direct_rules`)."""
    prefix = agent.project.prefix
    rules = (agent.hook_policy or {}).get("post", {})
    stricter = [
        target
        for target, rule in rules.items()
        if target.startswith("workspace/") and not direct_write_allowed(target, rule)
    ]
    found = []
    for target, rule in sorted(rules.items()):
        if not direct_write_allowed(target, rule):
            continue
        if target in layout.AGENT_FILES:
            found.append(DirectRule(target, layout.agent_file_key(prefix, agent.pk, target)))
            continue
        overlapping = tuple(other for other in stricter if _overlaps(target, other))
        found.append(
            DirectRule(
                target,
                _iam_pattern(prefix, target),
                overlapping,
                tuple(_iam_pattern(prefix, other) for other in overlapping),
            )
        )
    return found


def _iam_pattern(prefix: str, target: str) -> str:
    """workspace/<glob>.md as a key pattern: ** and * both become IAM's *, [...] becomes ?."""
    glob = re.sub(r"\[[^\]]*\]", "?", target.removeprefix("workspace/"))
    return layout.workspace_prefix(prefix) + re.sub(r"[*]+", "*", glob)


def direct_write_patterns(agent: Agent) -> list[str]:
    """Key patterns (IAM wildcards) of the files this agent's runner may replace in place."""
    return [rule.pattern for rule in direct_write_rules(agent)]


def _overlaps(glob: str, other: str) -> bool:
    """Whether `glob` selects a file `other` also selects (`other`'s wildcards read as a
    letter give one such file)."""
    sample = injection.glob_sample(other.removeprefix("workspace/"))
    return bool(injection.workspace_matches(glob, [sample]))
