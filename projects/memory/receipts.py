"""The exact prompts pre hooks returned, kept in S3 under their sha256 (`layout.prompt_key`).

Content-addressed, so identical prompts are stored once and a stored prompt proves itself:
reading checks the bytes against the name. Writing uses If-None-Match, so a retry or a second
worker can never replace what is there; a lost answer is settled by the next identical
prompt (412: already there) or by reading, which does not trust the session's flag.

A new prompt reaches S3 after the answer, not before it (docs/ARCHITECTURE.md, "The kept
prompt"): the pre hook commits its text in a PendingPrompt row with the session
(`prompt_pending`), and once the transaction is committed a thread of this process PUTs it
and deletes the row (`prompt_store_later`), under the row's lock, which an erasure or a
retention run takes too before it deletes the row and the object. A process that dies in
between leaves the row: the worker's sweep stores it (`pending_sweep`), and until then the
prompt is read from the row (`prompt_read`).
"""

from __future__ import annotations

import atexit
import datetime as dt
import hashlib
import logging
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait

from django.core.cache import cache
from django.db import close_old_connections, connection, transaction
from django.utils import timezone

from projects.memory import holds, layout
from projects.memory.errors import StorageUnavailable
from projects.memory.storage import PreconditionFailed, storage_for
from projects.models import PendingPrompt

log = logging.getLogger(__name__)

_KNOWN_TTL = 24 * 3600

# One thread a process stores the prompts pre hooks kept: it holds one database connection,
# and a prompt is new only when a file it draws from changed.
_WRITER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mgc-prompt-put")
_QUEUED: set[Future] = set()
_QUEUED_LOCK = threading.Lock()
# The sweep stores rows older than this (younger ones are their pre hook's thread's to store).
PENDING_GRACE = dt.timedelta(seconds=30)


def _known_key(project, sha256: str) -> str:
    return f"mgc:prompt:{project.pk}:{sha256}"


def prompt_known(project, sha256: str) -> bool:
    """The prompt is kept already (in S3, or pending in the database): no write at all."""
    return bool(cache.get(_known_key(project, sha256)))


def prompt_pending(*, project, sha256: str, prompt: str, user=None) -> None:
    """Keep a new prompt's text in the database, in the caller's transaction (the pre hook's,
    with its session); `prompt_store_later` puts it in S3 once that transaction commits."""
    PendingPrompt.objects.bulk_create(
        [PendingPrompt(project=project, sha256=sha256, text=prompt, user=user)], ignore_conflicts=True
    )


def prompt_store_later(*, project, sha256: str) -> None:
    """After the pending row committed: this process's writer thread stores it in S3."""
    cache.set(_known_key(project, sha256), True, _KNOWN_TTL)
    after_answer(lambda: prompt_store_pending(project=project, sha256=sha256))


def after_answer(work: Callable[[], object]) -> None:
    """Run `work` (database and S3 writes that may come late) in this process's writer thread,
    off the answer's path. Now instead, before the answer: inside a caller's transaction
    (another connection could not see what that transaction wrote), and on SQLite, which
    takes one writer at a time anyway (a thread writing beside the requests would only make
    them wait, or fail them, in the tests' shared in-memory database)."""
    if connection.in_atomic_block or connection.vendor == "sqlite":
        work()
        return
    future = _WRITER.submit(_in_thread, work)
    with _QUEUED_LOCK:
        _QUEUED.add(future)
    future.add_done_callback(_done)


def _done(future: Future) -> None:
    with _QUEUED_LOCK:
        _QUEUED.discard(future)


def _in_thread(work: Callable[[], object]) -> None:
    close_old_connections()
    try:
        work()
    except Exception:  # a pending prompt's row stays (the worker's sweep stores it); a count is counted again
        log.exception("work after a pre hook's answer failed")
    finally:
        close_old_connections()


def settle(timeout: float = 30) -> None:
    """Wait until this process's queued prompt PUTs are done (tests, shutdown)."""
    with _QUEUED_LOCK:
        queued = list(_QUEUED)
    if queued:
        wait(queued, timeout=timeout)


atexit.register(settle)


def prompt_store_pending(*, project, sha256: str, skip_locked: bool = False) -> bool:
    """Put a pending prompt in S3 and delete its row, under the row's lock (an erasure or a
    retention run that deletes it waits, then deletes the object as a stored one). True when
    it is stored (or gone: stored by another, erased), False when S3 did not answer."""
    with transaction.atomic():
        rows = PendingPrompt.objects.select_for_update(skip_locked=skip_locked, of=("self",)).filter(
            project=project, sha256=sha256
        )
        row = rows.select_related("user").first()
        if row is None:
            return True
        try:
            _put(project, sha256, row.text, row.user)
        except StorageUnavailable:
            return False
        row.delete()
    return True


def pending_sweep(*, grace: dt.timedelta = PENDING_GRACE, limit: int = 200) -> int:
    """Store the prompts whose pre hook's process died before it did (run by the worker).
    Returns how many it stored."""
    stored = 0
    due = (
        PendingPrompt.objects.filter(created_at__lt=timezone.now() - grace)
        .select_related("project")
        .order_by("created_at")[:limit]
    )
    for row in list(due):
        if prompt_store_pending(project=row.project, sha256=row.sha256, skip_locked=True):
            stored += 1
    return stored


def pending_drop(*, project, sha256s) -> None:
    """Before an erasure or a retention run deletes these prompts' S3 objects: take their
    pending rows (waiting for a PUT under way, which then left an object to delete) and delete
    them, so no PUT comes after."""
    with transaction.atomic():
        rows = PendingPrompt.objects.select_for_update().filter(project=project, sha256__in=list(sha256s))
        found = list(rows.values_list("pk", flat=True))
        if found:
            PendingPrompt.objects.filter(pk__in=found).delete()


def prompt_keep(*, project, prompt: str, sha256: str, user=None) -> bool:
    """Store the prompt once; True when it is in S3 (now or before), False when storage did not
    answer (the pre hook still answers; the receipt says the prompt was not kept). A prompt
    for a person or project under a legal hold is held from the moment it is written."""
    known = _known_key(project, sha256)
    if cache.get(known):
        return True  # stored before: no request at all on the warm path
    try:
        _put(project, sha256, prompt, user)
    except StorageUnavailable:
        return False
    cache.set(known, True, _KNOWN_TTL)
    return True


def _put(project, sha256: str, prompt: str, user) -> None:
    """The prompt's object, written only where none is (412: it is there, and its name is its
    content), held from the moment it exists when a hold covers the person or project. May
    raise StorageUnavailable."""
    try:
        storage_for(project).write(
            layout.prompt_key(project.prefix, sha256),
            prompt.encode("utf-8"),
            if_none_match=True,
            ambiguous="unknown",
            legal_hold=holds.prompt_held(project, user),
        )
    except PreconditionFailed:
        pass


def prompt_read(*, project, sha256: str) -> str | None:
    """The stored prompt, or None when it is not there or does not match its name. May raise
    StorageUnavailable."""
    try:
        found = storage_for(project).read(layout.prompt_key(project.prefix, sha256))
    except StorageUnavailable as exc:
        found, down = None, exc
    else:
        down = None
    if found is None:  # not in S3 (yet): a prompt still pending is read from its row
        text = PendingPrompt.objects.filter(project=project, sha256=sha256).values_list("text", flat=True)
        text = next(iter(text), None)
        if text is not None and hashlib.sha256(text.encode("utf-8")).hexdigest() == sha256:
            return text
        if down is not None:
            raise down
        return None
    if hashlib.sha256(found.body).hexdigest() != sha256:
        return None
    return found.body.decode("utf-8")


def prompt_forget(*, project, sha256s: list[str]) -> None:
    """After the prompts were purged (erasure): the next identical prompt is stored again."""
    cache.delete_many([_known_key(project, sha) for sha in sha256s])


def carried_files(receipt: list[dict]) -> list[dict]:
    """The files a receipt says the prompt carried: each file of a section that made it into
    the prompt (a section cut away whole carried nothing) and had text. {file_id, path,
    revision, tag, cut}; `cut` when the section was truncated, so a given line may be
    missing. Receipts written before per-file tokens were kept count every file listed."""
    found = []
    for section in receipt or []:
        if not isinstance(section, dict) or not section.get("tokens"):
            continue
        for f in section.get("files") or []:
            if not isinstance(f, dict) or not isinstance(f.get("revision"), int):
                continue
            if f.get("tokens", 1) == 0 or not _is_uuid(f.get("file_id")):
                continue
            found.append(
                {
                    "file_id": f["file_id"],
                    "path": str(f.get("path", ""))[:400],
                    "revision": int(f["revision"]),
                    "tag": str(section.get("tag", ""))[:80],
                    "cut": bool(section.get("truncated")),
                }
            )
    return found


def _is_uuid(value) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return value is not None
