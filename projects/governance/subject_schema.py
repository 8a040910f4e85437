"""The answer package's machine-readable part, `answer.json`: its JSON Schema (draft 2020-12),
shipped in every package as `schema.json` and described in docs/SUBJECT_REQUESTS.md. A change
that is not backwards compatible bumps VERSION."""

VERSION = "1"
ID = f"urn:mgc:subject-answer:{VERSION}"

_TEXT = {"type": ["string", "null"]}
_WHEN = {"type": ["string", "null"], "format": "date-time"}


def _object(required: dict, optional: dict | None = None) -> dict:
    return {
        "type": "object",
        "required": sorted(required),
        "properties": {**required, **(optional or {})},
    }


def _list(item: dict) -> dict:
    return {"type": "array", "items": item}


_ORIGIN = _object(
    {
        "revision": {"type": "integer"},
        "author": {"type": "string"},
        "author_kind": {"type": "string", "enum": ["person", "agent", "external", "system"]},
        "at": _WHEN,
    },
    {"session": _TEXT, "exact": {"type": "boolean"}},
)

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": ID,
    "title": "What the Memory Governance Console holds about a person",
    **_object(
        {
            "schema": {"const": ID},
            "operator": {"type": "string"},
            "generated_at": {"type": "string", "format": "date-time"},
            "language": {"type": "string", "enum": ["en", "ru"]},
            "request": _object(
                {
                    "id": {"type": "integer"},
                    "kind": {"type": "string"},
                    "law": {"type": "string", "enum": ["152-fz", "gdpr", "both"]},
                    "received_at": {"type": "string", "format": "date-time"},
                    "due_on": {"type": "string", "format": "date"},
                    "deadlines": {"type": "object"},
                }
            ),
            "subject": _object(
                {"username": {"type": "string"}, "name": {"type": "string"}, "email": {"type": "string"}}
            ),
            "projects": _list(_object({"slug": {"type": "string"}, "name": {"type": "string"}})),
            "profiles": _list(
                _object(
                    {
                        "project": {"type": "string"},
                        "path": {"type": "string"},
                        "file": _TEXT,
                        "revisions": _list(
                            _object(
                                {
                                    "number": {"type": "integer"},
                                    "created_at": {"type": "string"},
                                    "author": {"type": "string"},
                                    "author_kind": {"type": "string"},
                                    "message": {"type": "string"},
                                    "sha256": {"type": "string"},
                                    "deletion": {"type": "boolean"},
                                    "file": _TEXT,
                                },
                                {"text_gone": {"type": "boolean"}},
                            )
                        ),
                    }
                )
            ),
            "proposals": _list(
                _object(
                    {
                        "id": {"type": "integer"},
                        "project": {"type": "string"},
                        "agent": {"type": "string"},
                        "mode": {"type": "string"},
                        "status": {"type": "string", "enum": ["pending", "approved", "rejected"]},
                        "created_at": {"type": "string"},
                        "content": {"type": "string"},
                    },
                    {"decided_at": _WHEN, "decided_by_you": {"type": "boolean"}, "note": _TEXT},
                )
            ),
            "consent": _object(
                {
                    "decisions": _list(
                        _object(
                            {
                                "proposal": {"type": "integer"},
                                "decision": {"type": "string"},
                                "at": _WHEN,
                            },
                            {"note": _TEXT},
                        )
                    ),
                    "withdrawals": _list(
                        _object(
                            {"withdrawn_at": {"type": "string"}, "erase_by": {"type": "string"}},
                            {"project": _TEXT, "restored_at": _WHEN},
                        )
                    ),
                }
            ),
            "flags": _list(
                _object(
                    {
                        "project": {"type": "string"},
                        "path": {"type": "string"},
                        "revision": {"type": "integer"},
                        "comment": {"type": "string"},
                        "created_at": {"type": "string"},
                        "replies": _list(_object({"text": {"type": "string"}, "at": {"type": "string"}})),
                    },
                    {"resolved_at": _WHEN, "resolution": _TEXT},
                )
            ),
            "sessions": _list(
                _object(
                    {
                        "id": {"type": "string"},
                        "project": {"type": "string"},
                        "agent": {"type": "string"},
                        "started_at": {"type": "string"},
                        "prompt_sha256": {"type": "string"},
                        "prompt_status": {"type": "string", "enum": ["kept", "erased", "expired", "missing"]},
                        "prompt": _TEXT,
                    },
                    {"ended_at": _WHEN, "tokens": {"type": "integer"}, "files": {"type": "array"}},
                )
            ),
            "audit": _list(
                _object(
                    {
                        "seq": {"type": ["integer", "null"]},
                        "at": {"type": "string"},
                        "action": {"type": "string"},
                        "actor": {"type": "string"},
                        "object": {"type": "string"},
                    },
                    {"project": _TEXT, "details": {"type": "object"}},
                )
            ),
            "mentions": _list(
                _object(
                    {
                        "id": {"type": "string"},
                        "project": {"type": "string"},
                        "path": {"type": "string"},
                        "revision": {"type": "integer"},
                        "line": {"type": "integer"},
                        "text": {"type": "string"},
                        "found_by": _list({"type": "string"}),
                        "origin": {"oneOf": [_ORIGIN, {"type": "null"}]},
                    },
                    {"in_head": {"type": "boolean"}},
                )
            ),
            "withheld": _object(
                {"name": {"type": "integer"}, "email": {"type": "integer"}, "phone": {"type": "integer"}}
            ),
            "kept_details": _list(_object({"key": {"type": "string"}, "reason": {"type": "string"}})),
            "left_out": {"type": "integer"},
        }
    ),
}
