"""Objects as they stand in the bucket, past the records: one read for export, and every object
and version under prefixes deleted, for erasure and expiry."""

from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext as _

from projects.memory.errors import Held
from projects.memory.storage import MemoryStorage, ObjectHeld, storage_for
from projects.models import Project


def object_read(project: Project, key: str) -> bytes | None:
    """An object as it stands in the bucket now, for export: None if it is missing or larger
    than a memory file may be (it is never read whole: see refusals)."""
    limit = settings.MGC_MAX_FILE_BYTES
    found = storage_for(project).read(key, max_bytes=limit)
    return found.body if found is not None and found.size <= limit else None


def purge(project: Project, prefixes: list[str], keys: list[str] = ()) -> int:
    """Delete every object under the prefixes (and at exactly the `keys`), and every old version
    and delete marker if the bucket keeps versions: for erasure and expiry, where nothing may
    stay behind. Returns how many. Held if the store refuses a version: an S3 legal hold
    stands on it (a hold being released, or placed since the caller checked)."""
    storage = storage_for(project)
    try:
        return _purge(storage, prefixes, keys)
    except ObjectHeld as exc:
        raise Held(
            _(
                "The storage holds a version of %(key)s (an S3 legal hold), so it was not "
                "deleted. A hold that was just released is lifted shortly: try again then."
            )
            % {"key": exc.args[0]}
        ) from None


def _purge(storage: MemoryStorage, prefixes: list[str], keys: list[str]) -> int:
    removed = 0
    for prefix, exact in [(p, False) for p in prefixes] + [(k, True) for k in keys]:
        for obj in storage.listing(prefix):
            if exact and obj["Key"] != prefix:
                continue
            storage.remove(obj["Key"])
            removed += 1
        for version in storage.versions(prefix):
            if not version.get("VersionId") or (exact and version["Key"] != prefix):
                continue
            # "null" too: in a bucket that kept versions only later, an object written before
            # is the version "null", which the delete above only hid behind a marker.
            storage.remove(version["Key"], version["VersionId"])
            removed += 1
    return removed
