"""The local cache is bounded in bytes: texts up to a file's size each cannot add up to
gigabytes (a worker reached 1.8 GB under a scanner writing many large files)."""

import pytest

from projects.cache import BoundedLocMemCache

pytestmark = pytest.mark.db_independent


def _cache(max_bytes: int, entries: int = 1000) -> BoundedLocMemCache:
    cache = BoundedLocMemCache(
        f"bounded-{max_bytes}-{entries}", {"OPTIONS": {"MAX_BYTES": max_bytes, "MAX_ENTRIES": entries}}
    )
    cache.clear()
    return cache


def test_large_distinct_values_stay_under_the_byte_budget_least_recent_out_first():
    cache = _cache(1_000_000)
    for n in range(50):
        cache.set(f"text-{n}", "x" * 100_000)  # 5 MB offered in all
        assert cache.bytes_used <= 1_000_000
    assert cache.get("text-49") is not None and cache.get("text-0") is None
    cache.get("text-41")  # used again: kept over the others
    for n in range(50, 55):
        cache.set(f"text-{n}", "y" * 100_000)
    assert cache.get("text-41") is not None and cache.get("text-42") is None


def test_a_value_larger_than_the_budget_is_not_kept_and_replacing_frees_the_old_bytes():
    cache = _cache(10_000)
    cache.set("small", "a" * 100)
    cache.set("huge", "b" * 20_000)
    assert cache.get("huge") is None and cache.get("small") == "a" * 100
    used = cache.bytes_used
    cache.set("small", "c" * 100)
    assert cache.bytes_used == used
    cache.delete("small")
    assert cache.bytes_used == 0


def test_the_entry_count_still_holds():
    cache = _cache(10_000_000, entries=10)
    for n in range(30):
        cache.set(f"k{n}", n)
    assert len(cache._cache) <= 10
    assert cache.bytes_used == sum(cache._sizes.values())
