"""Records kept for a regulator (answers to subjects' requests, destruction acts): each written
once, under S3 Object Lock retention, and read back by its version.

With COMPLIANCE retention (the default, `MGC_RECORDS_LOCK_MODE`) no one can delete a record's
version or shorten its retention before the date, not even with the console's own keys: the
store answers AccessDenied. A delete without a version only adds a delete marker; the record
is read by its version id, so it stays readable. Where the bucket has no Object Lock the
record is written all the same, and said to be unprotected (`Archived.mode` is empty).

A write never replaces anything (IfNoneMatch): a retry after a lost answer finds its own
bytes there (their sha256 is in the object's metadata) and counts as written; another
object at the key is `KeyTaken`, and the caller picks the next name.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone

from projects.memory.errors import StorageUnavailable
from projects.memory.storage import MemoryStorage, PreconditionFailed, bucket_storage

SHA_META = "mgc-sha256"


class KeyTaken(Exception):
    """Another object is kept at the key (an earlier attempt that was never recorded)."""


@dataclass(frozen=True)
class Archived:
    bucket: str
    key: str
    version_id: str
    sha256: str
    size: int
    retain_until: dt.datetime | None
    mode: str  # COMPLIANCE | GOVERNANCE; '' when the bucket has no Object Lock


def archive_storage() -> MemoryStorage:
    """The bucket records are kept in: `MGC_RECORDS_BUCKET`, or the console's memory bucket."""
    return bucket_storage(settings.MGC_RECORDS_BUCKET)


def archive_write(key: str, data: bytes, *, content_type: str) -> Archived:
    """Keep `data` at `key` under retention for `MGC_RECORDS_RETENTION_DAYS`."""
    storage = archive_storage()
    digest = hashlib.sha256(data).hexdigest()
    mode = settings.MGC_RECORDS_LOCK_MODE if storage.object_lock_enabled() else ""
    until = timezone.now() + dt.timedelta(days=settings.MGC_RECORDS_RETENTION_DAYS) if mode else None
    try:
        _etag, version = storage.write_retained(
            key, data, content_type=content_type, mode=mode, retain_until=until, metadata={SHA_META: digest}
        )
    except PreconditionFailed:
        version = _ours(storage, key, digest)
    except StorageUnavailable as exc:
        if exc.outcome != "unknown":
            raise
        try:
            version = _ours(storage, key, digest)
        except KeyTaken:
            raise exc from None
    return Archived(storage.bucket_name, key, version, digest, len(data), until, mode)


def _ours(storage: MemoryStorage, key: str, digest: str) -> str:
    """The version at `key` when it holds these very bytes (a retry's own write), else KeyTaken."""
    found = storage.describe(key)
    if found is not None and found.metadata.get(SHA_META) == digest:
        return found.version_id
    raise KeyTaken(key)


def archive_read(*, bucket: str, key: str, version_id: str, sha256: str) -> bytes | None:
    """A record's bytes, by its version; None when they are missing or not what was kept."""
    found = bucket_storage(bucket).read_version(key, version_id)
    if found is None or hashlib.sha256(found.body).hexdigest() != sha256:
        return None
    return found.body
