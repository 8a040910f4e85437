"""Everything the console holds about a person, in every project the handler may see (reads
only): their profile and each revision of it, what agents proposed and what the person decided
(consent), the sessions whose prompts carried the profile with the prompts as kept, flags and
their threads, audit events about them (not only by them), and mentions of them elsewhere:
workspace files, agents' files and other people's profiles, found by username, name, e-mail and
phone (the personal-data scanner's matchers), each with its line's origin.

EDPB Guidelines 01/2022: the search covers every system and storage the console has: the
records, the memory in S3 (profiles' snapshots, kept prompts) and every revision's text (a line
removed since still counts, with the newest revision that held it).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.db.models import Q

from projects.governance import permissions
from projects.governance.redaction import Person, hits
from projects.memory import blame, lineage, linemaps, receipts
from projects.memory.errors import StoreError
from projects.memory.reading import POOL, revision_texts
from projects.models import (
    AgentSession,
    AuditEvent,
    ConsentWithdrawal,
    Flag,
    MemoryFile,
    Project,
    Proposal,
    Revision,
    SearchText,
    SubjectRequest,
)

MENTIONS_MAX = 2000  # a person named on every line of a huge workspace: the first ones, and a note


@dataclass
class Origin:
    """Where a line came from: the revision that introduced it, who wrote it and when."""

    revision: int
    author: str
    author_kind: str
    at: dt.datetime | None
    session: str = ""
    exact: bool = True  # False: the revision it was found in (the line may be older)

    def as_dict(self) -> dict:
        return {
            "revision": self.revision,
            "author": self.author,
            "author_kind": self.author_kind,
            "at": self.at.isoformat() if self.at else None,
            "session": self.session or None,
            "exact": self.exact,
        }


@dataclass
class Mention:
    id: str  # "<file id>:<revision>:<line>", stable while history stays
    project: Project
    file: MemoryFile
    revision: int
    line: int
    text: str
    kinds: list[str]
    in_head: bool
    origin: Origin | None = None

    def as_dict(self) -> dict:
        return {
            "id": self.id,
            "project": self.project.slug,
            "path": self.file.display_path,
            "revision": self.revision,
            "line": self.line,
            "text": self.text,
            "found_by": self.kinds,
            "in_head": self.in_head,
            "origin": self.origin.as_dict() if self.origin else None,
        }


@dataclass
class Profile:
    project: Project
    file: MemoryFile
    revisions: list[Revision]  # oldest first
    texts: dict[int, str | None] = field(default_factory=dict)  # number -> text (None: gone)


@dataclass
class Traces:
    projects: list[Project]
    subject: Person
    others: list[Person]
    profiles: list[Profile] = field(default_factory=list)
    proposals: list[Proposal] = field(default_factory=list)
    decisions: list[Proposal] = field(default_factory=list)  # what the person decided (consent)
    withdrawals: list[ConsentWithdrawal] = field(default_factory=list)
    flags: list[Flag] = field(default_factory=list)
    sessions: list[AgentSession] = field(default_factory=list)
    prompts: dict = field(default_factory=dict)  # session id -> kept prompt text, or None
    audit: list[AuditEvent] = field(default_factory=list)
    mentions: list[Mention] = field(default_factory=list)
    mentions_cut: bool = False
    problems: list[str] = field(default_factory=list)  # what storage could not give

    def counts(self) -> dict:
        return {
            "projects": len(self.projects),
            "profiles": len(self.profiles),
            "revisions": sum(len(p.revisions) for p in self.profiles),
            "proposals": len(self.proposals),
            "decisions": len(self.decisions),
            "flags": len(self.flags),
            "sessions": len(self.sessions),
            "audit_events": len(self.audit),
            "mentions": len(self.mentions),
        }


def searched_projects(request: SubjectRequest, *, by) -> list[Project]:
    """The request's project, or every project whose records the handler may read."""
    visible = permissions.reviewable_projects(by)
    if request.project_id:
        visible = visible.filter(pk=request.project_id)
    return list(visible.order_by("name"))


def subject_of(request: SubjectRequest) -> Person:
    user = request.user
    emails = {request.email} | ({user.email} if user and user.email else set())
    return Person.of(
        user.get_username() if user else "",
        first=user.first_name if user else (request.name.split(" ", 1)[0] if " " in request.name else ""),
        last=user.last_name if user else (request.name.split(" ", 1)[1] if " " in request.name else ""),
        emails=emails,
        phones=[request.phone] if request.phone else [],
    )


def others_in(projects: list[Project], subject: Person) -> list[Person]:
    """The other accounts of these projects: their details are withheld from the answer."""
    from django.contrib.auth import get_user_model

    people = (
        get_user_model()
        .objects.filter(Q(memberships__project__in=projects) | Q(is_superuser=True))
        .exclude(username=subject.username)
        .distinct()
    )
    return [
        Person.of(u.get_username(), first=u.first_name, last=u.last_name, emails=[u.email] if u.email else [])
        for u in people
    ]


def traces(request: SubjectRequest, *, by, texts: bool = True) -> Traces:
    """What is held about the request's person. `texts`: also read the profile revisions' and
    the kept prompts' texts from S3 (the answer needs them; the inventory does not)."""
    projects = searched_projects(request, by=by)
    subject = subject_of(request)
    found = Traces(projects=projects, subject=subject, others=others_in(projects, subject))
    user = request.user
    files = []
    if user is not None:
        files = list(
            MemoryFile.objects.filter(project__in=projects, scope=MemoryFile.Scope.USER, user=user)
            .select_related("project", "user", "head")
            .order_by("project__name")
        )
        by_file: dict = {}
        for revision in Revision.objects.filter(file__in=files).order_by("file_id", "number"):
            by_file.setdefault(revision.file_id, []).append(revision)
        for file in files:
            profile = Profile(project=file.project, file=file, revisions=by_file.get(file.pk, []))
            if texts:
                _profile_texts(profile, found.problems)
            found.profiles.append(profile)
        found.proposals = list(
            Proposal.objects.filter(file__in=files)
            .select_related("agent", "project", "file", "file__user", "decided_by", "session")
            .order_by("created_at")
        )
        found.decisions = [p for p in found.proposals if p.decided_by_id == user.pk]
        found.withdrawals = list(ConsentWithdrawal.objects.filter(user=user).select_related("project"))
        found.flags = list(
            Flag.objects.filter(file__in=files)
            .select_related("project", "file", "file__user", "revision", "created_by")
            .prefetch_related("replies", "replies__author")
            .order_by("created_at")
        )
        found.sessions = list(
            AgentSession.objects.filter(user=user, agent__project__in=projects)
            .select_related("agent", "agent__project")
            .order_by("created_at")
        )
        if texts:
            found.prompts = _prompts(found.sessions, found.problems)
        found.audit = list(_audit_about(user, projects, files, found))
    found.mentions, found.mentions_cut = mentions(projects, subject, exclude=[f.pk for f in files])
    return found


def _profile_texts(profile: Profile, problems: list[str]) -> None:
    live = [r for r in profile.revisions if not r.is_deletion and r.purged_at is None]
    for revision in profile.revisions:
        profile.texts[revision.number] = "" if revision.is_deletion else None
    try:
        read = revision_texts(profile.project, live)
    except StoreError as exc:
        problems.append(f"{profile.file.display_path} ({profile.project.slug}): {exc.message}")
        return
    for revision in live:
        profile.texts[revision.number] = read[revision.pk]


def _prompts(sessions: list[AgentSession], problems: list[str]) -> dict:
    kept = [s for s in sessions if s.prompt_stored and s.prompt_sha256]

    def read(session):
        try:
            return receipts.prompt_read(project=session.agent.project, sha256=session.prompt_sha256)
        except StoreError as exc:
            problems.append(f"session {session.pk}: {exc.message}")
            return None

    texts = list(POOL.map(read, kept)) if kept else []
    return {s.pk: text for s, text in zip(kept, texts, strict=True)}


def _audit_about(user, projects: list[Project], files: list[MemoryFile], found: Traces):
    """Events about the person, and by them: their account, memberships, profile files,
    proposals, flags and sessions, events naming them in their details."""
    about = (
        Q(actor_user=user)
        | Q(object_type="user", object_id=str(user.pk))
        | Q(details__user_id=user.pk)
        | Q(details__user=user.get_username())
        | Q(object_type="memoryfile", object_id__in=[str(f.pk) for f in files])
        | Q(object_type="proposal", object_id__in=[str(p.pk) for p in found.proposals])
        | Q(object_type="agentsession", object_id__in=[str(s.pk) for s in found.sessions])
        | Q(object_type="subjectrequest", object_id__in=_request_ids(user))
    )
    where = Q(project__in=projects) | Q(project__isnull=True)
    return AuditEvent.objects.filter(about & where).order_by("seq", "pk")


def _request_ids(user) -> list[str]:
    return [str(pk) for pk in SubjectRequest.objects.filter(user=user).values_list("pk", flat=True)]


def mentions(projects: list[Project], subject: Person, *, exclude: list) -> tuple[list[Mention], bool]:
    """Lines naming the person in the projects' files (their own profiles left out), each once:
    the newest revision that holds the line. Texts come from the search copies the save
    transaction keeps (memory.indexing), every revision's: a line removed since still counts."""
    found: dict = {}
    heads = dict(
        MemoryFile.objects.filter(project__in=projects).exclude(head=None).values_list("pk", "head__number")
    )
    files = {
        f.pk: f
        for f in MemoryFile.objects.filter(project__in=projects)
        .exclude(pk__in=exclude)
        .select_related("project", "agent", "user")
    }
    rows = (
        SearchText.objects.filter(file_id__in=list(files))
        .order_by("file_id", "-number")
        .values_list("file_id", "number", "text")
        .iterator(chunk_size=200)
    )
    cut = False
    for file_id, number, text in rows:
        for index, line in enumerate(text.split("\n"), start=1):
            matched = hits(line, subject)
            if not matched or (file_id, line) in found:
                continue
            if len(found) >= MENTIONS_MAX:
                cut = True
                break
            file = files[file_id]
            found[(file_id, line)] = Mention(
                id=f"{file_id}:{number}:{index}",
                project=file.project,
                file=file,
                revision=number,
                line=index,
                text=line,
                kinds=sorted({h.kind for h in matched}),
                in_head=heads.get(file_id) == number,
            )
    result = sorted(found.values(), key=lambda m: (m.project.name, m.file.display_path, -m.revision, m.line))
    origins_fill(result)
    return result, cut


def origins_fill(found: list[Mention]) -> None:
    """Each mention's origin, from blame (memory.blame): the revision that introduced the
    line, its author, time and session. The one place a line's origin is looked up: one line
    map per file and revision, one lookup of the origin revisions per project. A line whose
    map cannot be read (storage did not answer while filling in older history) keeps the
    revision it was found in, marked not exact."""
    by_revision: dict = {}
    for mention in found:
        by_revision.setdefault((mention.file.pk, mention.revision), []).append(mention)
    wanted: dict = {}  # project pk -> origin revision pks
    located: dict = {}  # mention id -> (origin pk, exact)
    for (_file_id, number), group in by_revision.items():
        file = group[0].file
        try:
            idents = lineage.line_map(file, number)
        except StoreError:
            idents = []
        for mention in group:
            if 1 <= mention.line <= len(idents):
                pk, _index = linemaps.origin(idents[mention.line - 1])
                located[mention.id] = pk
                wanted.setdefault(file.project_id, (file.project, set()))[1].add(pk)
    origins: dict = {}
    for project, pks in wanted.values():
        origins.update(blame.origins_of(project, pks, tool_calls=0))
    found_in = _revisions_found_in([m for m in found if located.get(m.id) not in origins])
    for mention in found:
        origin = origins.get(located.get(mention.id))
        if origin is not None:
            revision = origin.revision
            mention.origin = Origin(
                revision=revision.number,
                author=revision.author_label,
                author_kind=revision.author_kind,
                at=revision.created_at,
                session=revision.session_ref,
                exact=not origin.approximate,
            )
        elif (revision := found_in.get((mention.file.pk, mention.revision))) is not None:
            mention.origin = Origin(
                revision=revision.number,
                author=revision.author_label,
                author_kind=revision.author_kind,
                at=revision.created_at,
                session=revision.session_ref,
                exact=False,
            )


def _revisions_found_in(found: list[Mention]) -> dict:
    wanted = {(m.file.pk, m.revision) for m in found}
    if not wanted:
        return {}
    rows = Revision.objects.filter(
        file_id__in={f for f, _n in wanted}, number__in={n for _f, n in wanted}
    ).only("file_id", "number", "author_label", "author_kind", "created_at", "session_ref")
    return {(r.file_id, r.number): r for r in rows if (r.file_id, r.number) in wanted}
