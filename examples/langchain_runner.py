"""A LangChain agent (create_agent) under governed memory, runnable offline with a fake chat
model that calls a tool and remembers a fact; the next run's prompt has it.

    export MGC_URL=http://127.0.0.1:8000 MGC_RUNNER_TOKEN=mgc_... MGC_USER=employee
    .venv/bin/python examples/langchain_runner.py

With a real model (`create_agent("openai:gpt-...", ...)`) the middleware stays the same.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402

from runnerkit import Client  # noqa: E402
from runnerkit.langchain import MemoryMiddleware, remember  # noqa: E402


class ScriptedChat(GenericFakeChatModel):
    def bind_tools(self, tools, **kwargs):  # the fake model answers from its script
        return self


@tool
def queue_depth(queue: str) -> str:
    """How many messages wait in a queue."""
    return f"{queue}: 12,400 waiting"


def main() -> int:
    client = Client(os.environ["MGC_URL"], os.environ["MGC_RUNNER_TOKEN"])
    user = os.environ.get("MGC_USER")
    model = ScriptedChat(
        messages=iter(
            [
                AIMessage(
                    "", tool_calls=[{"name": "queue_depth", "args": {"queue": "billing"}, "id": "call_1"}]
                ),
                AIMessage(
                    "",
                    tool_calls=[
                        {
                            "name": "remember",
                            "args": {"note": "billing queue backed up to 12,400"},
                            "id": "call_2",
                        }
                    ],
                ),
                AIMessage("Billing is backed up; noted."),
            ]
        )
    )
    agent = create_agent(
        model,
        tools=[queue_depth, remember],
        system_prompt="You watch queues. Be brief.",
        middleware=[MemoryMiddleware(client, user=user)],
    )
    result = agent.invoke({"messages": [{"role": "user", "content": "How is billing?"}]})
    print("agent:", result["messages"][-1].text)
    seen = "12,400" in client.pre(user=user)["prompt"]
    print("the next run's prompt", "has" if seen else "does NOT have", "the new memory")
    return 0 if seen else 1


if __name__ == "__main__":
    sys.exit(main())
