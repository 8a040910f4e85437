"""How the bench takes and shows a figure: calls timed alone or interleaved round-robin, their
percentiles, and the Table every figure lands in beside its floor, ratio, goal and verdict."""

from __future__ import annotations

import statistics
import sys
import time


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def p50(values: list[float]) -> float:
    return statistics.median(values)


def timed(fn, n: int, warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def interleaved(fns: list, n: int, warmup: int = 3, setup: dict | None = None) -> list[list[float]]:
    """Time several calls round-robin (order rotating each round), so a machine that slows
    down for a while slows every one of them alike: their ratios stay fair. `setup`: {index:
    callable} run before that call, untimed (emptying caches for a cold call)."""
    setup = setup or {}
    for _ in range(warmup):
        for k, fn in enumerate(fns):
            setup.get(k, _nothing)()
            fn()
    out: list[list[float]] = [[] for _ in fns]
    for i in range(n):
        shift = i % len(fns)
        for k in list(range(shift, len(fns))) + list(range(shift)):
            setup.get(k, _nothing)()
            start = time.perf_counter()
            fns[k]()
            out[k].append((time.perf_counter() - start) * 1000)
    return out


def _nothing() -> None:
    pass


class Table:
    def __init__(self):
        self.rows: list[tuple[str, ...]] = []
        self.wrong: list[str] = []  # answers that were not 200: the run fails

    def add(
        self, what: str, measured: str, baseline: str, ratio: float | None, goal: str, met: bool | None
    ) -> None:
        verdict = "n/a" if met is None else ("met" if met else "**missed**")
        self.rows.append((what, measured, baseline, "" if ratio is None else f"{ratio:.2f}x", goal, verdict))
        print(f"  {what}: {measured} | {baseline} -> {verdict}", file=sys.stderr, flush=True)

    def markdown(self) -> str:
        head = ("what", "measured", "floor or baseline", "ratio", "goal", "verdict")
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        return "\n".join(lines)


def ms(values: list[float]) -> str:
    return f"p50 {p50(values):.2f} ms, p95 {pct(values, 0.95):.2f} ms"
