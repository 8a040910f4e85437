"""The company's memory over MCP: the console serves the Model Context Protocol itself
(Streamable HTTP at /mcp/ and /mcp/<project>/<agent>/), as an OAuth 2.1 resource server whose
tokens come from the identity provider single sign-on uses.

Modules: auth (who calls: access tokens checked against the provider, runner tokens),
sessions (an MCP session is one console session of its agent), tools (the memory tools, by the
caller's role and the agent's hook policy), protocol (JSON-RPC with the mcp SDK's types),
views (the endpoint and the protected resource metadata). docs/ARCHITECTURE.md says why it
runs inside the console's processes.
"""
