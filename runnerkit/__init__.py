"""A client for agent runners of the Memory Governance Console: the hook API, a sandbox folder
and adapters for the runtimes agents run on.

The core is standard library only, so a runner can vendor it without Django:

    from runnerkit import Client, Sandbox
    client = Client("https://memory.example.com", token)
    pre = client.pre(user="maria")              # prompt + session
    box = Sandbox(client, pre["session"], "/tmp/run-1")
    box.pull()                                  # files as a local folder
    ... the agent edits files in /tmp/run-1 ...
    report = box.push(summary="triaged INC-42")  # changed/new files -> post hook

Adapters (optional extras): runnerkit.claude (`mgc-hook` for Claude Code command hooks),
runnerkit.openai_agents (RunHooks), runnerkit.langchain (create_agent middleware); the
direct sandbox (runnerkit.direct, extra `s3`). See README.md beside this file.
"""

from runnerkit.client import ApiError, Client
from runnerkit.run import MemoryRun
from runnerkit.sandbox import Sandbox
from runnerkit.version import API_VERSION, __version__

__all__ = ["API_VERSION", "ApiError", "Client", "MemoryRun", "Sandbox", "__version__"]
