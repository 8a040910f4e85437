"""Governed memory for LangChain agents (`create_agent`, langchain 1.x) as middleware
(`pip install 'runnerkit[langchain]'`).

    from langchain.agents import create_agent
    from runnerkit import Client
    from runnerkit.langchain import MemoryMiddleware, remember

    agent = create_agent(model, tools=[remember, ...],
                         middleware=[MemoryMiddleware(Client(url, token), user="maria")])
    agent.invoke({"messages": [{"role": "user", "content": "What happened?"}]})

- before_agent -> pre hook (the session id goes into the agent's state);
- wrap_model_call -> the memory joins the system prompt (a SystemMessage returned from
  before_agent would only be appended to the history);
- wrap_tool_call -> tool hook, or error hook when the tool raised or answered an error,
  keyed by the tool call's id;
- after_agent -> post hook with every file changed in the sandbox.
The console being down never stops the agent: the middleware logs a warning and carries on.
"""

from __future__ import annotations

import contextvars
import logging
from typing import NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain.tools import tool
from langchain_core.messages import SystemMessage, ToolMessage

from runnerkit.client import ApiError, Client
from runnerkit.run import MemoryRun

logger = logging.getLogger(__name__)
_current: contextvars.ContextVar[MemoryRun | None] = contextvars.ContextVar("mgc_run",
                                                                             default=None)


class MemoryState(AgentState):
    mgc_session: NotRequired[str]


class MemoryMiddleware(AgentMiddleware):
    state_schema = MemoryState

    def __init__(self, client: Client, *, user: str | None = None, folder=None, direct=None):
        super().__init__()
        self.client, self.user, self.folder, self.direct = client, user, folder, direct
        self._runs: dict[str, MemoryRun] = {}

    def before_agent(self, state, runtime):
        run = MemoryRun(self.client, user=self.user, folder=self.folder, direct=self.direct,
                        external_ref="langchain")
        try:
            run.start()
        except ApiError as exc:
            logger.warning("memory console unavailable, the agent runs without memory: %s", exc)
            return None
        self._runs[run.session] = run
        return {"mgc_session": run.session}

    def wrap_model_call(self, request, handler):
        run = self._runs.get(request.state.get("mgc_session", ""))
        if run is None:
            return handler(request)
        base = request.system_message.text if request.system_message is not None else ""
        return handler(request.override(system_message=SystemMessage(run.instructions(base))))

    def wrap_tool_call(self, request, handler):
        run = self._runs.get(request.state.get("mgc_session", "")) if request.state else None
        if run is None:
            return handler(request)
        call = request.tool_call
        token = _current.set(run)
        try:
            result = handler(request)
        except Exception as exc:
            _quietly(run.error, f"{call['name']}: {exc}", {"tool_call_id": call.get("id")},
                     f"lc-{run.session}-{call.get('id')}-error")
            raise
        finally:
            _current.reset(token)
        if isinstance(result, ToolMessage) and result.status == "error":
            _quietly(run.error, f"{call['name']}: {result.text[:1900]}",
                     {"tool_call_id": call.get("id")}, f"lc-{run.session}-{call.get('id')}-error")
        else:
            content = result.text if isinstance(result, ToolMessage) else str(result)
            _quietly(run.tool, call["name"], content[:300], {"tool_call_id": call.get("id")},
                     f"lc-{run.session}-{call.get('id')}")
        return result

    def after_agent(self, state, runtime):
        run = self._runs.pop(state.get("mgc_session", ""), None)
        if run is not None:
            last = state["messages"][-1].text if state.get("messages") else ""
            _quietly(run.finish, f"langchain agent: {last[:200]}")
        return None


@tool
def remember(note: str) -> str:
    """Remember a fact for later runs: it is added to the workspace memory when the run ends.

    Args:
        note: one line, in plain words.
    """
    run = _current.get()
    if run is None:
        return "Memory is not available in this run; the note was not kept."
    run.remember(note)
    return "Noted; it will be in the workspace memory of the next run."


def _quietly(call, *args) -> None:
    try:
        call(*args)
    except ApiError as exc:
        logger.warning("memory console did not take an event: %s", exc)
