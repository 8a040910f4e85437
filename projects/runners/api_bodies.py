"""The runner API's request and response bodies (pydantic, through django-ninja): requests
forbid unknown fields, integers are bounded, names and messages may not hold NUL or half a
character. The OpenAPI description is made from these, so it cannot drift from what is
enforced; `runners.api` serves them."""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from django.conf import settings
from ninja import Schema
from pydantic import AfterValidator, ConfigDict, Field

from projects import jsontext
from projects.runners.schemas import How

# Revision numbers are PositiveIntegerField: at most 2^31 - 1 on every database we support.
MAX_REVISION = 2_147_483_647


def _storable_text(text: str) -> str:
    if "\x00" in text:
        raise ValueError("NUL characters are not allowed.")
    return jsontext.plain(text)  # a lone surrogate (a \udXXX escape) is not text


# Text that PostgreSQL, pages and S3 can hold: no NUL (text and jsonb refuse it), no lone
# surrogate (nothing can encode it). Memory contents are plain str: the store refuses what
# it cannot hold per write, with its own message.
# The schema says so too (a pattern with no NUL), so clients generated from it, and fuzzers
# reading it, send what is accepted.
Text = Annotated[str, AfterValidator(_storable_text), Field(json_schema_extra={"pattern": "^[^\\u0000]*$"})]


def storable(value: Any) -> Any:
    """A free-form JSON value made storable: NUL and lone surrogates become U+FFFD."""
    if isinstance(value, str):
        clean = value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return clean.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {storable(k): storable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [storable(item) for item in value]
    return value


class Strict(Schema):
    model_config = ConfigDict(extra="forbid")


class ErrorBody(Schema):
    code: str
    message: str


class ErrorOut(Schema):
    error: ErrorBody


Username = Annotated[Text, Field(min_length=1, max_length=150)]


class PreIn(Strict):
    user: Username | None = Field(None, description="Username of the employee the agent serves.")
    session: Text | None = Field(None, max_length=200, description="The runner's own session id.")


class FileRef(Schema):
    path: str
    revision: int | None


class SectionOut(Schema):
    tag: str
    source: str
    path: str | None = Field(description="The file, for single-file sections.")
    revision: int | None
    files: list[FileRef]
    tokens: int
    truncated: bool
    trust: Literal["trusted", "untrusted"] = Field(
        description="untrusted: fenced in the prompt as data (by default the workspace, which "
        "agents write; the manifest's `trust` says otherwise). A runner whose host allows it "
        "places untrusted sections outside the system message (docs/RUNNERS.md)."
    )
    origin: list[Literal["people", "agents", "external"]] = Field(
        description="Who wrote the section's lines, by blame: people in the console, agents, "
        "or external (direct writes to the bucket, imports)."
    )


class PreOut(Schema):
    session: uuid.UUID
    prompt: str
    prompt_sha256: str
    sections: list[SectionOut]
    total_tokens: int
    budget: int | None
    tokenizer: str
    bucket_checked: bool = Field(
        description="False when S3 could not be listed, so direct "
        "writes to the bucket may not be in the prompt."
    )


class _Write(Strict):
    path: Text = Field(min_length=1, max_length=400)
    base_revision: int | None = Field(
        None,
        ge=0,
        le=MAX_REVISION,
        description="The revision a replace, delete or rename "
        "starts from (default: the one the session "
        "was shown).",
    )


# Characters, at most as many as the bytes a file may hold; the store checks the bytes.
Content = Annotated[str, Field(max_length=settings.MGC_MAX_FILE_BYTES)]


class AppendIn(_Write):
    mode: Literal["append"]
    content: Content = Field(description="Added at the end of the file (a new file holds it).")


class ReplaceIn(_Write):
    mode: Literal["replace"]
    content: Content = Field(description="The file's whole new text.")


class DeleteIn(_Write):
    mode: Literal["delete"]


class RenameIn(_Write):
    mode: Literal["rename"]
    new_path: Text = Field(
        min_length=1, max_length=400, description="The new workspace/<path>.md; it must not hold a file."
    )


# One schema per mode (the OpenAPI description says which fields go with which); the agent's
# hook policy says which modes it may use on a path, and whether directly or as a proposal.
WriteIn = Annotated[AppendIn | ReplaceIn | DeleteIn | RenameIn, Field(discriminator="mode")]


class PostIn(Strict):
    session: uuid.UUID
    writes: list[WriteIn] = Field(default_factory=list, max_length=50)
    summary: Text | None = Field(None, max_length=2000)
    end: bool = Field(
        True,
        description="Whether this post ends the session (the default). "
        "Runtimes that write as they go send false, then a "
        "last post (writes may be empty) when the run ends.",
    )


class WriteResult(Schema):
    path: str
    mode: str
    status: Literal["written", "proposed", "rejected", "conflict"]
    revision: int | None = Field(
        None, description="The revision of `path` this write made (a delete's or a rename's is a tombstone)."
    )
    new_path: str | None = None
    new_revision: int | None = Field(
        None, description="A rename: the revision at new_path, which names the file it came from."
    )
    unchanged: bool | None = Field(
        None,
        description="A replace with the head's own text, or an "
        "empty append: no revision was made; "
        "`revision` is the head.",
    )
    proposal: int | None = None
    head_revision: int | None = Field(None, description="On a conflict: the current revision.")
    head_text: str | None = Field(
        None,
        description="On a conflict: the current text, to merge and send again as a replace on head_revision.",
    )
    code: str | None = None
    findings: list[str] | None = Field(
        None,
        description='With code "quarantined": the poisoning families found (instruction_override, '
        "exfiltration, ...); the write waits for an admin or a compliance officer.",
    )
    message: str | None = None


class PostOut(Schema):
    session: uuid.UUID
    results: list[WriteResult]


class ToolIn(Strict):
    session: uuid.UUID
    name: Text = Field(min_length=1, max_length=100)
    summary: Text | None = Field(None, max_length=2000)
    details: dict[str, Any] | None = None


class ErrorIn(Strict):
    session: uuid.UUID
    message: Text = Field(min_length=1, max_length=2000)
    details: dict[str, Any] | None = None


class EventOut(Schema):
    session: uuid.UUID
    recorded: bool
    event: int
    logged_to: str | None = None
    revision: int | None = None
    log_error: str | None = None


class SandboxIn(Strict):
    session: uuid.UUID


class FilePolicy(Schema):
    writable: bool = Field(description="The policy lets the agent append or replace it.")
    modes: list[str] = Field(description="Of append and replace, what the policy allows.")
    approval: bool = Field(description="Appends and replaces become proposals a person approves.")
    delete: How = Field(description="How a delete goes: directly, as a proposal, or never.")
    rename: How = Field(description="How a rename goes: directly, as a proposal, or never.")


class SandboxFile(FilePolicy):
    path: str
    revision: int | None
    content: str
    key: str = Field(description="The object's key in the bucket.")
    direct: bool = Field(description="The runner's S3 credentials may replace it in place.")


class FilesIn(Strict):
    session: uuid.UUID


class ListedFile(FilePolicy):
    path: str
    revision: int
    size: int = Field(description="Bytes.")


class FilesOut(Schema):
    session: uuid.UUID
    files: list[ListedFile]
    truncated: bool = Field(description="More files than one answer lists (2,000).")


class ReadIn(Strict):
    session: uuid.UUID
    path: Text = Field(min_length=1, max_length=400)


class ReadOut(FilePolicy):
    session: uuid.UUID
    path: str
    exists: bool
    revision: int | None = Field(description="The head (for a deleted file: its tombstone).")
    content: str


class SandboxStorage(Schema):
    bucket: str
    prefix: str
    workspace_prefix: str = Field(description="Where new workspace files go (key = this + relative path).")


class SandboxOut(Schema):
    session: uuid.UUID
    agent: uuid.UUID
    storage: SandboxStorage
    files: list[SandboxFile]
