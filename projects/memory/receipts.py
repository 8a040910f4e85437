"""The exact prompts pre hooks returned, kept in S3 under their sha256 (`layout.prompt_key`).

Content-addressed, so identical prompts are stored once and a stored prompt proves itself:
reading checks the bytes against the name. Writing uses If-None-Match, so a retry or a second
worker can never replace what is there; a lost answer is settled by the next identical
prompt (412: already there) or by reading, which does not trust the session's flag.
"""

from __future__ import annotations

import hashlib
import uuid

from django.core.cache import cache

from projects.memory import holds, layout
from projects.memory.errors import StorageUnavailable
from projects.memory.storage import PreconditionFailed, storage_for

_KNOWN_TTL = 24 * 3600


def _known_key(project, sha256: str) -> str:
    return f"mgc:prompt:{project.pk}:{sha256}"


def prompt_keep(*, project, prompt: str, sha256: str, user=None) -> bool:
    """Store the prompt once; True when it is in S3 (now or before), False when storage did not
    answer (the pre hook still answers; the receipt says the prompt was not kept). A prompt
    for a person or project under a legal hold is held from the moment it is written."""
    known = _known_key(project, sha256)
    if cache.get(known):
        return True  # stored before: no request at all on the warm path
    try:
        storage_for(project).write(
            layout.prompt_key(project.prefix, sha256),
            prompt.encode("utf-8"),
            if_none_match=True,
            ambiguous="unknown",
            legal_hold=holds.prompt_held(project, user),
        )
    except PreconditionFailed:
        pass  # already there; its name is its content
    except StorageUnavailable:
        return False
    cache.set(known, True, _KNOWN_TTL)
    return True


def prompt_read(*, project, sha256: str) -> str | None:
    """The stored prompt, or None when it is not there or does not match its name. May raise
    StorageUnavailable."""
    found = storage_for(project).read(layout.prompt_key(project.prefix, sha256))
    if found is None or hashlib.sha256(found.body).hexdigest() != sha256:
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
