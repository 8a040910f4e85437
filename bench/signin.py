"""Sign-in under a wrong-password flood, against the console under gunicorn: the runner API's
pre hooks a second during the flood against the same server's without it, and people signing
in during it, those who signed in before (their browser holds a device cookie) and those
signing in for the first time from addresses of their own.

The flood runs in a process of its own (bench/flood.py). Two floods: from one address, as a
script on one machine does, and from many addresses, as a botnet does; against the second only
the bound on password checks stands between the flood and the CPU (each of its addresses is
new, so it is checked until that address has failed often enough to be paused).
"""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench.server import CLIENTS, ROOT, _load, _start_gunicorn, _stop
from bench.table import Table, ms, p50, pct

PASSWORD = "bench-person-password"


def bench_signin_flood(table: Table, world: dict, env: dict, seaweed, quick: bool, log: Path) -> None:
    env = {**env, "MGC_S3_CHANGE_FEED": "seaweedfs", "MGC_S3_FILER_ADDRESS": seaweed.filer_address}
    people = _people(2 if quick else 20)
    seconds = 1 if quick else 10
    spread = 0.5 if quick else 10.0  # the people arrive over this many seconds
    gunicorn, port = _start_gunicorn(env, log)
    try:
        devices = {}
        for name in people:  # each signs in once: their browser keeps the device cookie
            ok, _ms, cookies = _sign_in(port, name, {})
            if not ok:
                table.wrong.append(f"{name} could not sign in before the flood")
            devices[name] = {k: v for k, v in cookies.items() if k.startswith("mgc_device_")}
        quiet = _arrivals(port, people, devices, spread, source=None)
        alone = _load(port, "/api/v1/hooks/pre", world["token"], seconds=seconds, clients=8)
        for addresses in (1,) if quick else (1, 200):
            _flood_rows(table, world, port, people, devices, quiet, alone, addresses, seconds, spread, quick)
    finally:
        _stop(gunicorn)
    if not quick:  # the reference: the same flood against a console whose sign-in is open
        gunicorn, port = _start_gunicorn({**env, "BENCH_SIGNIN_UNTHROTTLED": "1"}, log)
        try:
            alone = _load(port, "/api/v1/hooks/pre", world["token"], seconds=seconds, clients=8)
            with Flood(port, addresses=1) as flood:
                time.sleep(1)
                began = flood.total()
                during = _load(port, "/api/v1/hooks/pre", world["token"], seconds=seconds, clients=8)
                attempts = flood.total() - began
            table.add(
                f"pre hook throughput during a wrong-password flood ({CLIENTS} connections, one "
                "address), sign-in not throttled (reference: the console before any of it)",
                f"{during['rps']:.1f} req/s, {during['errors']} errors; {ms(during['latencies'])}; "
                f"flood {attempts / during['seconds']:.1f} attempts/s, answers {flood.answers}",
                f"the same server without the flood: {alone['rps']:.1f} req/s",
                during["rps"] / alone["rps"],
                "",
                None,
            )
        finally:
            _stop(gunicorn)


def _flood_rows(table, world, port, people, devices, quiet, alone, addresses, seconds, spread, quick) -> None:
    label = "one address" if addresses == 1 else f"{addresses} addresses"
    with Flood(port, addresses=addresses) as flood:
        # From one address the flood is paused after a few failures: measure what it costs
        # from then on. From many, each address is new to the console for a while: no wait.
        settled = flood.settle(limit=3 if quick else 30) if addresses == 1 else time.sleep(2)
        began, checked_before = flood.total(), flood.answers.get(200, 0)
        during = _load(port, "/api/v1/hooks/pre", world["token"], seconds=seconds, clients=8)
        attempts, checked = flood.total() - began, flood.answers.get(200, 0) - checked_before
        known = _arrivals(port, people, devices, spread, source=None)
        first = _arrivals(port, people, {}, spread, source="127.0.2.{n}")
    ratio = during["rps"] / alone["rps"]
    table.add(
        f"pre hook throughput during a wrong-password flood ({CLIENTS} connections, {label})",
        f"{during['rps']:.1f} req/s, {during['errors']} errors; {ms(during['latencies'])}; flood "
        f"{attempts / during['seconds']:.0f} attempts/s, {checked / during['seconds']:.1f} of them "
        f"checked a second; answers {flood.answers}; "
        + (f"the flood's passwords stopped being checked {settled:.1f} s in" if settled else "still checked"),
        f"the same server without the flood: {alone['rps']:.1f} req/s",
        ratio,
        ">= 0.5x",
        ratio >= 0.5,
    )
    if during["errors"]:
        table.wrong.append(f"pre hooks during the login flood: answers {during['statuses']}")
    for what, result in (
        ("who signed in before (device cookie)", known),
        ("signing in for the first time, each from an address of their own", first),
    ):
        got = sum(result["ok"])
        table.add(
            f"people {what}, {len(people)} over {spread:.0f} s during the flood ({label})",
            f"{got} of {len(people)} signed in; {_figures(result['ms'])}; refused: {result['refused']}",
            f"the same people with no flood: {sum(quiet['ok'])} of {len(people)}; {_figures(quiet['ms'])}",
            p50(result["ms"]) / p50(quiet["ms"]) if result["ms"] and quiet["ms"] else None,
            "all signed in",
            got == len(people),
        )


def _figures(values: list[float]) -> str:
    return f"p50 {p50(values):.0f} ms, p95 {pct(values, 0.95):.0f} ms" if values else "none"


def _people(count: int) -> list[str]:
    """Accounts with a real (PBKDF2) password hash: the bench process hashes with MD5 for
    speed, the console under gunicorn with its shipped hashers. One hash serves them all."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import PBKDF2PasswordHasher

    encoded = PBKDF2PasswordHasher().encode(PASSWORD, "benchsalt0123456")
    User = get_user_model()
    names = [f"bench-person-{n}" for n in range(count)]
    User.objects.filter(username__in=names).delete()
    User.objects.bulk_create([User(username=name, password=encoded) for name in names])
    return names


def _cookies_of(response) -> dict[str, str]:
    found = {}
    for header in response.msg.get_all("Set-Cookie") or []:
        name, _, value = header.split(";", 1)[0].partition("=")
        found[name.strip()] = value.strip()
    return found


def _sign_in(port: int, username: str, cookies: dict, source: str | None = None) -> tuple[bool, float, dict]:
    """The login page, then its form with the right password, as a browser holding `cookies`
    does; (signed in, milliseconds for both, the cookies after)."""
    started = time.perf_counter()
    conn = http.client.HTTPConnection(
        "127.0.0.1", port, timeout=60, source_address=(source, 0) if source else None
    )
    jar = dict(cookies)
    try:
        conn.request("GET", "/accounts/login/", headers=_cookie_header(jar))
        page = conn.getresponse()
        html = page.read().decode()
        jar.update(_cookies_of(page))
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
        body = f"csrfmiddlewaretoken={token}&username={username}&password={PASSWORD}"
        conn.request(
            "POST",
            "/accounts/login/",
            body,
            {
                "Content-Type": "application/x-www-form-urlencoded",
                "Referer": f"http://127.0.0.1:{port}/accounts/login/",
                **_cookie_header(jar),
            },
        )
        answer = conn.getresponse()
        page = answer.read().decode()
        jar.update(_cookies_of(answer))
        status = answer.status
        if status == 429:  # which refusal: the page's title
            title = re.search(r"<h1>(.*?)</h1>", page)
            status = f"429 {title.group(1) if title else ''}".strip()
    except (OSError, AttributeError):
        status = 0
    finally:
        conn.close()
    return status == 302, (time.perf_counter() - started) * 1000, {**jar, "_status": str(status)}


def _cookie_header(jar: dict) -> dict:
    cookies = "; ".join(f"{k}={v}" for k, v in jar.items() if not k.startswith("_"))
    return {"Cookie": cookies} if cookies else {}


def _arrivals(port: int, people: list[str], devices: dict, spread: float, source: str | None) -> dict:
    """Each person signs in once, arriving evenly over `spread` seconds (the morning's first
    minutes); with `source` each from an address of their own."""
    result = {"ok": [], "ms": [], "refused": {}}
    lock = threading.Lock()

    def one(n: int, name: str) -> None:
        time.sleep(n * spread / len(people))
        address = source.format(n=n + 1) if source else None
        ok, took, jar = _sign_in(port, name, devices.get(name, {}), address)
        with lock:
            result["ok"].append(ok)
            if ok:
                result["ms"].append(took)
            else:
                result["refused"][jar["_status"]] = result["refused"].get(jar["_status"], 0) + 1

    threads = [threading.Thread(target=one, args=(n, name)) for n, name in enumerate(people)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return result


class Flood:
    """bench/flood.py in its own process; `answers` is its latest count by status."""

    def __init__(self, port: int, *, addresses: int, connections: int = CLIENTS):
        self.args = ["--port", str(port), "--connections", str(connections), "--addresses", str(addresses)]
        self.answers: dict[int, int] = {}
        self.history: list[tuple[float, dict[int, int]]] = []

    def __enter__(self) -> Flood:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.flood", *self.args],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        return self

    def _read(self) -> None:
        for line in self.process.stdout:
            self.answers = {int(k): v for k, v in json.loads(line).items()}
            self.history.append((time.monotonic(), self.answers))

    def total(self) -> int:
        return sum(self.answers.values())

    def settle(self, limit: float) -> float | None:
        """Wait until a whole second passes in which none of the flood's passwords was checked
        (no answer but a refusal); how many seconds that took, or None within `limit`."""
        began = time.monotonic()
        while time.monotonic() - began < limit:
            time.sleep(0.5)
            recent = [(t, a) for t, a in self.history if t >= time.monotonic() - 1.0]
            if len(recent) >= 2 and recent[-1][1].get(200, 0) == recent[0][1].get(200, 0) and self.total():
                return time.monotonic() - began
        return None

    def __exit__(self, *exc) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
        self.reader.join(5)
