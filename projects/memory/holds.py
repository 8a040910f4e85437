"""Which legal holds stand over what: the questions the store asks before it deletes or
writes, and the keys a hold puts an S3 legal hold on. Reads only (placing and releasing holds
is governance.holds).

A hold covers:
- a project: everything under the project's prefix;
- a person: their USER.md in every project (its head and snapshots), and what agents were
  told about them (their sessions' kept prompts);
- a file: its head and snapshots;
- workspace files by glob: each matching file's head and snapshots.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q
from django.utils.translation import gettext as _

from projects.memory import globs, layout
from projects.models import AgentSession, LegalHold, MemoryFile, Project


def standing():
    return LegalHold.objects.filter(released_at__isnull=True)


def covering_file(file: MemoryFile) -> list[LegalHold]:
    """The holds standing over a file, oldest first."""
    wanted = (
        Q(kind=LegalHold.Kind.PROJECT, project_id=file.project_id)
        | Q(kind=LegalHold.Kind.FILE, file_id=file.pk)
        | Q(kind=LegalHold.Kind.GLOB, project_id=file.project_id)
    )
    if file.scope == MemoryFile.Scope.USER and file.user_id:
        wanted |= Q(kind=LegalHold.Kind.PERSON, user_id=file.user_id)
    found = []
    for hold in standing().filter(wanted).order_by("placed_at"):
        if hold.kind != LegalHold.Kind.GLOB or globs.source_matches(hold.glob, file.source_path):
            found.append(hold)
    return found


def covering_person(user, project: Project | None = None) -> list[LegalHold]:
    """The holds standing over a person's memory: theirs, and (with `project`) that project's."""
    wanted = Q(kind=LegalHold.Kind.PERSON, user=user)
    if project is not None:
        wanted |= Q(kind=LegalHold.Kind.PROJECT, project=project)
    return list(standing().filter(wanted).order_by("placed_at"))


def covering_sessions(project: Project) -> tuple[bool, set[int]]:
    """(the whole project is held, the users whose sessions a person's hold covers)."""
    holds = list(
        standing()
        .filter(Q(project=project, kind=LegalHold.Kind.PROJECT) | Q(kind=LegalHold.Kind.PERSON))
        .values_list("kind", "user_id")
    )
    return (
        any(kind == LegalHold.Kind.PROJECT for kind, _user in holds),
        {user for kind, user in holds if kind == LegalHold.Kind.PERSON and user},
    )


def any_standing(project: Project) -> bool:
    """Whether anything in the project may be held: one cheap query for the write paths, which
    then ask the precise question only when it is true."""
    return standing().filter(Q(project=project) | Q(kind=LegalHold.Kind.PERSON)).exists()


def prompt_held(project: Project, user) -> bool:
    """Whether a prompt kept for this person in this project falls under a hold."""
    return (
        standing()
        .filter(Q(project=project, kind=LegalHold.Kind.PROJECT) | Q(kind=LegalHold.Kind.PERSON, user=user))
        .exists()
        if user is not None
        else standing().filter(project=project, kind=LegalHold.Kind.PROJECT).exists()
    )


def refusal(holds: list[LegalHold]) -> str:
    """What a refused erasure, delete or expiry says: the holds by number, reason and case
    (GDPR Art. 17(3)(e) lets data needed for legal claims be kept)."""
    named = "; ".join(
        _("legal hold #%(id)s on %(what)s (%(reason)s%(case)s), placed %(when)s by %(who)s")
        % {
            "id": h.pk,
            "what": h.describe(),
            "reason": h.reason,
            "case": f", {h.case_reference}" if h.case_reference else "",
            "when": h.placed_at.date().isoformat(),
            "who": h.placed_by.get_username() if h.placed_by_id else "?",
        }
        for h in holds
    )
    return _("Refused: %(holds)s. Release the hold first.") % {"holds": named}


FEW_FILES = 20  # above this, a hold's snapshots are found by listing `_history/` once, not per file


@dataclass(frozen=True)
class Unit:
    """One listing a hold's storage sweep makes: a prefix in a project's bucket, and which keys
    under it the hold covers: all of them, these exact keys, the workspace files a glob names,
    or the snapshots of these files."""

    project: Project
    prefix: str
    keys: frozenset[str] | None = None
    glob: str = ""
    file_ids: frozenset[str] | None = None

    @property
    def name(self) -> str:
        """Its place in a sweep (units go in this order) and the mark a stopped sweep keeps."""
        return f"{self.project.pk}|{self.prefix}"

    def covers(self, key: str) -> bool:
        if not key.startswith(self.prefix):
            return False
        rest = key[len(self.prefix) :]
        if self.keys is not None:
            return key in self.keys
        if self.glob:
            return globs.source_matches(self.glob, globs.WORKSPACE_PREFIX + rest)
        if self.file_ids is not None:
            return rest.partition("/")[0] in self.file_ids
        return True


def _history_units(project: Project, files: list[MemoryFile]) -> list[Unit]:
    if len(files) <= FEW_FILES:
        return [Unit(project, layout.history_prefix(project.prefix, f.pk)) for f in files]
    return [Unit(project, layout.history_root(project.prefix), file_ids=frozenset(str(f.pk) for f in files))]


def hold_units(hold: LegalHold) -> list[Unit]:
    """What the hold puts an S3 legal hold on, as listings in the order a sweep makes them:
    every version of every key they cover. A glob covers files that match it later too; a
    person, the profile of any project they join later."""
    units: list[Unit] = []
    if hold.kind == LegalHold.Kind.PROJECT:
        units = [Unit(hold.project, hold.project.prefix)]
    elif hold.kind == LegalHold.Kind.FILE:
        file = hold.file
        if file is not None:
            units = [Unit(file.project, file.key, keys=frozenset([file.key]))]
            units += _history_units(file.project, [file])
    elif hold.kind == LegalHold.Kind.GLOB:
        project = hold.project
        files = [
            f
            for f in MemoryFile.objects.filter(project=project, scope=MemoryFile.Scope.WORKSPACE).only(
                "pk", "scope", "path"
            )
            if globs.source_matches(hold.glob, f.source_path)
        ]
        units = [Unit(project, layout.workspace_prefix(project.prefix), glob=hold.glob)]
        units += _history_units(project, files)
    else:
        for project in Project.objects.filter(
            Q(memberships__user=hold.user) | Q(files__user=hold.user)
        ).distinct():
            units.append(Unit(project, layout.user_prefix(project.prefix, hold.user_id)))
            units += _history_units(
                project,
                list(
                    MemoryFile.objects.filter(
                        project=project, scope=MemoryFile.Scope.USER, user=hold.user
                    ).only("pk")
                ),
            )
            shas = set(
                AgentSession.objects.filter(agent__project=project, user=hold.user)
                .exclude(prompt_sha256="")
                .values_list("prompt_sha256", flat=True)
            )
            if shas:
                keys = frozenset(layout.prompt_key(project.prefix, sha) for sha in shas)
                units.append(Unit(project, layout.prompts_root(project.prefix), keys=keys))
    return sorted(units, key=lambda unit: unit.name)


def covering_key(project: Project, key: str) -> list[LegalHold]:
    """The standing holds that cover a key of the project's, whatever it is (a file's head or
    snapshot, a kept prompt, a snapshot of a file with no record). Oldest first."""
    if not any_standing(project):
        return []
    found = standing().filter(Q(project=project) | Q(kind=LegalHold.Kind.PERSON)).order_by("placed_at")
    return [
        hold
        for hold in found.select_related("project", "file__project", "user")
        if any(unit.project.pk == project.pk and unit.covers(key) for unit in hold_units(hold))
    ]
