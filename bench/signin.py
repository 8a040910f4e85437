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
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench.server import CLIENTS, ROOT, THREADS, WORKERS, _load, _start_gunicorn, _stop
from bench.table import Table, ms, p50, pct

PASSWORD = "bench-person-password"
# The flood's rate: the old bench's flood made 417 attempts a second against the console of
# then (as fast as it was answered); the attacker of issue 35 made 42. Capped so that its own
# CPU, which an attacker spends on their machines, stays small beside the console's here.
FLOOD_RATE = 500


def bench_signin_flood(table: Table, world: dict, env: dict, seaweed, quick: bool, log: Path) -> None:
    env = {**env, "MGC_S3_CHANGE_FEED": "seaweedfs", "MGC_S3_FILER_ADDRESS": seaweed.filer_address}
    # --quick (beside the test suite in CI) checks every answer with one person, briefly.
    people = _people(1 if quick else 20)
    rounds, seconds = (1, 1.0) if quick else (5, 2.0)  # windows with and without the flood, taken in turn
    spread = 0.2 if quick else 10.0  # the people arrive over this many seconds
    gunicorn, port = _start_gunicorn(env, log)
    try:
        # Every worker thread warm (tokenizer, connections) before anything is timed.
        _load(port, "/api/v1/hooks/pre", world["token"], count=WORKERS * THREADS * 2)
        devices = {}
        for name in people:  # each signs in once: their browser keeps the device cookie
            ok, _ms, cookies = _sign_in(port, name, {})
            if not ok:
                table.wrong.append(f"{name} could not sign in before the flood")
            devices[name] = {k: v for k, v in cookies.items() if k.startswith("mgc_device_")}
        for addresses in (1,) if quick else (1, 200):
            label = "one address" if addresses == 1 else f"{addresses} addresses"
            with Flood(port, addresses=addresses) as flood:
                # From one address the flood is paused after its first failures: measure what
                # it costs from then on. From many, each address is new for a while: no wait.
                settled = flood.settle(limit=2 if quick else 30) if addresses == 1 else time.sleep(2)
                alone, during = _turns(port, world["token"], flood, rounds, seconds)
                # Each batch of people twice, the flood stopped then going, so that both meet
                # the machine as it is then; and one password check timed here meanwhile.
                batches = {}
                for kind, jar, source in (("known", devices, None), ("first", {}, "127.0.2.{n}")):
                    for going in (True,) if quick else (False, True):  # --quick: the answers only
                        flood.go(going)
                        check = 0.0 if quick else _check_ms()
                        batches[kind, going] = _arrivals(port, people, jar, spread, source) | {"check": check}
            note = (
                (
                    f"stopped reaching the checks after {settled:.1f} s"
                    if settled
                    else "still reach the checks"
                )
                if addresses == 1
                else "come from addresses new to the console"
            )
            _pre_row(table, label, alone, during, f"{flood.answers}; the flood's sign-ins {note}")
            _people_rows(table, label, people, batches, spread)
    finally:
        _stop(gunicorn)
    if not quick:  # the reference: the same flood against a console whose sign-in is open
        gunicorn, port = _start_gunicorn({**env, "BENCH_SIGNIN_UNTHROTTLED": "1"}, log)
        try:
            _load(port, "/api/v1/hooks/pre", world["token"], count=WORKERS * THREADS * 2)
            # Not in turns: stopped, this flood's checks in progress would go on for seconds.
            alone = _load(port, "/api/v1/hooks/pre", world["token"], seconds=rounds * seconds, clients=8)
            with Flood(port, addresses=1) as flood:
                time.sleep(1)
                began = flood.total()
                during = _load(port, "/api/v1/hooks/pre", world["token"], seconds=rounds * seconds, clients=8)
                during["flood"] = (
                    f"{(flood.total() - began) / during['seconds']:.0f} attempts/s, each checked"
                )
            _pre_row(
                table,
                "one address; sign-in not throttled, the reference: the console before any of it",
                alone,
                during,
                str(flood.answers),
                goal=False,
                alone_was="before the flood",
            )
        finally:
            _stop(gunicorn)


def _turns(port: int, token: str, flood: Flood, rounds: int, seconds: float) -> tuple[dict, dict]:
    """Pre hooks with the flood stopped (SIGSTOP) and going, in turns of `seconds` each, so that
    a machine whose load changes meanwhile weighs on both alike; (alone, during: with what the
    flood did while it went)."""
    alone = {"ok": 0, "errors": 0, "seconds": 0.0, "latencies": [], "statuses": {}}
    during = {"ok": 0, "errors": 0, "seconds": 0.0, "latencies": [], "statuses": {}}
    attempts = checked = 0
    for _ in range(rounds):
        for target, going in ((alone, False), (during, True)):
            flood.go(going)
            time.sleep(0.3)  # what was in flight is answered
            began, began_checked = flood.total(), flood.checked()
            load = _load(port, "/api/v1/hooks/pre", token, seconds=seconds, clients=8)
            if going:
                attempts += flood.total() - began
                checked += flood.checked() - began_checked
            for key in ("ok", "errors", "seconds", "latencies"):
                target[key] += load[key]
            for status, count in load["statuses"].items():
                target["statuses"][status] = target["statuses"].get(status, 0) + count
    flood.go(True)
    for load in (alone, during):
        load["rps"] = load["ok"] / load["seconds"]
    during["flood"] = (
        f"{attempts / during['seconds']:.0f} attempts/s, {checked / during['seconds']:.1f} of them "
        "reaching the password checks"
    )
    return alone, during


def _pre_row(
    table,
    label,
    alone,
    during,
    answers: str,
    goal: bool = True,
    alone_was="the flood stopped, in turns with it",
) -> None:
    ratio = during["rps"] / alone["rps"]
    table.add(
        f"pre hook throughput during a wrong-password flood ({CLIENTS} connections, up to {FLOOD_RATE} "
        f"attempts/s, {label})",
        f"{during['rps']:.1f} req/s, {during['errors']} errors; {ms(during['latencies'])}; flood "
        f"{during['flood']}; its answers so far {answers}",
        f"the same server, {alone_was}: {alone['rps']:.1f} req/s; {ms(alone['latencies'])}",
        ratio,
        ">= 0.5x" if goal else "",
        (ratio >= 0.5) if goal else None,
    )
    if during["errors"] and goal:
        table.wrong.append(f"pre hooks during the login flood: answers {during['statuses']}")


def _people_rows(table, label, people, batches, spread) -> None:
    for kind, what in (
        ("known", "who signed in before (device cookie)"),
        ("first", "signing in for the first time, each from an address of their own"),
    ):
        quiet, result = batches.get((kind, False)) or {"ok": [], "ms": [], "check": 0}, batches[kind, True]
        got = sum(result["ok"])
        table.add(
            f"people {what}, {len(people)} over {spread:.0f} s during the flood ({label})",
            f"{got} of {len(people)} signed in; {_figures(result['ms'])}; refused: {result['refused']}; "
            f"one password check here meanwhile: {result['check']:.0f} ms",
            f"the same people, the flood stopped just before: {sum(quiet['ok'])} of {len(quiet['ok'])}; "
            f"{_figures(quiet['ms'])}; one check: {quiet['check']:.0f} ms",
            p50(result["ms"]) / p50(quiet["ms"]) if result["ms"] and quiet["ms"] else None,
            "all signed in",
            got == len(people),
        )


def _check_ms() -> float:
    """One password check as the console makes it (PBKDF2 at Django's rounds), timed here."""
    from django.contrib.auth.hashers import PBKDF2PasswordHasher

    started = time.perf_counter()
    PBKDF2PasswordHasher().encode(PASSWORD, "benchsalt0123456")
    return (time.perf_counter() - started) * 1000


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
        self.args = [
            *("--port", str(port), "--connections", str(connections), "--addresses", str(addresses)),
            *("--rate", str(FLOOD_RATE)),
        ]
        self.answers: dict[str, int] = {}
        self.history: list[tuple[float, dict[str, int]]] = []

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
            self.answers = json.loads(line)
            self.history.append((time.monotonic(), self.answers))

    def go(self, going: bool) -> None:
        """Let the flood go on, or stop it where it is (its connections stay open)."""
        os.kill(self.process.pid, signal.SIGCONT if going else signal.SIGSTOP)

    def total(self) -> int:
        return sum(self.answers.values())

    def checked(self, answers: dict | None = None) -> int:
        """The flood's sign-ins whose password was checked (the form again, 200) or that waited
        for a check in vain (busy): all but the refusals made before any check."""
        answers = self.answers if answers is None else answers
        return sum(n for status, n in answers.items() if status == "200" or "at once" in status)

    def settle(self, limit: float) -> float | None:
        """Wait until a whole second passes in which none of the flood's sign-ins reached the
        password checks; how many seconds that took, or None within `limit`."""
        began = time.monotonic()
        while time.monotonic() - began < limit:
            time.sleep(0.5)
            recent = [(t, a) for t, a in self.history if t >= time.monotonic() - 1.0]
            if (
                len(recent) >= 2
                and self.checked(recent[-1][1]) == self.checked(recent[0][1])
                and self.total()
            ):
                return time.monotonic() - began
        return None

    def __exit__(self, *exc) -> None:
        self.go(True)
        self.process.stdin.close()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
        self.reader.join(5)
