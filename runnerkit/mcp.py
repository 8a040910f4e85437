"""`mgc-mcp`: an agent's governed memory as an MCP server (`pip install 'runnerkit[mcp]'`), for
Claude Desktop, Claude Code, Cursor, VS Code and any host that speaks the Model Context
Protocol, over stdio or streamable HTTP.

    MGC_URL=https://memory.example.com MGC_RUNNER_TOKEN=mgc_... MGC_USER=maria mgc-mcp
    MGC_MCP_TOKEN=... mgc-mcp --transport http --port 8765     # http://127.0.0.1:8765/mcp

Each MCP session is one console session: the pre hook runs when the client initializes, and
the assembled memory is the server's instructions for that session (and the resource
`memory://prompt`); when the client goes (stdin closes, or the HTTP session is deleted or
times out) a last post ends the console session. The tools read through the runner API and
write through the post hook, so the agent's hook policy decides every change: written,
proposed for a person's approval, or refused, said in the tool's result (refusals and
conflicts as tool errors the model reads, never an exception). Nothing goes to S3 directly.
Each write carries an Idempotency-Key made of the console session and the MCP request id.

Over HTTP every request must carry `Authorization: Bearer <token>` with the token the server
was started with (MGC_MCP_TOKEN, or --token-file); anything else is a 401 with
`WWW-Authenticate: Bearer`. Without a token the server does not start: whoever reaches its
port would otherwise read the served person's memory and write with the agent's token.
"""

from __future__ import annotations

import argparse
import hmac
import json
import logging
import os
import sys
from functools import partial
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from runnerkit.client import ApiError, Client
from runnerkit.memory import GovernedMemory, Refused, describe
from runnerkit.version import __version__

logger = logging.getLogger(__name__)
STATE = "mgc_memory"  # the GovernedMemory of an MCP session, in its connection's state
PROMPT_URI = "memory://prompt"

INSTRUCTIONS = """You have a governed long-term memory: Markdown files kept by the Memory \
Governance Console. Paths are SOUL.md, AGENTS.md, TOOLS.md (your own files), USER.md (the \
person you work for) and workspace/<path>.md (shared notes). Use memory_list and memory_read \
to look, and the other memory_ tools to change it; a person may have to approve a change \
first, and some files you may only read or append to: each tool's result says what happened."""


def _connection(ctx):
    """The MCP connection a request came on: its `state` lives as long as the MCP session
    and its `exit_stack` is closed when the session ends (the SDK has no public accessor for
    it from a request yet)."""
    session = getattr(ctx, "session", None) or ctx.request_context.session
    return session._connection  # noqa: SLF001


class _SessionPerConnection:
    """Middleware: on `initialize`, open the console session of this MCP session (pre hook)
    and answer with its memory as the instructions; when the session ends, end it."""

    def __init__(self, client: Client, user: str | None):
        self.client, self.user = client, user

    async def __call__(self, ctx, call_next):
        if ctx.method == "resources/read" and (ctx.params or {}).get("uri") == PROMPT_URI:
            # The SDK gives static resources no request context, and this one differs per
            # session: it is answered here, from the session's state.
            memory = await opened(self, _connection(ctx))
            return {"contents": [{"uri": PROMPT_URI, "mimeType": "text/markdown", "text": memory.prompt}]}
        result = await call_next(ctx)
        if ctx.method == "initialize" and isinstance(result, dict):
            memory = await opened(self, _connection(ctx))
            if memory.session is not None:
                result["instructions"] = f"{INSTRUCTIONS}\n\n{memory.prompt}".strip()
            else:
                result["instructions"] = (
                    f"{INSTRUCTIONS}\n\nThe memory console did not answer "
                    f"at the start; the tools try again when used."
                )
        return result


async def opened(sessions: _SessionPerConnection, connection) -> GovernedMemory:
    """The connection's memory, its console session opened if it can be (not raising: a
    console that is down leaves it unopened, and the tools say so)."""
    memory = connection.state.get(STATE)
    if memory is None:
        memory = GovernedMemory(sessions.client, user=sessions.user, external_ref="mcp")
        connection.state[STATE] = memory
        connection.exit_stack.push_async_callback(_end, memory)
    if memory.session is None:
        try:
            await anyio.to_thread.run_sync(memory.start)
        except ApiError as exc:
            logger.warning("memory console unavailable: %s", exc)
    return memory


async def _end(memory: GovernedMemory) -> None:
    try:
        await anyio.to_thread.run_sync(partial(memory.end, "MCP client left"))
    except ApiError as exc:
        logger.warning("could not end the console session %s: %s", memory.session, exc)


def build_server(client: Client, *, user: str | None = None, name: str = "governed-memory") -> MCPServer:
    sessions = _SessionPerConnection(client, user)
    server = MCPServer(name, instructions=INSTRUCTIONS, version=__version__, middleware=[sessions])

    async def call(ctx: Context, operation, *args):
        memory = await opened(sessions, _connection(ctx))
        if memory.session is None:
            raise ToolError(
                "The memory console is not reachable; nothing was read or written. Try again later."
            )
        key = f"mcp-{memory.session}-{ctx.request_id}"
        try:
            return await anyio.to_thread.run_sync(partial(operation, memory, *args, key=key))
        except Refused as refused:
            raise ToolError(_refusal(refused)) from None
        except ApiError as exc:
            raise ToolError(
                f"The memory console did not take it ({exc.code or exc.status}): "
                f"{exc.message}"
                + (
                    " Whether it was applied is unknown; the same call again is safe."
                    if exc.outcome == "unknown"
                    else ""
                )
            ) from None

    @server.resource(
        PROMPT_URI,
        name="memory",
        mime_type="text/markdown",
        description="The memory assembled for this session (the pre hook's prompt).",
    )
    def prompt() -> str:  # pragma: no cover - answered by _SessionPerConnection
        return ""

    @server.tool()
    async def memory_list(ctx: Context) -> str:
        """List the memory files you may read, with their revision, size and what you may do
        to each (append, replace, delete, rename; directly or as a proposal)."""
        return await call(ctx, lambda m, key: _listing(m.files()))

    @server.tool()
    async def memory_read(path: str, ctx: Context) -> str:
        """Read one memory file as it stands now, with its revision (send that revision as
        base_revision to memory_replace)."""
        return await call(ctx, lambda m, key: _shown(m.read(path)))

    @server.tool()
    async def memory_append(path: str, text: str, ctx: Context) -> str:
        """Add text at the end of a memory file (creating it if new)."""
        return await call(ctx, lambda m, key: describe(m.append(path, text, key)))

    @server.tool()
    async def memory_replace(path: str, content: str, ctx: Context, base_revision: int | None = None) -> str:
        """Replace a memory file's whole text. base_revision is the revision you read (from
        memory_read); leave it out only for a new file. If the file moved on, nothing is
        written and you get its current text."""
        return await call(ctx, lambda m, key: describe(m.replace(path, content, base_revision, key)))

    @server.tool()
    async def memory_str_replace(path: str, old_str: str, new_str: str, ctx: Context) -> str:
        """Replace the one occurrence of old_str in a memory file with new_str."""
        return await call(
            ctx, lambda m, key: describe(m.edit(path, partial(_replace_once, path, old_str, new_str), key)[0])
        )

    @server.tool()
    async def memory_insert(path: str, insert_line: int, text: str, ctx: Context) -> str:
        """Insert text after line insert_line of a memory file (0: at the top)."""
        return await call(
            ctx, lambda m, key: describe(m.edit(path, partial(_insert_at, path, insert_line, text), key)[0])
        )

    @server.tool()
    async def memory_delete(path: str, ctx: Context) -> str:
        """Delete a memory file (its history is kept and a person can restore it)."""
        return await call(ctx, lambda m, key: describe(m.delete([path], key)[0]))

    @server.tool()
    async def memory_rename(path: str, new_path: str, ctx: Context) -> str:
        """Rename (move) a workspace memory file to a new workspace/<path>.md."""
        return await call(ctx, lambda m, key: describe(m.rename([(path, new_path)], key)[0]))

    return server


# --- Text for the model --------------------------------------------------------------------------


def _may(entry: dict) -> str:
    parts = [f"{mode}{' (approval)' if entry.get('approval') else ''}" for mode in entry.get("modes", [])]
    parts += [
        f"{mode}{' (approval)' if entry.get(mode) == 'proposal' else ''}"
        for mode in ("delete", "rename")
        if entry.get(mode) in ("direct", "proposal")
    ]
    return ", ".join(parts) if parts else "read only"


def _listing(files: list[dict]) -> str:
    if not files:
        return "No memory files yet."
    return "\n".join(
        f"{f['path']}  revision {f['revision']}, {f['size']} bytes; you may: {_may(f)}" for f in files
    )


def _shown(found: dict) -> str:
    if not found["exists"]:
        return f"{found['path']} does not exist yet; you may: {_may(found)}."
    return f"{found['path']} (revision {found['revision']}; you may: {_may(found)})\n---\n{found['content']}"


def _refusal(refused: Refused) -> str:
    result = refused.result
    if refused.code == "conflict" and result.get("head_revision") is not None:
        return (
            f"Not written: {refused.message} The current text (revision "
            f"{result['head_revision']}) is:\n---\n{result.get('head_text', '')}"
        )
    return f"Not done ({refused.code}): {refused.message}"


def _replace_once(path: str, old: str, new: str, text: str) -> str:
    count = text.count(old) if old else 0
    if count != 1:
        raise Refused(
            "no_match" if count == 0 else "not_unique",
            f"old_str appears {count} times in {path}; it must appear exactly once.",
        )
    return text.replace(old, new, 1)


def _insert_at(path: str, line: int, addition: str, text: str) -> str:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not 0 <= line <= len(lines):
        raise Refused("bad_line", f"insert_line {line} is outside 0..{len(lines)} for {path}.")
    lines.insert(line, addition.rstrip("\n"))
    return "\n".join(lines) + "\n"


# --- HTTP: only with the bearer token ------------------------------------------------------------

MIN_TOKEN = 16  # characters; `python -c "import secrets; print(secrets.token_urlsafe(32))"` makes one


class BearerOnly:
    """ASGI middleware: an HTTP request without `Authorization: Bearer <token>` naming the
    configured token is answered 401 (RFC 6750's `WWW-Authenticate: Bearer`), before the MCP
    transport sees it. Tokens are compared in constant time."""

    def __init__(self, app, token: str):
        self.app, self.token = app, token.encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":  # lifespan: the session manager starts and stops with it
            return await self.app(scope, receive, send)
        given = b""
        for name, value in scope.get("headers", []):
            if name.lower() == b"authorization":
                given = value
        scheme, _, credentials = given.partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self.token):
            return await self.app(scope, receive, send)
        challenge = 'Bearer realm="mgc-mcp"' + (', error="invalid_token"' if given else "")
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": None,
                "error": {
                    "code": -32001,
                    "message": "Unauthorized: send 'Authorization: Bearer <token>' with the token "
                    "mgc-mcp was started with.",
                },
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", challenge.encode()),
                    (b"cache-control", b"no-store"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def http_token(token_file: str | None) -> str:
    """The token HTTP clients must send: --token-file's first line, else MGC_MCP_TOKEN.
    ValueError saying what to do when there is none, or it is too short to guess hard."""
    if token_file:
        lines = Path(token_file).read_text(encoding="utf-8").splitlines()
        token = lines[0].strip() if lines else ""
    else:
        token = os.environ.get("MGC_MCP_TOKEN", "").strip()
    if not token:
        raise ValueError(
            "--transport http needs a token that clients send as 'Authorization: Bearer <token>': "
            'set MGC_MCP_TOKEN or pass --token-file (make one with: python -c "import secrets; '
            'print(secrets.token_urlsafe(32))")'
        )
    if len(token) < MIN_TOKEN or any(ord(c) < 33 or ord(c) > 126 for c in token):
        raise ValueError(f"the MCP token must be at least {MIN_TOKEN} visible ASCII characters")
    return token


def serve_http(server: MCPServer, *, token: str, host: str, port: int, path: str) -> None:
    import uvicorn

    app = server.streamable_http_app(streamable_http_path=path, host=host)
    uvicorn.run(BearerOnly(app, token), host=host, port=port, log_level="warning")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mgc-mcp", description=__doc__.split("\n\n")[0])
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--path", default="/mcp", help="the streamable HTTP endpoint")
    parser.add_argument(
        "--token-file",
        help="HTTP: a file whose first line is the bearer token clients must send "
        "(default: the MGC_MCP_TOKEN environment variable)",
    )
    args = parser.parse_args(argv)
    url, token = os.environ.get("MGC_URL", ""), os.environ.get("MGC_RUNNER_TOKEN", "")
    if not url or not token:
        print(
            "mgc-mcp: set MGC_URL and MGC_RUNNER_TOKEN (and MGC_USER for a person's memory)", file=sys.stderr
        )
        return 2
    if args.transport == "http":
        try:
            mcp_token = http_token(args.token_file)
        except (OSError, ValueError) as exc:
            print(f"mgc-mcp: {exc}", file=sys.stderr)
            return 2
    client = Client(url, token, timeout=float(os.environ.get("MGC_TIMEOUT", "30")))
    server = build_server(client, user=os.environ.get("MGC_USER") or None)
    if args.transport == "stdio":
        server.run("stdio")
    else:
        serve_http(server, token=mcp_token, host=args.host, port=args.port, path=args.path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
