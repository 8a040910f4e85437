"""Who owns each key under a project's prefix, and the repairs that follow from it.

`classify` is the one answer to "whose is this object?", shared by `reconcile` (which acts on
it) and `isolation.check_isolation` (which only reports), so the two never disagree about a
key:

- `head`, `snapshot`, `session`, `prompt` (ok): a record owns it;
- `orphan_prompt` (warning): a kept prompt whose pre hook did not commit its session;
- `orphan_snapshot` (warning): a snapshot no revision points to, from a save that failed or
  still runs: of a recorded file, or of a file whose record never committed (a first save
  whose worker died: the post hook makes the record in the save's transaction); reconcile
  deletes it (every version) after a grace period, unless a legal hold covers it;
- `untracked` (warning): a memory file with a valid owner but no record yet (a sandbox wrote
  it); reconcile, or the next pre hook, adopts it;
- `refused` (warning): an object the console refused to adopt (too large, not text, a name
  it refuses): never injected; admins delete it (see `refusals`);
- `foreign` (error): of an agent, member or session this project does not have, or the
  snapshot of another project's file (never touched);
- `outside_layout` (error): not a key the layout builds.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.utils import timezone

from projects.memory import adoption, holds, layout, records, refusals
from projects.memory.errors import Held
from projects.memory.objects import purge
from projects.memory.storage import storage_for
from projects.models import Agent, AgentSession, MemoryFile, Project, Revision

OK, WARNING, ERROR = "ok", "warning", "error"


@dataclass(frozen=True)
class KeyStatus:
    key: str
    kind: str
    severity: str
    detail: str
    parsed: layout.ParsedKey
    age_seconds: float = 0.0


@dataclass
class Repair:
    """What reconcile did (or left alone and reports) about one key."""

    kind: str  # adopted | orphan_snapshot | untracked_adopted | refused | outside_layout | foreign
    key: str
    detail: str = ""


def classify(project: Project, objects: list[dict], *, now: dt.datetime | None = None) -> list[KeyStatus]:
    """The status of each object (dicts with Key and LastModified) under the project's prefix."""
    now = now or timezone.now()
    prefix = project.prefix
    files = set(MemoryFile.objects.filter(project=project).values_list("key", flat=True))
    file_ids = {str(pk) for pk in MemoryFile.objects.filter(project=project).values_list("pk", flat=True)}
    snapshots = set(
        Revision.objects.filter(file__project=project)
        .exclude(snapshot_key="")
        .values_list("snapshot_key", flat=True)
    )
    agents = set(Agent.objects.filter(project=project).values_list("pk", flat=True))
    members = set(project.memberships.values_list("user_id", flat=True))
    sessions = {
        str(pk): str(agent_id)
        for pk, agent_id in AgentSession.objects.filter(agent__project=project).values_list("pk", "agent_id")
    }
    prompts = set(
        AgentSession.objects.filter(agent__project=project).values_list("prompt_sha256", flat=True).distinct()
    )
    refused = refusals.present_keys(project)
    # Snapshots of file ids this project has no record of: another project's file (foreign),
    # or a file whose first save never committed (an orphan).
    unknown = set()
    for obj in objects:
        parsed = layout.parse_key(prefix, obj["Key"]) if obj["Key"].startswith(prefix) else None
        if parsed is not None and parsed.kind == "history" and str(parsed.file_id) not in file_ids:
            unknown.add(parsed.file_id)
    elsewhere = (
        {str(pk) for pk in MemoryFile.objects.filter(pk__in=unknown).values_list("pk", flat=True)}
        if unknown
        else set()
    )
    out = []
    for obj in objects:
        key = obj["Key"]
        if not key.startswith(prefix):
            continue
        parsed = layout.parse_key(prefix, key)
        age = (now - obj["LastModified"]).total_seconds() if obj.get("LastModified") else 0.0

        def status(kind: str, severity: str, detail: str = "") -> KeyStatus:
            return KeyStatus(key, kind, severity, detail, parsed, age)  # noqa: B023

        if (key, obj.get("ETag", "")) in refused:
            out.append(
                status(
                    "refused",
                    WARNING,
                    "a write the console refused to adopt: admins delete it on the workspace page",
                )
            )
        elif parsed.kind is None:
            out.append(status("outside_layout", ERROR, f"in {project.slug}'s prefix, not a layout key"))
        elif parsed.kind == "history":
            if str(parsed.file_id) in elsewhere:
                out.append(status("foreign", ERROR, f"history of a file {project.slug} does not have"))
            elif str(parsed.file_id) not in file_ids:
                out.append(
                    status(
                        "orphan_snapshot",
                        WARNING,
                        "a snapshot of a file never recorded: a first save that failed (its "
                        "worker died before the commit) or is still running; reconcile deletes "
                        "it after its grace period",
                    )
                )
            elif key in snapshots:
                out.append(status("snapshot", OK))
            else:
                out.append(
                    status(
                        "orphan_snapshot",
                        WARNING,
                        "no revision points to it yet: a save that failed or is "
                        "still running; reconcile deletes it after its grace period",
                    )
                )
        elif parsed.kind == "prompt":
            if parsed.sha256 in prompts:
                out.append(status("prompt", OK))
            else:
                out.append(
                    status(
                        "orphan_prompt",
                        WARNING,
                        "a stored prompt no session names: its pre hook did not commit; harmless, kept",
                    )
                )
        elif parsed.kind == "session":
            if _session_scratch(parsed, sessions):
                out.append(status("session", OK))
            else:
                out.append(status("foreign", ERROR, f"session {project.slug} did not run"))
        elif key in files:
            out.append(status("head", OK))
        elif parsed.kind == layout.SCOPE_AGENT and parsed.agent_id not in agents:
            out.append(status("foreign", ERROR, f"agent not in {project.slug}"))
        elif parsed.kind == layout.SCOPE_USER and parsed.user_id not in members:
            out.append(status("foreign", ERROR, f"user {parsed.user_id} is not a member of {project.slug}"))
        else:
            out.append(
                status(
                    "untracked", WARNING, "no record owns it yet: reconcile (or the next pre hook) adopts it"
                )
            )
    return out


def _session_scratch(parsed: layout.ParsedKey, sessions: dict[str, str]) -> bool:
    """sessions/<agent>/<session>/... of that agent's session, or the older
    sessions/<session>/... (a first folder that is a session's id, not an agent's)."""
    if parsed.agent_id is not None:
        if sessions.get(str(parsed.session_id)) == str(parsed.agent_id):
            return True
        return str(parsed.agent_id) in sessions  # older layout, a uuid-named subfolder
    return str(parsed.session_id) in sessions


def reconcile(*, project: Project, orphan_grace_seconds: int = 600) -> list[Repair]:
    """Repair half-done saves and record external changes for one project.

    - each file whose head object differs from the recorded head gets the revision it needs
      (its author's, from the snapshot metadata, or `external`);
    - snapshots no revision points to (a save that failed after step 2) are deleted once
      older than orphan_grace_seconds (a younger one may belong to a save still running);
    - agent, user and workspace objects with no record (written by a sandbox, say) are
      adopted as new files when their owner exists; other keys are reported, not touched.
    """
    storage = storage_for(project)
    repairs: list[Repair] = []
    for file in MemoryFile.objects.filter(project=project).select_related("head", "project"):
        revision = adoption.adopt(file)
        if revision is not None:
            repairs.append(
                Repair("adopted", file.key, f"revision {revision.number} by {revision.author_label}")
            )
    for item in classify(project, storage.listing(project.prefix)):
        if item.kind == "orphan_snapshot":
            if item.age_seconds >= orphan_grace_seconds and _still_orphan(project, item):
                kept = _remove_orphan(project, storage, item.key)
                repairs.append(Repair("orphan_snapshot", item.key, kept or "deleted: no revision uses it"))
            else:
                repairs.append(Repair("orphan_snapshot", item.key, "recent, left for now"))
        elif item.kind == "untracked":
            parsed = item.parsed
            repairs.append(Repair("untracked_adopted", item.key, "new file written to storage"))
            record = records.file_ensure(
                project=project,
                scope=parsed.kind,
                agent=Agent.objects.get(pk=parsed.agent_id) if parsed.agent_id else None,
                user=get_user_model().objects.get(pk=parsed.user_id) if parsed.user_id else None,
                path=parsed.path,
            )
            adoption.adopt(record)
        elif item.kind == "outside_layout" and refusals.name_refused(project.prefix, item.key):
            if adoption.refuse_name(project, item.key) is not None:
                repairs.append(
                    Repair("refused", item.key, "a name the console refuses: recorded as a refused write")
                )
        elif item.severity == ERROR:
            repairs.append(Repair(item.kind, item.key, item.detail))
    return repairs


def _still_orphan(project: Project, item: KeyStatus) -> bool:
    """Checked again just before deleting: a save may have recorded it since the listing (the
    revision, or the file's first record), and a record in another project is not ours."""
    if Revision.objects.filter(snapshot_key=item.key).exists():
        return False
    return not MemoryFile.objects.filter(pk=item.parsed.file_id).exclude(project=project).exists()


def _remove_orphan(project: Project, storage, key: str) -> str:
    """Delete every version of an orphan snapshot, so no copy of a text that was never saved
    outlives it (erasure finds snapshots by their file's record; this one has none). Returns
    why it stays instead: a legal hold covers it (by the console's records, or by the S3
    hold on a version, which is what says so for a file that was never recorded)."""
    standing = holds.covering_key(project, key)
    if standing:
        return "kept: " + ", ".join(f"legal hold #{h.pk}" for h in standing) + " covers it"
    versions = [v for v in storage.versions(key) if v["Key"] == key and "ETag" in v]
    if any(
        v.get("VersionId") not in (None, "null") and storage.legal_hold(key, v["VersionId"]) for v in versions
    ):
        return "kept: the storage holds it (an S3 legal hold)"
    try:
        purge(project, [], keys=[key])
    except Held:
        return "kept: the storage holds it (an S3 legal hold)"
    return ""
