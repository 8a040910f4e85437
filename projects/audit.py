"""Who acted, and the append-only record of what they did."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC

from django.db import connection, transaction
from django.utils import timezone
from django.utils.crypto import constant_time_compare, salted_hmac
from django.utils.translation import gettext_lazy as _

from projects import outbox
from projects.models import Agent, AuditChain, AuditCheckpoint, AuditEvent, Project, Revision

# Every action the console records, for the audit page's filter (a fixed list: a DISTINCT over
# millions of events would be the slowest query of the page). tests/test_audit.py checks that
# the code records no other.
ACTIONS = {
    "file.save": _("saved a file"),
    "file.restore": _("restored a revision"),
    "file.delete": _("deleted a file"),
    "file.save_recovered": _("finished a half-done save"),
    "file.rename": _("renamed a file (from here)"),
    "file.rename_in": _("renamed a file (to here)"),
    "file.external_change": _("change found in storage"),
    "file.external_delete": _("deletion found in storage"),
    "file.external_refused": _("write in storage refused"),
    "file.external_poisoned": _("poisoned write in storage refused"),
    "file.refused_delete": _("deleted a refused write"),
    "proposal.create": _("agent proposed a change"),
    "proposal.approve": _("approved a proposal"),
    "proposal.reject": _("rejected a proposal"),
    "proposal.consent": _("consented to a held change of their profile"),
    "memory.poisoning.release": _("released a quarantined write"),
    "token.create": _("created a runner token"),
    "token.revoke": _("revoked a runner token"),
    "credentials.issue": _("issued S3 credentials to a runner"),
    "credentials.revoke": _("revoked a runner's S3 credentials"),
    "credentials.policy": _("updated runners' S3 policies"),
    "agent.create": _("created an agent"),
    "agent.settings": _("changed agent settings"),
    "agent.archive": _("archived an agent"),
    "agent.unarchive": _("brought an agent back"),
    "project.archive": _("archived a project"),
    "project.unarchive": _("brought a project back"),
    "project.create": _("created a project"),
    "project.update": _("changed project settings"),
    "project.export": _("exported project memory"),
    "account.create": _("created an account"),
    "account.locked_out": _("sign-in locked out"),
    "account.unlock": _("unlocked sign-in"),
    "account.throttled": _("set-password form throttled"),
    "account.change": _("changed an account"),
    "account.invite": _("made a new set-password link"),
    "account.update": _("the directory changed an account"),
    "account.deprovision": _("the directory deprovisioned an account"),
    "account.reactivate": _("the directory reactivated an account"),
    "account.link": _("linked a provisioned account at sign-in"),
    "group.create": _("the directory added a group"),
    "group.update": _("the directory changed a group"),
    "group.delete": _("the directory removed a group"),
    "scim_token.create": _("made a provisioning token"),
    "scim_token.revoke": _("revoked a provisioning token"),
    "member.grant": _("added a member"),
    "member.role": _("changed a role"),
    "member.remove": _("removed a member"),
    "mapping.create": _("mapped a provider group to a role"),
    "mapping.update": _("changed a group mapping"),
    "mapping.delete": _("deleted a group mapping"),
    "session.ended": _("identity provider ended a sign-in"),
    "review.mark": _("marked reviewed"),
    "review.flag": _("flagged"),
    "review.resolve": _("resolved a flag"),
    "review.reply": _("answered a flag"),
    "profile.erase": _("erased a profile"),
    "audit.export": _("exported the audit trail"),
    "file.expire": _("a file expired"),
    "retention.run": _("applied retention"),
    "retention.rule": _("changed retention rules"),
    "legal_hold.place": _("placed a legal hold"),
    "legal_hold.release": _("released a legal hold"),
    "audit.prune": _("pruned the audit trail"),
    "webhook.create": _("added a webhook"),
    "webhook.remove": _("removed a webhook"),
    "webhook.rotate": _("rotated a webhook's secret"),
    "webhook.enable": _("enabled a webhook"),
    "webhook.disable": _("disabled a webhook"),
    "webhook.redeliver": _("redelivered an event"),
    "subject_request.open": _("registered a subject's request"),
    "subject_request.identity": _("checked a requester's identity"),
    "subject_request.extend": _("extended a subject request's deadline"),
    "subject_request.assign": _("assigned a subject's request"),
    "subject_request.search": _("searched what is held about a person"),
    "subject_request.select": _("chose what a subject's answer includes"),
    "subject_request.package": _("made a subject's answer package"),
    "subject_request.act": _("made a destruction act"),
    "subject_request.link": _("linked a correction to a subject's request"),
    "subject_request.held": _("a legal hold stopped a subject's erasure"),
    "subject_request.answer": _("answered a subject's request"),
    "subject_request.refuse": _("refused a subject's request"),
    "subject_request.close": _("closed a subject's request"),
    "subject_request.due_soon": _("a subject's request is due soon"),
    "subject_request.overdue": _("a subject's request is overdue"),
    "subject_request.download": _("downloaded a subject's answer or act"),
    "consent.withdraw": _("consent withdrawn"),
    "consent.restore": _("consent given again"),
    "read.file": _("read a file"),
    "read.history": _("read a history"),
    "read.revision": _("read a revision"),
    "read.download": _("downloaded a revision"),
    "read.diff": _("read a diff"),
    "read.blame": _("read where a file's lines came from"),
    "read.carried": _("read which sessions carried a line"),
    "read.simulate": _("simulated a prompt"),
    "read.session": _("read a session"),
    "read.proposals": _("read proposals"),
    "read.health": _("read memory health"),
    "read.review": _("read the review queue"),
    "read.search": _("searched memory"),
}


VIA_MCP = "mcp"  # Actor.via: a session of the console's own MCP endpoint


@dataclass(frozen=True)
class Actor:
    """A person, an agent (with its session), something found in S3, or the console itself.

    An agent acting for a person who signed in (the console's MCP endpoint) is an agent actor
    with that person as `user` and `via` saying how: its revisions and audit events name
    both (author_agent and author_user), "agent X, on behalf of person Y, via MCP"."""

    kind: str
    user: object | None = None
    agent: Agent | None = None
    session_ref: str = ""
    note: str = ""
    via: str = ""

    @classmethod
    def person(cls, user) -> Actor:
        return cls(kind=Revision.AuthorKind.PERSON, user=user)

    @classmethod
    def for_agent(cls, agent: Agent, session_ref: str = "", *, on_behalf_of=None, via: str = "") -> Actor:
        return cls(
            kind=Revision.AuthorKind.AGENT, agent=agent, session_ref=session_ref, user=on_behalf_of, via=via
        )

    @classmethod
    def external(cls, agent: Agent | None = None, session_ref: str = "") -> Actor:
        """A change found in S3; `agent` only when a runner's proof names it (provenance)."""
        return cls(kind=Revision.AuthorKind.EXTERNAL, agent=agent, session_ref=session_ref)

    @classmethod
    def system(cls, note: str = "console") -> Actor:
        return cls(kind=Revision.AuthorKind.SYSTEM, note=note)

    @property
    def label(self) -> str:
        if self.kind == Revision.AuthorKind.PERSON and self.user is not None:
            return self.user.get_username()
        if self.kind == Revision.AuthorKind.AGENT and self.agent is not None:
            if self.via == VIA_MCP:  # system_text.actor_shown reads these two back
                if self.user is not None:
                    return f"agent:{self.agent.slug} for {self.user.get_username()} via MCP"
                return f"agent:{self.agent.slug} via MCP"
            return f"agent:{self.agent.slug}"
        if self.kind == Revision.AuthorKind.EXTERNAL:
            return f"external (agent:{self.agent.slug})" if self.agent is not None else "external"
        return f"system:{self.note}"


def audit_record(
    *,
    actor: Actor,
    action: str,
    project: Project | None = None,
    obj: object | None = None,
    details: dict | None = None,
    text: str | None = None,
) -> AuditEvent:
    """Append one event to the hash chain; call inside the transaction of the change. An object
    whose label is the console's words (`audit_label()`) keeps a code with parameters beside
    its English text, so the trail reads in each reader's language.

    The outbox rows the event implies (webhooks that asked for its type, audit streams) are
    written in the same transaction; `text` (a revision's content) goes only to subscriptions
    that asked for content and is never stored in the event."""
    code, params = obj.audit_label() if hasattr(obj, "audit_label") else ("", {})
    with transaction.atomic():
        chain = _chain_head()
        event = AuditEvent(
            created_at=timezone.now(),
            actor_user=actor.user if actor.user is not None and actor.user.pk else None,
            actor_agent=actor.agent,
            actor_label=actor.label[:200],
            action=action,
            project=project,
            object_type=type(obj).__name__.lower() if obj is not None else "",
            object_id=str(getattr(obj, "pk", "") or ""),
            object_repr=str(obj)[:300] if obj is not None else "",
            repr_code=code,
            repr_params=json.loads(json.dumps(params, default=str)),
            details=json.loads(json.dumps(details or {}, default=str)),
            seq=chain.last_seq + 1,
            prev_hash=chain.last_hash,
        )
        event.hash = event_hash(event)
        event.save()
        chain.last_seq, chain.last_hash = event.seq, event.hash
        chain.save(update_fields=["last_seq", "last_hash"])
        outbox.emit_audit(event, actor=actor, obj=obj, text=text)
    return event


def _chain_head() -> AuditChain:
    chain = AuditChain.objects.select_for_update().filter(pk=1).first()
    if chain is None:
        AuditChain.objects.get_or_create(pk=1)
        chain = AuditChain.objects.select_for_update().get(pk=1)
    return chain


def event_hash(event: AuditEvent) -> str:
    """sha256 over the previous hash and every field a reader relies on."""
    fields = {
        "seq": event.seq,
        "prev": event.prev_hash,
        "at": event.created_at.astimezone(UTC).isoformat(),
        "actor_user": event.actor_user_id,
        "actor_agent": str(event.actor_agent_id or ""),
        "actor": event.actor_label,
        "action": event.action,
        "project": str(event.project_id or ""),
        "type": event.object_type,
        "object": event.object_id,
        "repr": event.object_repr,
        "details": event.details,
    }
    if event.repr_code:  # events older than the codes hash as they always did
        fields["repr_code"], fields["repr_params"] = event.repr_code, event.repr_params
    canonical = json.dumps(fields, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def audit_verify() -> list[str]:
    """Problems in the chain: edited events (hash mismatch), deleted ones (gaps, broken
    links, a head that points past the newest event). Empty means intact. After a pruning the
    chain is checked from the newest checkpoint: its signature, then the first kept event
    must follow the last pruned one's hash."""
    return audit_check().problems


@dataclass
class Verification:
    problems: list[str]
    through: int  # the chain was checked up to this event (its head when the check began)
    events: int = 0  # how many events were checked


def audit_check() -> Verification:
    """`audit_verify` with how far it checked. The chain is read as of one moment, so events
    the console appends meanwhile are neither missing nor extra: on PostgreSQL in one
    REPEATABLE READ transaction (one snapshot for the head, the checkpoint and the events);
    everywhere, the chain's head is read first and only events up to it are checked (an event
    and the head that counts it commit together), and a pruning that committed during the
    check starts it again."""
    for _attempt in range(3):
        if connection.vendor == "postgresql" and not connection.in_atomic_block:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                found = _check_once()
        else:
            found = _check_once()
        if found is not None:
            return found
    return _check_once() or Verification(["the trail was pruned again and again during the check"], 0)


def _check_once() -> Verification | None:
    chain = AuditChain.objects.filter(pk=1).first()  # first: events after it are not counted
    head_seq, head_hash = (chain.last_seq, chain.last_hash) if chain is not None else (0, "")
    problems: list[str] = []
    expected_seq, previous = 1, ""
    checkpoint = AuditCheckpoint.objects.order_by("-seq").first()
    if checkpoint is not None:
        if not constant_time_compare(checkpoint.signature, _checkpoint_signature(checkpoint)):
            problems.append(f"the checkpoint at {checkpoint.seq} is not the console's (signature mismatch)")
        expected_seq, previous = checkpoint.seq + 1, checkpoint.hash
    events = AuditEvent.objects.filter(seq__gte=expected_seq)
    if chain is not None:
        events = events.filter(seq__lte=head_seq)
    checked = 0
    for event in events.order_by("seq").iterator(chunk_size=2000):
        checked += 1
        if event.seq != expected_seq:
            if expected_seq == (checkpoint.seq + 1 if checkpoint else 1) and _pruned_since(checkpoint):
                return None  # a pruning committed after the checkpoint was read: again
            problems.append(f"events {expected_seq}..{event.seq - 1} are missing")
        if event.prev_hash != previous:
            problems.append(f"event {event.seq} does not follow the event before it")
        if event_hash(event) != event.hash:
            problems.append(f"event {event.seq} was edited (hash mismatch)")
        expected_seq, previous = event.seq + 1, event.hash
    if chain is not None and (head_seq != expected_seq - 1 or head_hash != previous):
        if _pruned_since(checkpoint):
            return None
        problems.append(
            f"the newest events after {expected_seq - 1} are missing (the chain's head is at {head_seq})"
        )
    return Verification(problems, expected_seq - 1, checked)


def _pruned_since(checkpoint: AuditCheckpoint | None) -> bool:
    newest = AuditCheckpoint.objects.order_by("-seq").values_list("seq", flat=True).first()
    return newest is not None and (checkpoint is None or newest > checkpoint.seq)


def _checkpoint_signature(checkpoint: AuditCheckpoint) -> str:
    value = f"{checkpoint.seq}:{checkpoint.hash}:{checkpoint.pruned}"
    return salted_hmac("mgc-audit-checkpoint", value, algorithm="sha256").hexdigest()


def audit_prune(*, before, by: Actor | None = None) -> int:
    """Delete the events older than `before`, after a signed checkpoint records where the kept
    chain starts (the last pruned event's seq and hash), so `audit_verify` still verifies what
    is kept and a forged start is caught. The pruning itself is the first event after it.
    Returns how many events went."""
    with transaction.atomic():
        _chain_head()  # no event is appended meanwhile
        last = AuditEvent.objects.filter(created_at__lt=before, seq__isnull=False).order_by("-seq").first()
        if last is None:
            return 0
        earlier = AuditCheckpoint.objects.order_by("-seq").first()
        count = AuditEvent.objects.filter(seq__lte=last.seq).count()
        checkpoint = AuditCheckpoint(
            seq=last.seq, hash=last.hash, pruned=count + (earlier.pruned if earlier else 0)
        )
        checkpoint.signature = _checkpoint_signature(checkpoint)
        checkpoint.save()
        AuditEvent.objects.filter(seq__lte=last.seq).delete()
        audit_record(
            actor=by or Actor.system("retention"),
            action="audit.prune",
            details={"through_seq": last.seq, "events": count, "before": before.isoformat()},
        )
    return count
