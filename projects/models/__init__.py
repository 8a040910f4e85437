"""Records of the console. Memory content lives in S3; these rows say what it is and who wrote it.

One module per domain (as Wagtail's wagtail/models/), every model imported here: Django finds
them here, and the rest of the console imports them as `from projects.models import X`."""

from projects.models.audit import AuditChain, AuditCheckpoint, AuditEvent
from projects.models.events import DeliveryAttempt, OutboxEvent, WebhookSubscription
from projects.models.jobs import BackgroundJob
from projects.models.lifecycle import LegalHold, RetentionRule
from projects.models.memory import LineMap, MemoryFile, RefusedWrite, Revision, SearchText
from projects.models.poisoning import PoisonScan
from projects.models.projects import (
    Agent,
    GroupMapping,
    Lock,
    Membership,
    Project,
    default_hook_policy,
    default_manifest,
)
from projects.models.provisioning import Departure, ScimGroup, ScimToken, ScimUser
from projects.models.review import Flag, FlagReply, IsolationCheck, Proposal, ReviewMark
from projects.models.runners import (
    AgentSession,
    AgentToken,
    IdempotencyRecord,
    McpSession,
    PendingPrompt,
    RunnerCredential,
    SessionEvent,
    SessionFile,
)
from projects.models.signin import SignInFailure
from projects.models.subjects import ConsentWithdrawal, SubjectDocument, SubjectRequest

__all__ = [
    "Agent",
    "AgentSession",
    "AgentToken",
    "AuditChain",
    "AuditCheckpoint",
    "AuditEvent",
    "BackgroundJob",
    "ConsentWithdrawal",
    "DeliveryAttempt",
    "Departure",
    "Flag",
    "FlagReply",
    "GroupMapping",
    "IdempotencyRecord",
    "IsolationCheck",
    "McpSession",
    "PendingPrompt",
    "LegalHold",
    "LineMap",
    "Lock",
    "Membership",
    "MemoryFile",
    "OutboxEvent",
    "PoisonScan",
    "Project",
    "Proposal",
    "RefusedWrite",
    "RetentionRule",
    "ReviewMark",
    "Revision",
    "RunnerCredential",
    "ScimGroup",
    "ScimToken",
    "ScimUser",
    "SearchText",
    "SessionEvent",
    "SessionFile",
    "SignInFailure",
    "SubjectDocument",
    "SubjectRequest",
    "WebhookSubscription",
    "default_hook_policy",
    "default_manifest",
]
