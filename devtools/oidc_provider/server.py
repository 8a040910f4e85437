"""Start and stop the test identity provider as a process of its own, and drive its control
calls: what the tests' session fixture and `make demo` use."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

CLIENT_ID = "memory-console"
MCP_CLIENT_ID = "mcp-client"  # the public client MCP hosts sign in with (__main__._mcp_client)


class OidcProvider:
    def __init__(
        self,
        folder: Path,
        port: int,
        *,
        redirect_uris: list[str],
        post_logout_uris: list[str],
        client_secret: str | None = None,
        users: list[str] = (),
    ):
        self.folder, self.port = Path(folder), port
        self.redirect_uris, self.post_logout_uris = redirect_uris, post_logout_uris
        self.client_id = CLIENT_ID
        self.mcp_client_id = MCP_CLIENT_ID
        self.client_secret = client_secret or secrets.token_urlsafe(24)
        self.control_token = secrets.token_urlsafe(24)
        self.users = list(users)
        self.process: subprocess.Popen | None = None
        self._log = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def issuer(self) -> str:
        return f"{self.base}/o"

    def start(self, timeout: float = 60.0) -> OidcProvider:
        args = [
            sys.executable,
            "-m",
            "devtools.oidc_provider",
            "serve",
            "--dir",
            str(self.folder),
            "--port",
            str(self.port),
            "--client-id",
            self.client_id,
        ]
        args += [f"--redirect-uri={uri}" for uri in self.redirect_uris]
        args += [f"--post-logout-uri={uri}" for uri in self.post_logout_uris]
        args += [f"--user={spec}" for spec in self.users]
        env = {
            **os.environ,
            "MGC_IDP_CLIENT_SECRET": self.client_secret,
            "MGC_IDP_CONTROL_TOKEN": self.control_token,
        }
        env.pop("DJANGO_SETTINGS_MODULE", None)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._log = open(self.folder / "idp.log", "ab")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(  # noqa: S603
            args,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=Path(__file__).resolve().parents[2],
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the identity provider exited; see {self.folder / 'idp.log'}")
            try:
                with urllib.request.urlopen(  # noqa: S310
                    f"{self.issuer}/.well-known/openid-configuration",
                    timeout=2,
                ) as answer:
                    if answer.status == 200:
                        return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"the identity provider did not answer in {timeout:.0f} s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process = None
        if self._log is not None:
            self._log.close()
            self._log = None

    # --- control calls (tests) -----------------------------------------------------------
    def _call(self, path: str, body: dict | None = None) -> dict:
        request = urllib.request.Request(  # noqa: S310 - loopback
            f"{self.base}/testing/{path}",
            data=json.dumps(body or {}).encode(),
            method="POST",
            headers={"Authorization": f"Bearer {self.control_token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 - loopback
            return json.loads(answer.read())

    def user(self, username: str, *, password: str, groups: list[str] = (), **fields) -> str:
        """Create or change a user; returns its `sub`."""
        return self._call(
            "users", {"username": username, "password": password, "groups": list(groups), **fields}
        )["sub"]

    def disable(self, username: str) -> None:
        self._call(f"users/{username}/disable")

    def delete(self, username: str) -> None:
        self._call(f"users/{username}/delete")

    def allow(self, *, redirect_uri: str, post_logout_uri: str) -> None:
        """Register another console address with the client (a live test server's port)."""
        self._call("client", {"redirect_uri": redirect_uri, "post_logout_uri": post_logout_uri})

    def misbehave(self, **switches) -> None:
        """forge=True (or "own-kid"), expired=True, audience="x", issuer="y", acting on ID
        tokens, or on access tokens with tokens="access" (both: "all"); misbehave() puts it
        right."""
        self._call("switches", switches)


def _main() -> None:  # pragma: no cover - a manual check
    provider = OidcProvider(
        Path(sys.argv[1]),
        int(sys.argv[2]),
        redirect_uris=["http://127.0.0.1:8000/sso/complete/oidc/"],
        post_logout_uris=["http://127.0.0.1:8000/accounts/login/"],
    )
    provider.start()
    try:
        print(provider.issuer)
        time.sleep(3600)
    finally:
        provider.stop()


if __name__ == "__main__":
    try:
        _main()
    except urllib.error.URLError as exc:
        print(exc, file=sys.stderr)
