"""A small client for agent runners: the console's hook API and a sandbox folder.

Standard library only, so a runner can vendor it without Django:

    from runnerkit import Client, Sandbox
    client = Client("https://memory.example.com", token)
    pre = client.pre(user="maria")              # prompt + session
    box = Sandbox(client, pre["session"], "/tmp/run-1")
    box.pull()                                  # files as a local folder
    ... the agent edits files in /tmp/run-1 ...
    report = box.push(summary="triaged INC-42")  # changed/new files -> post hook
"""

from runnerkit.client import ApiError, Client
from runnerkit.sandbox import Sandbox

__all__ = ["ApiError", "Client", "Sandbox"]
