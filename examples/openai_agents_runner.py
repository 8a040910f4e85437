"""An OpenAI Agents SDK agent under governed memory, runnable offline: a scripted model (the
SDK's own test double) calls a tool and remembers a fact; the next run's prompt has it.

    export MGC_URL=http://127.0.0.1:8000 MGC_RUNNER_TOKEN=mgc_... MGC_USER=employee
    .venv/bin/python examples/openai_agents_runner.py

With a real model, drop `model=` (and set OPENAI_API_KEY): the hooks stay the same.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents import Agent, Runner, function_tool, set_tracing_disabled  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

from runnerkit import Client  # noqa: E402
from runnerkit.openai_agents import (  # noqa: E402
    MemoryContext,
    MemoryHooks,
    memory_instructions,
    remember,
)


@function_tool
def error_rate(service: str) -> str:
    """The error rate of a service over the last hour."""
    return f"{service}: 2.4% 5xx"


def main() -> int:
    set_tracing_disabled(True)
    client = Client(os.environ["MGC_URL"], os.environ["MGC_RUNNER_TOKEN"])
    model = ScriptedModel(
        [
            [function_call("error_rate", {"service": "checkout"}, call_id="call_1")],
            [function_call("remember", {"note": "checkout ran at 2.4% 5xx"}, call_id="call_2")],
            [assistant_message("Checkout is degraded; noted for next time.")],
        ]
    )
    agent = Agent(
        name="analyst",
        model=model,
        tools=[error_rate, remember],
        instructions=memory_instructions("You analyse incidents. Be brief."),
    )
    context = MemoryContext(user=os.environ.get("MGC_USER"))
    result = Runner.run_sync(agent, "How is checkout?", context=context, hooks=MemoryHooks(client))
    print("agent:", result.final_output)
    print("its system prompt began:", model.calls[0].system_instructions[:200], "…")
    seen = "2.4% 5xx" in client.pre(user=os.environ.get("MGC_USER"))["prompt"]
    print("the next run's prompt", "has" if seen else "does NOT have", "the new memory")
    return 0 if seen else 1


if __name__ == "__main__":
    sys.exit(main())
