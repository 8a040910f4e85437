"""An agent's memory as a local folder, synchronised through the hook API or straight
through S3.

pull() writes the files the session was shown, at the revisions it was shown; files the
agent's policy does not let it write are made read-only. push() sends every changed or new
Markdown file back through the post hook (each change becomes a revision carrying the
session id) and reports, per file, what happened. A file that changed in S3 meanwhile comes
back as a conflict: the local copy is left exactly as it is, never dropped.

Direct mode (`direct=DirectStorage(...)`, or `--direct` with MGC_RUNNER_S3_* set) reads the
files from the bucket with the runner's own S3 credentials and writes the ones its policy lets
it replace straight back, conditionally on the ETag it pulled (new workspace files with
If-None-Match); the console adopts them at the next pre hook. Everything else (append-only
files, files that need approval) still goes through the post hook.

    python -m runnerkit.sandbox pull --url URL --token T --session S --dir DIR [--direct]
    python -m runnerkit.sandbox push --url URL --token T --dir DIR [--summary TEXT] [--direct]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import stat
import sys
from pathlib import Path

from runnerkit.client import Client

STATE = ".mgc-sandbox.json"
BASE = ".mgc-base"  # the texts as pulled, to tell an append from an edit


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Sandbox:
    def __init__(self, client: Client, session: str | None, folder: str | os.PathLike, direct=None):
        self.client = client
        self.folder = Path(folder)
        self.session = session
        self.direct = direct  # a runnerkit.direct.DirectStorage, or None: the hook API only
        self.sending: dict | None = None  # the post push() sent and has no answer to yet

    # -- pull ------------------------------------------------------------------------------------
    def pull(self) -> dict:
        self.folder.mkdir(parents=True, exist_ok=True)
        listing = self.client.sandbox_files(self.session)
        state = {
            "session": self.session,
            "files": {},
            "agent": listing.get("agent"),
            "storage": listing.get("storage"),
            "direct": self.direct is not None,
        }
        for item in listing["files"]:
            target = self._local(item["path"])
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.exists():
                target.chmod(stat.S_IRUSR | stat.S_IWUSR)
            data, etag = item["content"].encode("utf-8"), None
            if self.direct is not None and item.get("direct"):
                # What the bucket holds now, and its ETag, for the files it writes back in
                # place. Everything else (a person's USER.md above all: runner credentials may
                # not read profiles) comes from the listing, as the session was shown it.
                found = self.direct.read(listing["storage"]["bucket"], item["key"])
                if found is not None:
                    data, etag = found
            target.write_bytes(data)
            mode = (
                stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH
                if item["writable"]
                else stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH
            )
            target.chmod(mode)
            base = self.folder / BASE / item["path"]
            base.parent.mkdir(parents=True, exist_ok=True)
            base.write_bytes(data)
            state["files"][item["path"]] = {
                "revision": item["revision"],
                "sha256": _sha(data),
                "writable": item["writable"],
                "modes": item["modes"],
                "delete": item.get("delete", "never"),
                "key": item.get("key"),
                "etag": etag,
                "direct": bool(item.get("direct") and etag),
            }
        (self.folder / STATE).write_text(json.dumps(state, indent=2, ensure_ascii=False), encoding="utf-8")
        return state

    def _local(self, path: str) -> Path:
        target = (self.folder / path).resolve()
        if self.folder.resolve() not in target.parents:
            raise ValueError(f"refusing a path outside the sandbox: {path}")
        return target

    # -- push ------------------------------------------------------------------------------------
    def changes(self) -> tuple[list[dict], list[dict]]:
        """(writes to send, local notes) from comparing the folder with what was pulled."""
        state = json.loads((self.folder / STATE).read_text(encoding="utf-8"))
        self.session = self.session or state["session"]
        known = state["files"]
        writes, notes = [], []
        for local in sorted(self.folder.rglob("*.md")):
            path = local.relative_to(self.folder).as_posix()
            if path.startswith(BASE + "/"):
                continue
            data = local.read_bytes()
            before = known.get(path)
            if before and _sha(data) == before["sha256"]:
                continue
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                notes.append(
                    {
                        "path": path,
                        "status": "kept_locally",
                        "code": "not_utf8",
                        "message": "Not UTF-8 text; not sent.",
                    }
                )
                continue
            if before is None:
                # A new file: the post hook's policy decides whether the agent may create it.
                writes.append({"path": path, "mode": "append", "content": text})
            elif not before["writable"]:
                notes.append(
                    {
                        "path": path,
                        "status": "kept_locally",
                        "code": "read_only",
                        "message": "The policy does not let this agent write it.",
                    }
                )
            elif "replace" in before["modes"]:
                writes.append(
                    {"path": path, "mode": "replace", "content": text, "base_revision": before["revision"]}
                )
            else:
                old = self._pulled_text(path, before)
                if old is not None and text.startswith(old):
                    writes.append({"path": path, "mode": "append", "content": text[len(old) :]})
                else:
                    notes.append(
                        {
                            "path": path,
                            "status": "kept_locally",
                            "code": "append_only",
                            "message": "Only appends are allowed here, and the file was "
                            "changed above its end.",
                        }
                    )
        for path, before in known.items():
            if (self.folder / path).exists():
                continue
            if before.get("delete", "never") in ("direct", "proposal"):
                writes.append({"path": path, "mode": "delete", "base_revision": before["revision"]})
            else:
                notes.append(
                    {
                        "path": path,
                        "status": "kept_locally",
                        "code": "deleted_locally",
                        "message": "The policy does not let this agent delete it; the file stays in memory.",
                    }
                )
        return writes, notes

    def refused_edit(self, path: str) -> str | None:
        """Why the policy will not take the file's current local text, or None when it will
        (or may: a new file is the console's to decide at the push)."""
        state = json.loads((self.folder / STATE).read_text(encoding="utf-8"))
        before = state["files"].get(path)
        local = self.folder / path
        if before is None or not local.exists() or _sha(local.read_bytes()) == before["sha256"]:
            return None
        if not before["writable"]:
            return "the policy does not let this agent change it"
        if "replace" not in before["modes"]:
            old = self._pulled_text(path, before)
            text = local.read_text(encoding="utf-8", errors="replace")
            if old is None or not text.startswith(old):
                return "the policy lets this agent only append to it"
        return None

    def put_back(self, path: str) -> None:
        """The file as it was pulled (or last pushed)."""
        base, local = self.folder / BASE / path, self.folder / path
        if not base.exists():
            return
        mode = None
        if local.exists():  # read-only as pulled: writable for a moment, then as it was
            mode = stat.S_IMODE(local.stat().st_mode)
            local.chmod(stat.S_IRUSR | stat.S_IWUSR)
        local.write_bytes(base.read_bytes())
        if mode is not None:
            local.chmod(mode)

    def _pulled_text(self, path: str, before: dict) -> str | None:
        base = self.folder / BASE / path
        if not base.exists() or _sha(base.read_bytes()) != before["sha256"]:
            return None
        return base.read_text(encoding="utf-8")

    def push(self, summary: str | None = None, key: str | None = None, end: bool = True) -> list[dict]:
        """Send what changed since the pull (or the last push). The post's Idempotency-Key is
        derived from the session and the changes, unless given: sending the same changes again
        (a retry, a replayed Stop hook) writes nothing twice. What was written becomes the new
        base, so the next push sends only what changed after it. With `end` (the default) the
        post is sent even when nothing changed, so the console shows the session ended."""
        writes, notes = self.changes()
        written = []
        if self.direct is not None:
            writes, written = self._push_direct(writes)
        results = []
        if writes or end:
            key = (
                key
                or "push-"
                + _sha(json.dumps([self.session, writes, end], sort_keys=True).encode("utf-8"))[:40]
            )
            # What is on its way, until the console answers: a caller whose post raised can
            # keep it and send it again, byte for byte under the same key (runnerkit.claude).
            self.sending = {
                "session": self.session,
                "writes": writes,
                "summary": summary,
                "key": key,
                "end": end,
            }
            results = self.client.post(self.session, writes, summary, key=key, end=end)["results"]
            self.sending = None
        self._advance(written + results)
        return written + results + notes

    def _advance(self, results: list[dict]) -> None:
        """Files written (or proposed) become the new base of the next push."""
        done = [r for r in results if r.get("status") in ("written", "proposed")]
        if not done:
            return
        state_file = self.folder / STATE
        state = json.loads(state_file.read_text(encoding="utf-8"))
        for result in done:
            path = result["path"]
            local = self.folder / path
            if result.get("mode") == "delete":
                if result.get("status") == "written":
                    state["files"].pop(path, None)  # gone: nothing to compare it with now
                continue
            if not local.exists():
                continue
            data = local.read_bytes()
            entry = state["files"].setdefault(
                path,
                {
                    "revision": None,
                    "writable": True,
                    "modes": [result.get("mode", "append")],
                    "key": None,
                    "etag": None,
                    "direct": False,
                },
            )
            entry["sha256"] = _sha(data)
            if result.get("revision"):
                entry["revision"] = result["revision"]
            if result.get("etag"):
                entry["etag"] = result["etag"]
            base = self.folder / BASE / path
            base.parent.mkdir(parents=True, exist_ok=True)
            base.write_bytes(data)
        state_file.write_text(json.dumps(state, indent=2, ensure_ascii=False), encoding="utf-8")

    def _push_direct(self, writes: list[dict]) -> tuple[list[dict], list[dict]]:
        """Write what the S3 policy allows straight to the bucket; the rest stays for the
        post hook. Returns (writes left for the hook, results of direct writes)."""
        state = json.loads((self.folder / STATE).read_text(encoding="utf-8"))
        storage, known = state.get("storage") or {}, state["files"]
        left, done = [], []
        for write in writes:
            if write["mode"] not in ("append", "replace"):
                left.append(write)  # a delete: the console's own (runner credentials cannot)
                continue
            path, before = write["path"], known.get(write["path"])
            data = (self.folder / path).read_bytes()
            if before and before.get("direct"):
                key, etag = before["key"], before["etag"]
            elif before is None and path.startswith("workspace/") and storage:
                key, etag = storage["workspace_prefix"] + path[len("workspace/") :], None
            else:
                left.append(write)
                continue
            outcome = self.direct.write(
                storage["bucket"],
                key,
                data,
                etag=etag,
                agent=state["agent"],
                session=self.session,
                token=self.client.token,
            )
            if outcome.status == "denied" and before is None:
                left.append(write)  # not creatable here: the post hook's policy decides
                continue
            done.append(
                {
                    "path": path,
                    "mode": "replace" if before else "create",
                    "status": outcome.status,
                    "via": "s3",
                    "etag": outcome.etag or None,
                    "message": outcome.message or None,
                }
            )
        return left, done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runnerkit.sandbox")
    parser.add_argument("action", choices=["pull", "push"])
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", default=os.environ.get("MGC_RUNNER_TOKEN", ""))
    parser.add_argument("--session")
    parser.add_argument("--dir", required=True)
    parser.add_argument("--summary")
    parser.add_argument(
        "--direct", action="store_true", help="read and write the bucket with MGC_RUNNER_S3_* credentials"
    )
    args = parser.parse_args(argv)
    direct = None
    if args.direct:
        from runnerkit.direct import DirectStorage

        direct = DirectStorage.from_environment()
    box = Sandbox(Client(args.url, args.token), args.session, args.dir, direct=direct)
    if args.action == "pull":
        if not args.session:
            parser.error("pull needs --session")
        state = box.pull()
        print(f"pulled {len(state['files'])} file(s) into {args.dir}")
        return 0
    report = box.push(args.summary)
    for item in report:
        print(f"{item['status']:<12} {item['path']}  {item.get('message') or ''}".rstrip())
    return 1 if any(r["status"] in ("conflict", "rejected", "denied") for r in report) else 0


if __name__ == "__main__":
    sys.exit(main())
