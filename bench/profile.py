"""Where a request's CPU goes under the throughput load: py-spy samples every gunicorn worker
while the bench's clients send one kind of request, and the samples are folded into the
frames with the most time of their own (the function was running) and the most time in all
(it or what it called was).

    .venv/bin/python bench/run.py --only gunicorn --profile out.txt

Samples are taken only of the thread holding the GIL (py-spy --gil): on a gthread worker that
is the Python CPU the request costs, not its threads waiting on the database or S3. Each
frame's figure is also given in milliseconds a request (its samples over the sampling rate,
summed over the workers, divided by the requests answered meanwhile), so two runs compare
though their throughputs differ. py-spy stops a worker for each sample: a run sampled is
slower than one that is not, and its throughput is not a figure."""

from __future__ import annotations

import collections
import contextlib
import re
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
RATE = 200  # samples a second per worker
TOP = 15


@contextlib.contextmanager
def sampled(pids: list[int], folder: Path):
    """py-spy recording each of `pids` while the block runs; yields the raw files it writes."""
    outputs = [folder / f"pyspy-{pid}.txt" for pid in pids]
    recorders = [
        subprocess.Popen(  # noqa: SIM115 - stopped below
            [
                str(BIN / "py-spy"),
                "record",
                "--pid",
                str(pid),
                "--gil",
                "--function",  # a function's frames folded into one, whatever line ran
                "--format",
                "raw",
                "--rate",
                str(RATE),
                "--output",
                str(output),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for pid, output in zip(pids, outputs, strict=True)
    ]
    time.sleep(1)  # attached, or failed to (ptrace refused: py-spy says so and exits)
    failed = [recorder for recorder in recorders if recorder.poll() is not None]
    try:
        if failed:
            raise RuntimeError("py-spy could not sample the workers: " + failed[0].stderr.read().strip())
        yield outputs
    finally:
        for recorder in recorders:
            if recorder.poll() is None:
                recorder.send_signal(signal.SIGINT)  # writes its file and ends
        for recorder in recorders:
            recorder.wait(60)


# What Django wraps each middleware in, and the class most of its own middleware derive from
# (its __call__ is every one's frame: the hook it calls below tells them apart).
_LINK = "convert_exception_to_response.<locals>.inner (django/core/handlers/exception.py"
_MIXIN = "MiddlewareMixin.__call__ (django/utils/deprecation.py"


def fold(paths: list[Path]) -> tuple[collections.Counter, collections.Counter, collections.Counter, int]:
    """Samples by frame: where the frame was running (own), where it was on the stack
    (total, once per sample however deep it recurses), by the middleware (or the view) whose
    code ran, the next middleware's excluded (chain), and all the samples."""
    own: collections.Counter = collections.Counter()
    total: collections.Counter = collections.Counter()
    chain: collections.Counter = collections.Counter()
    samples = 0
    for path in paths:
        for line in path.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            if not stack or not count.isdigit():
                continue
            frames = [_short(frame) for frame in stack.split(";")]
            n = int(count)
            samples += n
            own[frames[-1]] += n
            for frame in set(frames):
                total[frame] += n
            links = [i for i, frame in enumerate(frames[:-1]) if frame.startswith(_LINK)]
            if not links:
                chain["(outside Django's middleware chain)"] += n
                continue
            part = links[-1] + 1
            if frames[part].startswith(_MIXIN) and part + 1 < len(frames):
                part += 1  # SessionMiddleware.process_request, not MiddlewareMixin.__call__
            chain[frames[part]] += n
    return own, total, chain, samples


_PREFIXES = sorted(
    {sysconfig.get_paths()["purelib"] + "/", sysconfig.get_paths()["stdlib"] + "/", str(ROOT) + "/"},
    key=len,
    reverse=True,
)


def _short(frame: str) -> str:
    """`function (path:line)` with the path from its package, not from the disk's root."""
    for prefix in _PREFIXES:
        frame = frame.replace(prefix, "")
    return re.sub(r"/work/[^/ ]+/\.venv/lib/python[\d.]+/site-packages/", "", frame)


def report(title: str, paths: list[Path], requests: int, seconds: float) -> str:
    own, total, chain, samples = fold(paths)
    per_request = 1000 / RATE / max(1, requests)  # ms a request for one sample
    lines = [
        f"## {title}",
        f"{requests} requests in {seconds:.1f} s under py-spy ({requests / seconds:.0f} req/s sampled); "
        f"{samples} samples holding the GIL at {RATE}/s a worker = "
        f"{samples * per_request:.2f} ms of Python CPU a request",
    ]
    for name, counter, top in (
        ("own time", own, TOP),
        ("total time (itself and what it called)", total, 2 * TOP),
        (
            "middleware chain (each middleware's own part, the next one excluded; the view "
            "under _get_response)",
            chain,
            TOP,
        ),
    ):
        lines += ["", f"top {top} frames by {name}:", f"{'ms/req':>7} {'share':>6}  frame"]
        for frame, n in counter.most_common(top):
            lines.append(f"{n * per_request:7.3f} {100 * n / max(1, samples):5.1f}%  {frame}")
    return "\n".join(lines) + "\n"
