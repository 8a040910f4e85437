"""The console's local-memory cache bounded in bytes, not only in entries.

Django's LocMemCache counts entries (MAX_ENTRIES). The console caches texts of up to a memory
file's size (256 KiB) per revision, so 20,000 entries could hold gigabytes: a worker grew to
1.8 GB under a scanner writing many large files. This backend also keeps the total of the
pickled values under MAX_BYTES, evicting the least recently used first, as LocMemCache's own
cull does. Used when there is no Redis (MGC_REDIS_URL), which bounds memory itself.
"""

from __future__ import annotations

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.locmem import LocMemCache

_sizes: dict[str, dict[str, int]] = {}  # per cache name: key -> bytes of its pickled value
_totals: dict[str, list[int]] = {}


class BoundedLocMemCache(LocMemCache):
    def __init__(self, name, params):
        super().__init__(name, params)
        options = params.get("OPTIONS", {})
        self._max_bytes = int(options.get("MAX_BYTES", 256 * 1024 * 1024))
        self._sizes = _sizes.setdefault(name, {})
        self._total = _totals.setdefault(name, [0])

    @property
    def bytes_used(self) -> int:
        return self._total[0]

    def _set(self, key, value, timeout=DEFAULT_TIMEOUT):
        size = len(value)
        self._total[0] -= self._sizes.pop(key, 0)
        if size > self._max_bytes:  # one value larger than the whole budget: not kept
            self._delete(key)
            return
        while self._cache and self._total[0] + size > self._max_bytes:
            old, _value = self._cache.popitem()  # the least recently used
            self._expire_info.pop(old, None)
            self._total[0] -= self._sizes.pop(old, 0)
        super()._set(key, value, timeout)
        self._sizes[key] = size
        self._total[0] += size

    def _cull(self):
        before = set(self._cache)
        super()._cull()
        for key in before - set(self._cache):
            self._total[0] -= self._sizes.pop(key, 0)

    def _delete(self, key):
        self._total[0] -= self._sizes.pop(key, 0)
        return super()._delete(key)

    def clear(self):
        with self._lock:
            self._cache.clear()
            self._expire_info.clear()
            self._sizes.clear()
            self._total[0] = 0
