"""Governed memory for the OpenAI Agents SDK (`pip install 'runnerkit[openai-agents]'`).

    from agents import Agent, Runner
    from runnerkit import Client
    from runnerkit.openai_agents import MemoryContext, MemoryHooks, memory_instructions, remember

    agent = Agent(name="analyst", instructions=memory_instructions("You analyse incidents."),
                  tools=[remember])
    MemoryHooks(Client(url, token)).run_sync(agent, "What happened?",
                                             context=MemoryContext(user="maria"))

- on_agent_start -> pre hook; the memory goes into the agent's instructions. The SDK resolves
  instructions after this hook, so `memory_instructions` is a callable reading the run's
  context (setting `agent.instructions` here would leak into later runs of the same agent);
- on_tool_end -> tool hook, keyed by the SDK's tool_call_id;
- on_agent_end -> post hook with every file changed in the sandbox, the `remember` tool's
  notes included;
- a run that raises never reaches on_agent_end: `MemoryHooks.run`/`run_sync` (or your own
  `finally: await hooks.close(context, error)`) still send what the agent wrote and end the
  session, with an error event saying why.
The console being down never stops the agent: the hooks log a warning and carry on.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from agents import Agent, RunContextWrapper, RunHooks, function_tool

from runnerkit.client import ApiError, Client
from runnerkit.run import MemoryRun

logger = logging.getLogger(__name__)


@dataclass
class MemoryContext:
    """Pass as `Runner.run(..., context=MemoryContext(user=...))`; the hooks fill `run`."""

    user: str | None = None
    run: MemoryRun | None = None


def memory_instructions(base: str):
    """Instructions for `Agent(instructions=...)`: `base`, then the memory of this run."""

    def instructions(context: RunContextWrapper[MemoryContext], agent: Agent) -> str:
        run = getattr(context.context, "run", None)
        return run.instructions(base) if run is not None and run.started else base

    return instructions


class MemoryHooks(RunHooks):
    def __init__(self, client: Client, *, folder=None, direct=None):
        self.client, self.folder, self.direct = client, folder, direct

    async def on_agent_start(self, context, agent) -> None:
        memory = context.context
        if not isinstance(memory, MemoryContext) or memory.run is not None:
            return
        run = MemoryRun(
            self.client,
            user=memory.user,
            folder=self.folder,
            direct=self.direct,
            external_ref=f"openai-agents:{agent.name}",
        )
        try:
            await asyncio.to_thread(run.start)
        except ApiError as exc:
            logger.warning("memory console unavailable, the agent runs without memory: %s", exc)
            return
        memory.run = run

    async def on_tool_end(self, context, agent, tool, result) -> None:
        run = _run_of(context)
        if run is None:
            return
        call = getattr(context, "tool_call_id", None) or ""
        await _quietly(
            run.tool,
            getattr(tool, "name", "tool"),
            str(result)[:300],
            {"tool_call_id": call} if call else None,
            f"oa-{run.session}-{call}" if call else None,
        )

    async def on_agent_end(self, context, agent, output) -> None:
        run = _run_of(context)
        if run is not None:
            await _quietly(run.finish, f"{agent.name}: {str(output)[:200]}")

    async def close(self, context, error: BaseException | None = None) -> None:
        """The finally path: a run that raised (MaxTurnsExceeded, a tool's exception, the
        model's API) never reaches on_agent_end, so this sends what the agent wrote all the
        same and ends the session, with an error event saying why. Safe after on_agent_end:
        nothing is sent twice. `run`/`run_sync` call it; call it yourself in a `finally` when
        you call Runner directly. `context` is the MemoryContext or the run's wrapper."""
        await asyncio.to_thread(self.close_sync, context, error)

    def close_sync(self, context, error: BaseException | None = None) -> None:
        memory = getattr(context, "context", context)
        run = getattr(memory, "run", None)
        if run is None or not run.started:
            return
        summary = f"run ended by {type(error).__name__}" if error is not None else "run ended"
        try:
            run.finish(summary, None, error)
        except ApiError as exc:
            logger.warning("memory console did not take the end of the run: %s", exc)

    async def run(self, agent, input, *, context: MemoryContext, **kwargs):
        """`Runner.run` with these hooks, closed whatever happens (see `close`)."""
        from agents import Runner

        try:
            result = await Runner.run(agent, input, context=context, hooks=self, **kwargs)
        except BaseException as exc:
            await self.close(context, exc)
            raise
        await self.close(context)
        return result

    def run_sync(self, agent, input, *, context: MemoryContext, **kwargs):
        """`Runner.run_sync` with these hooks, closed whatever happens (see `close`)."""
        from agents import Runner

        try:
            result = Runner.run_sync(agent, input, context=context, hooks=self, **kwargs)
        except BaseException as exc:
            self.close_sync(context, exc)
            raise
        self.close_sync(context)
        return result


@function_tool
def remember(context: RunContextWrapper[MemoryContext], note: str) -> str:
    """Remember a fact for later runs: it is added to the workspace memory when the run ends.

    Args:
        note: one line, in plain words.
    """
    run = getattr(context.context, "run", None)
    if run is None or run.finished:
        return "Memory is not available in this run; the note was not kept."
    run.remember(note)
    return "Noted; it will be in the workspace memory of the next run."


def _run_of(context) -> MemoryRun | None:
    run = getattr(context.context, "run", None)
    return run if run is not None and run.started else None


async def _quietly(call, *args) -> None:
    try:
        await asyncio.to_thread(call, *args)
    except ApiError as exc:
        logger.warning("memory console did not take an event: %s", exc)
