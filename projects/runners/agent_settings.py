"""Saving an agent's settings: the injection manifest and the hook policy, each checked and
normalised by its schema (`runners.schemas`), in one audited change."""

from __future__ import annotations

from django.db import transaction

from projects.audit import Actor, audit_record
from projects.models import Agent
from projects.runners import schemas


def agent_settings_update(
    *, agent: Agent, by, manifest: dict | None = None, policy: dict | None = None
) -> None:
    """Save either setting or both; ValidationError (the schema's) says what is wrong, and
    nothing is saved."""
    with transaction.atomic():
        fields = []
        if manifest is not None:
            agent.manifest = schemas.manifest(manifest).stored()
            fields.append("manifest")
        if policy is not None:
            agent.hook_policy = schemas.policy(policy).stored()
            fields.append("hook_policy")
        agent.save(update_fields=fields)
        audit_record(
            actor=Actor.person(by),
            action="agent.settings",
            project=agent.project,
            obj=agent,
            details={"changed": fields},
        )
