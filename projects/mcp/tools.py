"""The MCP endpoint's tools: an agent's governed memory, as the caller's role allows.

Reads are what the agent's session may read (`runners.reads`: its own files, the caller's
own USER.md, the workspace). Writes are posts of that session (`runners.hooks.hook_post`):
the hook policy decides each (written, proposed for a person's approval, refused), the save
path in `memory/` applies everything that holds for every write, each call's writes carry an
idempotency record keyed by the MCP session and the JSON-RPC request id (a client's retry of
the same request writes nothing twice), and every revision and audit event names the agent
acting on behalf of the person, via MCP. On top of the policy, the caller's role is asked
again at each call (`governance.permissions`): compliance staff read and never write, and
someone no longer in the project reaches nothing of it.

Tool names, arguments and wording follow runnerkit's `mgc-mcp`, so a model finds the same
memory tools wherever its host connects."""

from __future__ import annotations

import json
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from projects.errors import Refusal
from projects.governance import permissions, trail
from projects.mcp import sessions
from projects.memory import receipts
from projects.models import McpSession
from projects.runners import hooks, idempotency, reads, targets

INSTRUCTIONS = (
    "You have a governed long-term memory: Markdown files kept by the Memory Governance "
    "Console. Paths are SOUL.md, AGENTS.md, TOOLS.md (your own files), USER.md (the person you "
    "work for) and workspace/<path>.md (shared notes). Use memory_list and memory_read to look, "
    "and the other memory_ tools to change it; a person may have to approve a change first, "
    "and some files you may only read or append to: each tool's result says what happened."
)
PROMPT_URI = "memory://prompt"


class ToolError(Exception):
    """A tool's result with is_error: the model reads it; nothing is raised to the client."""


@dataclass
class Call:
    mcp: McpSession
    caller: object
    request_id: str | int


# --- Arguments (one schema each; the input schemas the client sees come from them) ---------


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NoArgs(_Args):
    pass


class UseAgentArgs(_Args):
    project: str = Field(description="The project's slug, as memory_agents lists it.")
    agent: str = Field(description="The agent's slug in that project.")


class PathArgs(_Args):
    path: str = Field(description="SOUL.md, AGENTS.md, TOOLS.md, USER.md or workspace/<path>.md")


class AppendArgs(PathArgs):
    text: str


class ReplaceArgs(PathArgs):
    content: str
    base_revision: int | None = Field(default=None, ge=1)


class StrReplaceArgs(PathArgs):
    old_str: str
    new_str: str


class InsertArgs(PathArgs):
    insert_line: int = Field(ge=0)
    text: str


class RenameArgs(PathArgs):
    new_path: str


# --- The session and the caller's role ------------------------------------------------------


def _session(call: Call):
    mcp = call.mcp
    if mcp.session_id is None:
        raise ToolError(
            "No agent chosen yet: memory_agents lists the agents you may work with, and "
            "memory_use_agent(project, agent) chooses one."
        )
    role = _role(call)
    if role is None:
        raise ToolError("You are no longer a member of this agent's project; nothing was read or written.")
    return mcp.session


def _role(call: Call) -> str | None:
    if call.caller.token is not None:
        return "runner"
    return permissions.role_in(call.caller.user, call.mcp.agent.project)


def _may_write(call: Call) -> None:
    if _role(call) == permissions.COMPLIANCE:
        raise ToolError(
            "Not done (read_only): compliance staff read memory and never change it; nothing was written."
        )


def _read_audited(call: Call, session, path: str, revision: int) -> None:
    """Compliance staff's reads of memory are audited, as on the pages (`trail.audit_reads`)."""
    role = _role(call)
    if not permissions.reads_are_audited(role):
        return
    file = targets.file_named(session, path)
    if file is not None:
        trail.audit_reads(
            user=call.caller.user,
            role=role,
            action="read.file",
            project=session.agent.project,
            reads=[(file, {"revision": revision, "via": "mcp"})],
        )


# --- Tools ------------------------------------------------------------------------------------


def memory_agents(call: Call, args: NoArgs) -> str:
    """List the agents whose memory you may work with (project/agent), and which one this
    session uses."""
    agents = list(sessions.reachable_agents(call.caller)[:200])
    if not agents:
        return "You may work with no agent: you are a member of no project that has one."
    current = call.mcp.agent_id
    lines = [
        f"{a.project.slug}/{a.slug}  {a.name} ({a.project.name})"
        + ("  <- this session" if a.pk == current else "")
        for a in agents
    ]
    return "\n".join(lines)


def memory_use_agent(call: Call, args: UseAgentArgs) -> str:
    """Choose the agent whose memory this session works with (memory_agents lists them); its
    memory for you is assembled now, as at the start of a session."""
    agent = sessions.agent_named(call.caller, args.project, args.agent)
    if agent is None:
        raise ToolError(f"No agent {args.project}/{args.agent} that you may work with.")
    sessions.agent_use(call.mcp, agent)
    return f"This session now works with {agent.project.slug}/{agent.slug}.\n\n{prompt_text(call.mcp)}"


def memory_list(call: Call, args: NoArgs) -> str:
    """List the memory files you may read, with their revision, size and what you may do to
    each (append, replace, delete, rename; directly or as a proposal)."""
    files, truncated = reads.files_list(session=_session(call))
    if not files:
        return "No memory files yet."
    lines = [
        f"{f['path']}  revision {f['revision']}, {f['size']} bytes; you may: {_may(call, f)}" for f in files
    ]
    if truncated:
        lines.append(f"(the first {len(files)} files; more are left off)")
    return "\n".join(lines)


def memory_read(call: Call, args: PathArgs) -> str:
    """Read one memory file as it stands now, with its revision (send that revision as
    base_revision to memory_replace)."""
    session = _session(call)
    found = _current(session, args.path)
    if not found["exists"]:
        return f"{found['path']} does not exist yet; you may: {_may(call, found)}."
    _read_audited(call, session, found["path"], found["revision"])
    header = f"{found['path']} (revision {found['revision']}; you may: {_may(call, found)})"
    return f"{header}\n---\n{found['content']}"


def memory_append(call: Call, args: AppendArgs) -> str:
    """Add text at the end of a memory file (creating it if new)."""
    return _describe(_write(call, [hooks.WriteRequest(args.path, "append", args.text)]))


def memory_replace(call: Call, args: ReplaceArgs) -> str:
    """Replace a memory file's whole text. base_revision is the revision you read (from
    memory_read); leave it out only for a new file. If the file moved on, nothing is written
    and you get its current text."""
    return _describe(
        _write(call, [hooks.WriteRequest(args.path, "replace", args.content, args.base_revision)])
    )


def memory_str_replace(call: Call, args: StrReplaceArgs) -> str:
    """Replace the one occurrence of old_str in a memory file with new_str."""

    def change(text: str) -> str:
        count = text.count(args.old_str) if args.old_str else 0
        if count != 1:
            raise ToolError(
                f"Not done ({'no_match' if count == 0 else 'not_unique'}): old_str appears {count} "
                f"times in {args.path}; it must appear exactly once."
            )
        return text.replace(args.old_str, args.new_str, 1)

    return _edit(call, args.path, change)


def memory_insert(call: Call, args: InsertArgs) -> str:
    """Insert text after line insert_line of a memory file (0: at the top)."""

    def change(text: str) -> str:
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if args.insert_line > len(lines):
            raise ToolError(
                f"Not done (bad_line): insert_line {args.insert_line} is outside "
                f"0..{len(lines)} for {args.path}."
            )
        lines.insert(args.insert_line, args.text.rstrip("\n"))
        return "\n".join(lines) + "\n"

    return _edit(call, args.path, change)


def memory_delete(call: Call, args: PathArgs) -> str:
    """Delete a memory file (its history is kept and a person can restore it)."""
    base = _current(_session(call), args.path)["revision"]
    return _describe(_write(call, [hooks.WriteRequest(args.path, "delete", base_revision=base)]))


def memory_rename(call: Call, args: RenameArgs) -> str:
    """Rename (move) a workspace memory file to a new workspace/<path>.md."""
    base = _current(_session(call), args.path)["revision"]
    write = hooks.WriteRequest(args.path, "rename", base_revision=base, new_path=args.new_path)
    return _describe(_write(call, [write]))


TOOLS = {
    f.__name__: (f, args)
    for f, args in (
        (memory_agents, NoArgs),
        (memory_use_agent, UseAgentArgs),
        (memory_list, NoArgs),
        (memory_read, PathArgs),
        (memory_append, AppendArgs),
        (memory_replace, ReplaceArgs),
        (memory_str_replace, StrReplaceArgs),
        (memory_insert, InsertArgs),
        (memory_delete, PathArgs),
        (memory_rename, RenameArgs),
    )
}
READ_ONLY = {"memory_agents", "memory_use_agent", "memory_list", "memory_read"}


def tool_list() -> list[dict]:
    """The tools as `tools/list` answers (name, description, input schema, read-only hint)."""
    out = []
    for name, (function, args) in TOOLS.items():
        schema = args.model_json_schema()
        schema.pop("title", None)
        for field in schema.get("properties", {}).values():
            field.pop("title", None)
        out.append(
            {
                "name": name,
                "description": " ".join(function.__doc__.split()),
                "inputSchema": schema,
                "annotations": {
                    "readOnlyHint": name in READ_ONLY,
                    "destructiveHint": name == "memory_delete",
                },
            }
        )
    return out


def tool_call(call: Call, name: str, arguments: dict) -> tuple[str, bool]:
    """(text, is_error) for one tool call. Refusals, conflicts and bad arguments come back as
    results the model reads (is_error), as the specification asks of tool errors."""
    if name not in TOOLS:
        raise KeyError(name)
    function, schema = TOOLS[name]
    try:
        args = schema.model_validate(arguments or {})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors()
        )
        return f"Not done (invalid_arguments): {problems}", True
    try:
        return function(call, args), False
    except ToolError as exc:
        return str(exc), True
    except Refusal as exc:
        outcome = getattr(exc, "outcome", "")
        tail = (
            " Whether it was applied is unknown; the same call again is safe." if outcome == "unknown" else ""
        )
        return f"Not done ({exc.code}): {exc.message}{tail}", True


def prompt_text(mcp: McpSession) -> str:
    """The memory the session's pre hook assembled, as it returned it (kept under its sha256)."""
    session = mcp.session
    if session is None:
        return ""
    prompt = receipts.prompt_read(project=session.agent.project, sha256=session.prompt_sha256)
    return prompt or ""


# --- Helpers ------------------------------------------------------------------------------------


def _current(session, path: str) -> dict:
    try:
        return reads.file_current(session=session, path=path)
    except hooks.HookError as exc:
        raise ToolError(f"Not done ({exc.code}): {exc.message}") from None


def _edit(call: Call, path: str, change) -> str:
    """Apply `change` to the file's current text: an append when it only adds at the end (all
    an append-only file allows), else a replace on the revision read; a replace that meets a
    newer revision is tried once more on the current text."""
    found = _current(_session(call), path)
    if not found["exists"]:
        raise ToolError(f"Not done (not_found): {path} does not exist.")
    text, base = found["content"], found["revision"]
    for attempt in (1, 2):
        new = change(text)
        if new.startswith(text) and "append" in found["modes"]:
            write = hooks.WriteRequest(path, "append", new[len(text) :])
        else:
            write = hooks.WriteRequest(path, "replace", new, base)
        result = _write(call, [write], again=attempt == 2)
        if result.get("status") != "conflict" or attempt == 2:
            return _describe(result)
        text, base = result.get("head_text") or "", result.get("head_revision")
    raise AssertionError("unreachable")


def _write(call: Call, writes: list, *, again: bool = False) -> dict:
    """One post of the session (end=false) with an idempotency record of its own."""
    session = _session(call)
    _may_write(call)
    agent = session.agent
    key = f"mcp-{call.mcp.pk}-{call.request_id}{'-again' if again else ''}"[:200]
    body = json.dumps([w.__dict__ for w in writes], sort_keys=True).encode()
    record, replay = idempotency.begin(agent=agent, key=key, endpoint="hooks/post", body=body)
    if replay:
        return record.response["results"][0]
    try:
        return hooks.hook_post(session=session, writes=writes, summary="", record=record, end=False)[0]
    except BaseException:
        idempotency.release(record)
        raise


def _describe(result: dict) -> str:
    path, status = result.get("path", ""), result.get("status")
    if status == "proposed" and result.get("code") == "quarantined":
        return (
            f"Held for review (proposal {result.get('proposal')}): the text reads like instructions "
            f"planted in memory ({', '.join(result.get('findings') or [])}); an admin or a "
            f"compliance officer decides. Nothing is written to {path}."
        )
    if status == "proposed":
        return (
            f"Proposed (proposal {result.get('proposal')}): a person approves it before "
            f"{path} changes; nothing is written yet."
        )
    if status in ("rejected", "conflict"):
        if status == "conflict" and result.get("head_revision") is not None:
            raise ToolError(
                f"Not written: {result.get('message')} The current text (revision "
                f"{result['head_revision']}) is:\n---\n{result.get('head_text', '')}"
            )
        raise ToolError(f"Not done ({result.get('code')}): {result.get('message')}")
    if result.get("mode") == "rename":
        return (
            f"Renamed {path} to {result.get('new_path')} (revision "
            f"{result.get('new_revision')}); the history keeps both."
        )
    if result.get("mode") == "delete":
        return f"Deleted {path}; its history is kept (revision {result.get('revision')})."
    if result.get("unchanged"):
        return f"{path} already says that: revision {result.get('revision')} is unchanged."
    return f"Written: {path} is now revision {result.get('revision')}."


def _may(call: Call, entry: dict) -> str:
    if _role(call) == permissions.COMPLIANCE:
        return "read only (compliance)"
    parts = [f"{mode}{' (approval)' if entry.get('approval') else ''}" for mode in entry.get("modes", [])]
    parts += [
        f"{mode}{' (approval)' if entry.get(mode) == 'proposal' else ''}"
        for mode in ("delete", "rename")
        if entry.get(mode) in ("direct", "proposal")
    ]
    return ", ".join(parts) if parts else "read only"
