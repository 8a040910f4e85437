"""JSON-RPC over Streamable HTTP, as the MCP specification (2025-03-26 to 2025-11-25) defines
it for a server that answers every POST with one JSON response and offers no server-sent
stream: the console's own processes answer it (views.py), each request on its own, whatever
process or host served the one before (the session lives in the database).

Messages are read and answers built with the `mcp` SDK's own types (its types module), so the
wire format is the SDK's: a request is validated as a `JSONRPCRequest`, the initialize result
is an `InitializeResult`, tool results `CallToolResult`, errors `ErrorData`."""

from __future__ import annotations

from dataclasses import dataclass, field

from mcp import types
from mcp.types import jsonrpc
from pydantic import ValidationError

from projects.errors import Refusal
from projects.mcp import sessions, tools
from projects.models import Agent, McpSession

PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")  # newest first
SERVER_NAME = "memory-governance-console"
SERVER_VERSION = "1.0.0"


class RpcError(Exception):
    def __init__(self, code: int, message: str, status: int = 200):
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


@dataclass
class Exchange:
    """One HTTP request's worth: who calls, the agent its URL names, the session its
    Mcp-Session-Id names (None before initialize), and headers for the answer."""

    caller: object
    url_agent: Agent | None
    session: McpSession | None = None
    headers: dict = field(default_factory=dict)


def parse(body: bytes):
    """The one JSON-RPC message of a POST (the SDK's types), or an RpcError."""
    try:
        message = jsonrpc.jsonrpc_message_adapter.validate_json(body, by_name=False)
    except ValidationError:
        if body.lstrip().startswith(b"["):
            raise RpcError(
                jsonrpc.INVALID_REQUEST, "Batches are not taken: send one message per POST.", 400
            ) from None
        raise RpcError(jsonrpc.PARSE_ERROR, "The body is not one JSON-RPC 2.0 message.", 400) from None
    return message


def error_body(request_id, code: int, message: str) -> dict:
    return jsonrpc.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=jsonrpc.ErrorData(code=code, message=message)
    ).model_dump(by_alias=True, mode="json", exclude_none=True)


def answer(exchange: Exchange, request: jsonrpc.JSONRPCRequest) -> dict:
    """The JSON-RPC response to one request (a result or an error)."""
    try:
        result = _dispatch(exchange, request)
    except RpcError as exc:
        return error_body(request.id, exc.code, exc.message)
    return {"jsonrpc": "2.0", "id": request.id, "result": result}


def _dump(model) -> dict:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


def _dispatch(exchange: Exchange, request) -> dict:
    method, params = request.method, request.params or {}
    if method == "initialize":
        return _initialize(exchange, params)
    if method == "ping":
        return {}
    if method == "tools/list":
        return _dump(types.ListToolsResult(tools=[types.Tool.model_validate(t) for t in tools.tool_list()]))
    if method == "tools/call":
        return _tool_call(exchange, request)
    if method == "resources/list":
        resource = types.Resource(
            uri=tools.PROMPT_URI,
            name="memory",
            mime_type="text/markdown",
            description="The memory assembled for this session (the pre hook's prompt).",
        )
        return _dump(types.ListResourcesResult(resources=[resource]))
    if method == "resources/templates/list":
        return _dump(types.ListResourceTemplatesResult(resource_templates=[]))
    if method == "resources/read":
        return _resource_read(exchange, params)
    raise RpcError(jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method}")


def _initialize(exchange: Exchange, params: dict) -> dict:
    try:
        asked = types.InitializeRequestParams.model_validate(params)
    except ValidationError:
        raise RpcError(
            jsonrpc.INVALID_PARAMS, "initialize needs protocolVersion, capabilities and clientInfo."
        ) from None
    version = asked.protocol_version if asked.protocol_version in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
    client = f"{asked.client_info.name} {asked.client_info.version}".strip()
    sessions.end_idle()
    mcp = sessions.session_open(caller=exchange.caller, protocol_version=version, client=client)
    exchange.session = mcp
    exchange.headers["Mcp-Session-Id"] = str(mcp.pk)
    agent = exchange.url_agent or (exchange.caller.token.agent if exchange.caller.token is not None else None)
    instructions = tools.INSTRUCTIONS
    if agent is not None:
        try:
            sessions.agent_use(mcp, agent)
            instructions = f"{instructions}\n\n{tools.prompt_text(mcp)}".strip()
        except Refusal as exc:
            instructions = (
                f"{instructions}\n\nThe memory of {agent.project.slug}/{agent.slug} could not be "
                f"assembled ({exc.code}): {exc.message} memory_use_agent tries again."
            )
    else:
        instructions += (
            "\n\nNo agent is chosen yet: memory_agents lists the agents you may work with and "
            "memory_use_agent(project, agent) chooses one (or connect to /mcp/<project>/<agent>/)."
        )
    result = types.InitializeResult(
        protocol_version=version,
        capabilities=types.ServerCapabilities(
            tools=types.ToolsCapability(list_changed=False),
            resources=types.ResourcesCapability(subscribe=False, list_changed=False),
        ),
        server_info=types.Implementation(name=SERVER_NAME, version=SERVER_VERSION),
        instructions=instructions,
    )
    return _dump(result)


def _tool_call(exchange: Exchange, request) -> dict:
    try:
        params = types.CallToolRequestParams.model_validate(request.params or {})
    except ValidationError:
        raise RpcError(jsonrpc.INVALID_PARAMS, "tools/call needs a name and arguments.") from None
    if params.name not in tools.TOOLS:
        raise RpcError(jsonrpc.INVALID_PARAMS, f"Unknown tool: {params.name}")
    call = tools.Call(mcp=exchange.session, caller=exchange.caller, request_id=request.id)
    text, is_error = tools.tool_call(call, params.name, params.arguments or {})
    return _dump(types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error))


def _resource_read(exchange: Exchange, params: dict) -> dict:
    uri = params.get("uri") if isinstance(params, dict) else None
    if uri != tools.PROMPT_URI:
        raise RpcError(jsonrpc.INVALID_PARAMS, f"Unknown resource: {uri}")
    mcp = exchange.session
    text = tools.prompt_text(mcp) if mcp.session_id is not None else ""
    if not text:
        text = "No agent is chosen yet (memory_use_agent), so no memory was assembled."
    contents = types.TextResourceContents(uri=tools.PROMPT_URI, mime_type="text/markdown", text=text)
    return _dump(types.ReadResourceResult(contents=[contents]))
