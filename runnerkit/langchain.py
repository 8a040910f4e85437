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
  before_agent would only be appended to the history); its untrusted sections go in a user
  turn before the conversation instead;
- wrap_tool_call -> tool hook, or error hook when the tool raised or answered an error,
  keyed by the tool call's id;
- after_agent -> post hook with every file changed in the sandbox;
- a tool or a model call that raises ends the run without after_agent: the middleware sends
  what the agent wrote and ends the session then, with an error event saying why;
- the async API (`ainvoke`, `astream`) runs the same steps (abefore_agent, awrap_model_call,
  awrap_tool_call, aafter_agent), the console calls in a worker thread.
The console being down never stops the agent: the middleware logs a warning and carries on.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from typing import NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain.tools import tool
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage

from runnerkit.client import ApiError, Client
from runnerkit.run import MemoryRun

logger = logging.getLogger(__name__)
_current: contextvars.ContextVar[MemoryRun | None] = contextvars.ContextVar("mgc_run", default=None)


class MemoryState(AgentState):
    mgc_session: NotRequired[str]


class MemoryMiddleware(AgentMiddleware):
    state_schema = MemoryState

    def __init__(self, client: Client, *, user: str | None = None, folder=None, direct=None):
        super().__init__()
        self.client, self.user, self.folder, self.direct = client, user, folder, direct
        self._runs: dict[str, MemoryRun] = {}

    # -- start ---------------------------------------------------------------------------------
    def before_agent(self, state, runtime):
        run = MemoryRun(
            self.client, user=self.user, folder=self.folder, direct=self.direct, external_ref="langchain"
        )
        try:
            run.start()
        except ApiError as exc:
            logger.warning("memory console unavailable, the agent runs without memory: %s", exc)
            return None
        self._runs[run.session] = run
        return {"mgc_session": run.session}

    async def abefore_agent(self, state, runtime):
        return await asyncio.to_thread(self.before_agent, state, runtime)

    # -- the model -----------------------------------------------------------------------------
    def _with_memory(self, request):
        run = self._runs.get(request.state.get("mgc_session", ""))
        if run is None:
            return None, request
        base = request.system_message.text if request.system_message is not None else ""
        # The untrusted (fenced) sections go in a user turn before the conversation, not in
        # the system message: memory agents wrote is not the operator's voice.
        records = run.records()
        messages = [HumanMessage(records), *request.messages] if records else request.messages
        return run, request.override(
            system_message=SystemMessage(run.instructions(base, outside=True)), messages=messages
        )

    def wrap_model_call(self, request, handler):
        run, request = self._with_memory(request)
        try:
            return handler(request)
        except Exception as exc:
            self._failed(run, exc, "model")
            raise

    async def awrap_model_call(self, request, handler):
        run, request = self._with_memory(request)
        try:
            return await handler(request)
        except Exception as exc:
            await asyncio.to_thread(self._failed, run, exc, "model")
            raise

    # -- tools ---------------------------------------------------------------------------------
    def _run_of(self, request) -> MemoryRun | None:
        return self._runs.get(request.state.get("mgc_session", "")) if request.state else None

    def wrap_tool_call(self, request, handler):
        run = self._run_of(request)
        if run is None:
            return handler(request)
        token = _current.set(run)
        try:
            result = handler(request)
        except Exception as exc:
            self._failed(run, exc, "tool", request.tool_call)
            raise
        finally:
            _current.reset(token)
        self._record(run, request.tool_call, result)
        return result

    async def awrap_tool_call(self, request, handler):
        run = self._run_of(request)
        if run is None:
            return await handler(request)
        token = _current.set(run)
        try:
            result = await handler(request)
        except Exception as exc:
            await asyncio.to_thread(self._failed, run, exc, "tool", request.tool_call)
            raise
        finally:
            _current.reset(token)
        await asyncio.to_thread(self._record, run, request.tool_call, result)
        return result

    def _record(self, run: MemoryRun, call: dict, result) -> None:
        if isinstance(result, ToolMessage) and result.status == "error":
            _quietly(
                run.error,
                f"{call['name']}: {result.text[:1900]}",
                {"tool_call_id": call.get("id")},
                f"lc-{run.session}-{call.get('id')}-error",
            )
        else:
            content = result.text if isinstance(result, ToolMessage) else str(result)
            _quietly(
                run.tool,
                call["name"],
                content[:300],
                {"tool_call_id": call.get("id")},
                f"lc-{run.session}-{call.get('id')}",
            )

    def _failed(
        self, run: MemoryRun | None, exc: BaseException, where: str, call: dict | None = None
    ) -> None:
        """An exception leaving a tool or the model ends the agent's run without after_agent:
        send what the agent wrote and end the session now, with an error event saying why.
        (Should something outside catch it and the agent go on, its `remember` says memory is
        no longer available in this run rather than keep a note nobody sends.)"""
        if run is None:
            return
        self._runs.pop(run.session, None)
        what = f"{call['name']}: {exc}" if call else f"the model failed: {exc}"
        _quietly(
            run.error,
            what[:2000],
            {"tool_call_id": call.get("id")} if call else None,
            f"lc-{run.session}-{call.get('id') if call else 'model'}-error",
        )
        _quietly(run.finish, f"langchain agent stopped: {type(exc).__name__} in the {where}")

    # -- end -----------------------------------------------------------------------------------
    def after_agent(self, state, runtime):
        run = self._runs.pop(state.get("mgc_session", ""), None)
        if run is not None:
            last = state["messages"][-1].text if state.get("messages") else ""
            _quietly(run.finish, f"langchain agent: {last[:200]}")
        return None

    async def aafter_agent(self, state, runtime):
        return await asyncio.to_thread(self.after_agent, state, runtime)


@tool
def remember(note: str) -> str:
    """Remember a fact for later runs: it is added to the workspace memory when the run ends.

    Args:
        note: one line, in plain words.
    """
    run = _current.get()
    if run is None or run.finished:
        return "Memory is not available in this run; the note was not kept."
    run.remember(note)
    return "Noted; it will be in the workspace memory of the next run."


def _quietly(call, *args) -> None:
    try:
        call(*args)
    except ApiError as exc:
        logger.warning("memory console did not take an event: %s", exc)
