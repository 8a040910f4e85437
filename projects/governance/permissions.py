"""Role checks: the one place that decides who may see and do what (server-side, every view).

Superusers are global admins. Everyone else acts through a Membership in a project. A person
with no membership in a project gets 404 for it and for everything in it: no hint it exists.
A member who lacks the right for a page gets 404 too, so the answer never says that an object
exists which the person may not see. The matrix:

    admin       manages the project: members, agents, tokens, hook policies, isolation,
                proposals, erasure; edits every file; reads everything
    compliance  reads everything (files, history, diffs, sessions, audit); reviews and flags;
                exports; never edits memory. Its reads of memory are audited.
    employee    edits only their own USER.md, sees its history, reads the agents' files and
                simulates what agents are told about them; sees only their own sessions;
                sees and approves or rejects agents' proposals to change their own USER.md
                (consent), never proposals on others' profiles or on agents' files
"""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.http import Http404

from projects.memory import quarantine
from projects.models import Flag, Membership, MemoryFile, Project, Proposal, SubjectRequest

ADMIN = Membership.Role.ADMIN
COMPLIANCE = Membership.Role.COMPLIANCE
EMPLOYEE = Membership.Role.EMPLOYEE


def visible_projects(user) -> QuerySet[Project]:
    if not user.is_authenticated:
        return Project.objects.none()
    if user.is_superuser:
        return Project.objects.all()
    return Project.objects.filter(memberships__user=user).distinct()


def reviewable_projects(user) -> QuerySet[Project]:
    """Projects whose audit trail and review queue the user may see."""
    if not user.is_authenticated:
        return Project.objects.none()
    if user.is_superuser:
        return Project.objects.all()
    return Project.objects.filter(
        memberships__user=user, memberships__role__in=[ADMIN, COMPLIANCE]
    ).distinct()


def role_in(user, project: Project) -> str | None:
    """The user's role in the project; superusers are admins everywhere."""
    if not user.is_authenticated:
        return None
    if user.is_superuser:
        return ADMIN
    membership = Membership.objects.filter(user=user, project=project).only("role").first()
    return membership.role if membership else None


def project_or_404(user, slug: str) -> tuple[Project, str]:
    project = Project.objects.filter(slug=slug).first()
    role = role_in(user, project) if project is not None else None
    if role is None:
        raise Http404("No such project.")
    return project, role


def can_manage_accounts(user) -> bool:
    """Accounts are global (one person, many projects): sign-in lockouts are lifted by
    superusers, the global admins."""
    return bool(user.is_authenticated and user.is_superuser)


def require(allowed: bool) -> None:
    """404, never 403: a refusal must not confirm that the object exists."""
    if not allowed:
        raise Http404("No such page.")


def can_manage(role: str | None) -> bool:
    """Members, agents, tokens, hook policies, isolation, proposals, erasure."""
    return role == ADMIN


def can_review(role: str | None) -> bool:
    """Audit trail, review queue, flags, proposals (read), export."""
    return role in (ADMIN, COMPLIANCE)


def can_hold(role: str | None) -> bool:
    """Legal holds: placed and released by admins and compliance officers (a hold only ever
    keeps memory, it never changes or shows any)."""
    return role in (ADMIN, COMPLIANCE)


def can_scan_memory(role: str | None) -> bool:
    """Scan a project's memory for poisoning and remove what a scan found (issue 37)."""
    return role in (ADMIN, COMPLIANCE)


def sees_everyone(role: str | None) -> bool:
    """Everyone's profiles, sessions and simulations; an employee sees only their own."""
    return role in (ADMIN, COMPLIANCE)


def reads_are_audited(role: str | None) -> bool:
    """Compliance staff read everyone's memory; each of those reads leaves an audit event."""
    return role == COMPLIANCE


def can_see_session(user, role: str | None, session) -> bool:
    """Admins and compliance see every session; an employee only those that served them (a
    blame line or a prompt's origin names other sessions without opening them)."""
    if session is None:
        return False
    return sees_everyone(role) or (role is not None and session.user_id == user.pk)


def can_read_file(user, role: str, file: MemoryFile) -> bool:
    """Admins and compliance read every file of their projects; employees their own USER.md
    and the agents' files (they see what agents are told, not others' profiles)."""
    if role in (ADMIN, COMPLIANCE):
        return True
    if file.scope == MemoryFile.Scope.USER:
        return file.user_id == user.pk
    return file.scope == MemoryFile.Scope.AGENT


def can_edit_file(user, role: str, file: MemoryFile) -> bool:
    """Admins edit everything; employees only their own USER.md; compliance staff edit nothing."""
    if role == ADMIN:
        return True
    return role == EMPLOYEE and file.scope == MemoryFile.Scope.USER and file.user_id == user.pk


def can_see_workspace(role: str | None) -> bool:
    """Episodic memory is the team's: admins and compliance staff, not each employee."""
    return role in (ADMIN, COMPLIANCE)


def can_delete_file(user, role: str, file: MemoryFile) -> bool:
    return role == ADMIN and file.scope == MemoryFile.Scope.WORKSPACE


def visible_proposals(user, role: str | None) -> Q:
    """Proposals the user may see in a project: all for admins and compliance staff; for an
    employee only those on their own USER.md (what agents want to record about them)."""
    if sees_everyone(role):
        return Q()
    if role == EMPLOYEE:
        return Q(file__scope=MemoryFile.Scope.USER, file__user=user)
    return Q(pk__in=[])


def can_decide_proposal(user, role: str | None, proposal: Proposal) -> bool:
    """Admins decide every proposal; an employee consents to (or refuses) changes to their own
    USER.md only. Compliance staff read proposals but never write memory, except to release
    (or reject) a quarantined write, as admins do."""
    if role == ADMIN or (proposal.quarantined and can_release_quarantined(role)):
        return True
    return (role == EMPLOYEE or proposal.quarantined) and role is not None and consents_to(user, proposal)


def can_release_quarantined(role: str | None) -> bool:
    """Who releases a write the poisoning scanner held: memory/quarantine.py says."""
    return quarantine.releases(role)


def consents_to(user, proposal: Proposal) -> bool:
    """The person whose profile (USER.md) the proposal changes: their consent is asked."""
    return quarantine.consents(user, proposal)


def can_see_flag(user, role: str | None, flag: Flag) -> bool:
    """Reviewers see every flag of their projects; the author of the flagged revision sees
    the flags on their own work, to answer them (if they may still read the file)."""
    if can_review(role):
        return True
    return (
        flag.revision.author_user_id == user.pk and role is not None and can_read_file(user, role, flag.file)
    )


def can_resolve_flag(role: str | None) -> bool:
    """Closing a flag is the reviewers' call; the author answers in its thread."""
    return can_review(role)


# --- Subjects' requests ---------------------------------------------------------------------------
# The console's register (requests about a person everywhere, project-independent) is handled by
# superusers and by those granted `projects.handle_all_subject_requests` (compliance officers
# of the whole company); a project's admins and compliance officers handle that project's
# requests; everyone sees the requests they made about themselves, and where they stand.


def handles_all_requests(user) -> bool:
    return bool(
        user.is_authenticated and (user.is_superuser or user.has_perm("projects.handle_all_subject_requests"))
    )


def visible_requests(user) -> QuerySet[SubjectRequest]:
    """The requests a person may see: theirs as handlers (every one for the register's
    handlers, their projects' for a project's admins and compliance officers), and their own."""
    if not user.is_authenticated:
        return SubjectRequest.objects.none()
    if handles_all_requests(user):
        return SubjectRequest.objects.all()
    return SubjectRequest.objects.filter(Q(project__in=reviewable_projects(user)) | Q(user=user))


def can_handle_request(user, request: SubjectRequest) -> bool:
    """Register, check, extend, answer, refuse and close it; read what is held."""
    if handles_all_requests(user):
        return True
    return request.project_id is not None and can_review(role_in(user, request.project))


def can_register_requests(user, project: Project | None) -> bool:
    """Register a request for someone: in the console's register, or in a project."""
    if project is None:
        return handles_all_requests(user)
    return handles_all_requests(user) or can_review(role_in(user, project))
