"""Who acted, and the append-only record of what they did."""

from __future__ import annotations

from dataclasses import dataclass

from projects.models import Agent, AuditEvent, Project, Revision


@dataclass(frozen=True)
class Actor:
    """A person, an agent (with its session), something found in S3, or the console itself."""

    kind: str
    user: object | None = None
    agent: Agent | None = None
    session_ref: str = ""
    note: str = ""

    @classmethod
    def person(cls, user) -> Actor:
        return cls(kind=Revision.AuthorKind.PERSON, user=user)

    @classmethod
    def for_agent(cls, agent: Agent, session_ref: str = "") -> Actor:
        return cls(kind=Revision.AuthorKind.AGENT, agent=agent, session_ref=session_ref)

    @classmethod
    def external(cls) -> Actor:
        return cls(kind=Revision.AuthorKind.EXTERNAL)

    @classmethod
    def system(cls, note: str = "console") -> Actor:
        return cls(kind=Revision.AuthorKind.SYSTEM, note=note)

    @property
    def label(self) -> str:
        if self.kind == Revision.AuthorKind.PERSON and self.user is not None:
            return self.user.get_username()
        if self.kind == Revision.AuthorKind.AGENT and self.agent is not None:
            return f"agent:{self.agent.slug}"
        if self.kind == Revision.AuthorKind.EXTERNAL:
            return "external"
        return f"system:{self.note}"


def audit_record(
    *,
    actor: Actor,
    action: str,
    project: Project | None = None,
    obj: object | None = None,
    details: dict | None = None,
) -> AuditEvent:
    """Append one event; call inside the transaction of the change it describes."""
    return AuditEvent.objects.create(
        actor_user=actor.user if actor.user is not None and actor.user.pk else None,
        actor_agent=actor.agent,
        actor_label=actor.label[:200],
        action=action,
        project=project,
        object_type=type(obj).__name__.lower() if obj is not None else "",
        object_id=str(getattr(obj, "pk", "") or ""),
        object_repr=str(obj)[:300] if obj is not None else "",
        details=details or {},
    )
