"""Catching up with the bucket before a prompt is assembled: what runners may have written
straight to S3 under the prefixes a prompt draws from is listed (one LIST per prefix, shared
by the hooks that arrive together), compared with the ETags the console recorded, and adopted.
"""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import Future, ThreadPoolExecutor

from django.db import connection
from django.db.models import Q

from projects.memory import layout, refusals
from projects.memory.adoption import adopt, refuse_name
from projects.memory.feed import feed_for
from projects.memory.reading import POOL
from projects.memory.records import file_ensure
from projects.memory.storage import storage_for
from projects.models import Agent, MemoryFile, Project, Revision


def bucket_catch_up(
    *, project: Project, agent: Agent, user=None, workspace: bool = True, everything: bool = False
) -> list[Revision]:
    """Adopt what the bucket holds under the prefixes a prompt draws from (the agent's files,
    the user's profile, the workspace), so the pre hook injects it and its receipt names it.

    One LIST per prefix, in parallel, compared with the ETags the console recorded; only the
    files that differ are read and recorded, under their row lock (a save still running is
    waited for, then seen as what it is). New workspace files get a record first. Changes a
    runner proved it wrote are attributed to it (see projects.provenance), others are
    `external`. Returns the revisions it recorded."""
    return bucket_catch_up_start(
        project=project, agent=agent, user=user, workspace=workspace, everything=everything
    ).finish()


class _SharedListings:
    """LISTs of one prefix shared by the pre hooks that need them at once, in this process.

    A caller needs a listing that *started after it arrived*, or it could miss a direct write
    made just before. So at most one LIST of a prefix runs at a time: the first caller starts
    it; callers arriving while it runs all join one queued LIST, which starts when the running
    one ends (after every one of them arrived). Alone, a hook lists at once as before; under
    load, one LIST serves every hook that arrived during the previous one, which spares the
    S3 server most of its work (SeaweedFS spends about 3 ms of CPU on a LIST)."""

    def __init__(self, pool: ThreadPoolExecutor):
        self._pool = pool
        self._lock = threading.Lock()
        self._slots: dict[tuple, list] = {}  # key -> [running future, queued future or None]

    def get(self, storage, prefix: str) -> Future:
        key = (storage.endpoint_url, storage.bucket_name, prefix)
        with self._lock:
            slot = self._slots.get(key)
            if slot is None:
                future: Future = Future()
                self._slots[key] = [future, None]
            else:
                if slot[1] is None:
                    slot[1] = Future()
                return slot[1]
        self._pool.submit(self._run, key, storage, prefix, future)
        return future

    def _run(self, key: tuple, storage, prefix: str, future: Future) -> None:
        try:
            future.set_result(storage.etags(prefix))
        except BaseException as exc:  # the waiting hooks get it (StorageUnavailable)
            future.set_exception(exc)
        with self._lock:
            slot = self._slots[key]
            queued = slot[1]
            if queued is None:
                del self._slots[key]
            else:
                slot[0], slot[1] = queued, None
        if queued is not None:
            self._pool.submit(self._run, key, storage, prefix, queued)


_LISTINGS = _SharedListings(POOL)


# What the pre hook never reads of the records it assembles from: decoding a head's findings
# and message parameters (JSON) for every file was a good part of the hook's CPU.
PROMPT_DEFERRED = (
    "created_at",
    "head__findings",
    "head__message",
    "head__message_params",
    "head__author_label",
    "head__expired_rule",
    "head__restored_from",
)


class CatchUp:
    """A catch-up whose LISTs are in flight (started by `bucket_catch_up_start`).

    The records (`records`: the agent's, the user's and, if asked, the workspace's files with
    their heads) are read at the first look, after the LISTs were sent, so the caller may
    assemble from them meanwhile (the pool's threads only talk to S3); `heads()` is the small
    read of which head each of those files has, for a caller that may need no more. `finish()`
    waits for the listings, compares them with the records and adopts what differs, as
    `bucket_catch_up` does; `changed` then says whether anything differed, i.e. whether work
    done from `records` may have missed a direct write (even one a concurrent catch-up adopted
    first). StorageUnavailable if a LIST failed."""

    def __init__(self, project: Project, agent: Agent, user, prefixes: list[str], wanted: Q, workspace: bool):
        self.project, self.agent, self.user = project, agent, user
        storage = storage_for(project)
        self._feed = feed_for(storage.bucket_name)
        self._listings = []  # (prefix, the feed's mark when it was sent, its future)
        for prefix in prefixes:
            mark = self._feed.mark(prefix) if self._feed is not None else None
            if mark is not None and self._feed.seen(prefix, mark):
                continue  # the feed saw nothing change there since this process listed it
            self._listings.append((prefix, mark, _LISTINGS.get(storage, prefix)))
        self._wanted, self._workspace = wanted, workspace
        self._records: list[MemoryFile] | None = None
        self.changed = False

    @property
    def records(self) -> list[MemoryFile]:
        if self._records is None:
            self._records = list(
                MemoryFile.objects.filter(self._wanted, project=self.project)
                .select_related("head")
                .defer(*PROMPT_DEFERRED)
            )
            for record in self._records:  # one project object for all, not one per row
                record.project = self.project
        return self._records

    def heads(self) -> list[tuple]:
        """(file id, head id) of each file `records` holds, in one small read (no join, no
        model, no ordering): what a prompt drawn from them is, as far as the database knows.
        Written as SQL: on the warm pre hook's path, building the ORM's query cost more CPU
        than the database's answer."""
        if self._records is not None:
            return [(f.pk, f.head_id) for f in self._records]
        sql, params = _heads_query(self.project, self.agent, self.user, self._workspace)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        return [(pk if isinstance(pk, uuid.UUID) else uuid.UUID(pk), head) for pk, head in rows]

    @property
    def listed_prefixes(self) -> list[str]:
        """The prefixes this catch-up lists (the rest were not written past the console)."""
        return [prefix for prefix, _mark, _future in self._listings]

    def finish(self) -> list[Revision]:
        project, agent, user = self.project, self.agent, self.user
        prefixes = self.listed_prefixes
        if not prefixes:
            return []
        # Only the records under a listed prefix can be compared with what the LIST saw.
        records = {f.key: f for f in self.records if f.key.startswith(tuple(prefixes))}
        listed = {
            key: etag for _prefix, _mark, future in self._listings for key, etag in future.result().items()
        }
        adopted: list[Revision] = []
        for key, record in records.items():
            live = record.head is not None and not record.head.is_deletion
            if key in listed and listed[key] == record.refused_etag and record.refused_etag:
                continue  # a write refused already: the head stays, nothing to read again
            if (key in listed and (not live or listed[key] != record.head_etag)) or (
                key not in listed and live
            ):
                self.changed = True
                adopted += _found(adopt(record))
        refused = None
        for key in sorted(set(listed) - set(records)):
            parsed = layout.parse_key(project.prefix, key)
            if parsed.kind not in (layout.SCOPE_AGENT, layout.SCOPE_USER, layout.SCOPE_WORKSPACE):
                if refusals.name_refused(project.prefix, key):
                    if refused is None:
                        refused = refusals.present_keys(project)
                    if (key, listed[key]) not in refused:
                        refuse_name(project, key)
                continue  # not a memory file: check_isolation reports what else it is
            self.changed = True
            record = file_ensure(
                project=project,
                scope=parsed.kind,
                agent=agent if parsed.kind == layout.SCOPE_AGENT else None,
                user=user if parsed.kind == layout.SCOPE_USER else None,
                path=parsed.path,
            )
            adopted += _found(adopt(record))
        if self._feed is not None:
            for prefix, mark, _future in self._listings:
                self._feed.listed(prefix, mark)
        return adopted


def bucket_catch_up_start(
    *, project: Project, agent: Agent, user=None, workspace: bool = True, everything: bool = False
) -> CatchUp:
    """Start a catch-up's LISTs (see `bucket_catch_up`) and return at once.

    Only what a runner's S3 credentials may write is listed (Project.runner_writable): the
    agent's folder if its runners may replace an agent file, the workspace if any runner of
    the project may write there; never the profiles (no runner credential writes USER.md).
    Writes with the console's own keys, or anyone else's, are out-of-band: reconcile and the
    next save's ETag check find them. With a change feed (memory.feed), a prefix is listed
    only when something changed under it since this process last listed it. `everything`
    lists all three prefixes whatever the credentials (reconcile-like callers)."""
    prefix = project.prefix
    writable = project.runner_writable or {}
    prefixes = []
    wanted = Q(scope=MemoryFile.Scope.AGENT, agent=agent)
    if everything or str(agent.pk) in writable.get("agents", []):
        prefixes.append(layout.agent_prefix(prefix, agent.pk))
    if user is not None:
        wanted |= Q(scope=MemoryFile.Scope.USER, user=user)
        if everything:
            prefixes.append(layout.user_prefix(prefix, user.pk))
    if workspace:
        wanted |= Q(scope=MemoryFile.Scope.WORKSPACE)
        if everything or writable.get("workspace"):
            prefixes.append(layout.workspace_prefix(prefix))
    return CatchUp(project, agent, user, prefixes, wanted, workspace)


def _heads_query(project: Project, agent: Agent, user, workspace: bool) -> tuple[str, list]:
    """The `wanted` records of `bucket_catch_up_start` (the agent's files, the person's, the
    workspace's), as SQL for their ids and heads."""
    meta = MemoryFile._meta
    column = {name: meta.get_field(name).column for name in ("project", "scope", "agent", "user", "head")}

    def prep(name: str, value):
        return meta.get_field(name).get_db_prep_value(value, connection)

    wanted = [f"({column['scope']} = %s AND {column['agent']} = %s)"]
    params = [MemoryFile.Scope.AGENT.value, prep("agent", agent.pk)]
    if user is not None:
        wanted.append(f"({column['scope']} = %s AND {column['user']} = %s)")
        params += [MemoryFile.Scope.USER.value, prep("user", user.pk)]
    if workspace:
        wanted.append(f"{column['scope']} = %s")
        params.append(MemoryFile.Scope.WORKSPACE.value)
    sql = (
        f"SELECT {meta.pk.column}, {column['head']} FROM {meta.db_table} "  # noqa: S608 - names from the model
        f"WHERE {column['project']} = %s AND ({' OR '.join(wanted)})"
    )
    return sql, [prep("project", project.pk), *params]


def _found(revision: Revision | None) -> list[Revision]:
    return [revision] if revision is not None else []
