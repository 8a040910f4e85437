"""The answer to an access or copy request (GDPR art. 15(3) and 20; 152-FZ art. 14): one zip
kept under Object Lock for the request's record, and given to the person.

    answer.json    everything held, machine-readable (schema.json: its JSON Schema)
    schema.json
    memory/<project>/USER.md                 the profile as it stands
    memory/<project>/history/USER.md/r<N>.md every revision of it whose text is kept
    answer.html    the same, for people, in the person's language
    answer.pdf     rendered by WeasyPrint from answer.html
    manifest.json  every file above with its size and sha256

Other people's names, e-mail addresses and phone numbers are withheld in every text the
package carries (governance.redaction), unless the handler kept one with a reason; mentions
the handler left out are not in it (their count is).
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile

from django.conf import settings
from django.core.exceptions import ValidationError
from django.template.loader import render_to_string
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from projects.governance import pdf, subject_schema, subject_traces, subjects
from projects.governance.redaction import redact
from projects.governance.subject_records import document_keep
from projects.memory.errors import StorageUnavailable
from projects.models import SubjectDocument, SubjectRequest

Kind = SubjectRequest.Kind


class _Withholding:
    """Redacts every text the package carries and counts what it withheld."""

    def __init__(self, found: subject_traces.Traces, keep: dict):
        self.subject, self.others, self.keep = found.subject, found.others, frozenset(keep)
        self.counts = {"name": 0, "email": 0, "phone": 0}

    def __call__(self, text):
        if not text:
            return text
        cleaned, withheld = redact(text, subject=self.subject, others=self.others, keep=self.keep)
        for hit in withheld:
            self.counts[hit.kind] += 1
        return cleaned

    def deep(self, value):
        if isinstance(value, str):
            return self(value)
        if isinstance(value, dict):
            return {k: self.deep(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.deep(v) for v in value]
        return value


def _when(value) -> str | None:
    return value.isoformat() if value else None


def answer_data(request: SubjectRequest, found: subject_traces.Traces) -> tuple[dict, dict[str, bytes]]:
    """answer.json's content and the Markdown files, as the selection on the request says."""
    selection = request.selection or {}
    excluded = set(selection.get("excluded", []))
    keep = selection.get("keep", {}) or {}
    clean = _Withholding(found, keep)
    user = request.user
    files: dict[str, bytes] = {}
    profiles = []
    for profile in found.profiles:
        base = f"memory/{profile.project.slug}"
        head = profile.file.head
        revisions = []
        for revision in profile.revisions:
            text = profile.texts.get(revision.number)
            name = None
            if text is not None and not revision.is_deletion:
                name = f"{base}/history/USER.md/r{revision.number}.md"
                files[name] = clean(text).encode("utf-8")
            revisions.append(
                {
                    "number": revision.number,
                    "created_at": revision.created_at.isoformat(),
                    "author": _author(revision.author_label, revision.author_user_id, user),
                    "author_kind": revision.author_kind,
                    "message": clean(revision.display_message),
                    "sha256": revision.sha256,
                    "deletion": revision.is_deletion,
                    "file": name,
                    "text_gone": text is None and not revision.is_deletion,
                }
            )
        current = None
        if head is not None and not head.is_deletion and profile.texts.get(head.number) is not None:
            current = f"{base}/USER.md"
            files[current] = clean(profile.texts[head.number]).encode("utf-8")
        profiles.append(
            {
                "project": profile.project.slug,
                "path": profile.file.display_path,
                "file": current,
                "revisions": revisions,
            }
        )
    prompt_status = {}
    for session in found.sessions:
        if session.pk in found.prompts and found.prompts[session.pk] is not None:
            prompt_status[session.pk] = "kept"
        elif session.prompt_removed:
            prompt_status[session.pk] = (
                "erased" if session.prompt_removed.get("how") == "erased" else "expired"
            )
        else:
            prompt_status[session.pk] = "missing"
    mentions = [m for m in found.mentions if m.id not in excluded]
    data = {
        "schema": subject_schema.ID,
        "operator": settings.MGC_OPERATOR_NAME,
        "generated_at": timezone.now().isoformat(),
        "language": request.language,
        "request": {
            "id": request.pk,
            "kind": request.kind,
            "law": request.law,
            "received_at": request.received_at.isoformat(),
            "due_on": request.due_on.isoformat(),
            "deadlines": request.deadlines,
        },
        "subject": {
            "username": user.get_username() if user else "",
            "name": request.name or (user.get_full_name() if user else ""),
            "email": request.email,
        },
        "projects": [{"slug": p.slug, "name": p.name} for p in found.projects],
        "profiles": profiles,
        "proposals": [
            {
                "id": p.pk,
                "project": p.project.slug,
                "agent": p.agent.slug,
                "mode": p.mode,
                "status": p.status,
                "created_at": p.created_at.isoformat(),
                "decided_at": _when(p.decided_at),
                "decided_by_you": bool(user and p.decided_by_id == user.pk),
                "note": clean(p.decision_note),
                "content": clean(p.content),
            }
            for p in found.proposals
        ],
        "consent": {
            "decisions": [
                {
                    "proposal": p.pk,
                    "decision": p.status,
                    "at": _when(p.decided_at),
                    "note": clean(p.decision_note),
                }
                for p in found.decisions
            ],
            "withdrawals": [
                {
                    "project": w.project.slug if w.project_id else None,
                    "withdrawn_at": w.withdrawn_at.isoformat(),
                    "erase_by": w.erase_by.isoformat(),
                    "restored_at": _when(w.restored_at),
                }
                for w in found.withdrawals
            ],
        },
        "flags": [
            {
                "project": f.project.slug,
                "path": f.file.display_path,
                "revision": f.revision.number,
                "comment": clean(f.comment),
                "created_at": f.created_at.isoformat(),
                "resolved_at": _when(f.resolved_at),
                "resolution": clean(f.resolution_note),
                "replies": [{"text": clean(r.text), "at": r.created_at.isoformat()} for r in f.replies.all()],
            }
            for f in found.flags
        ],
        "sessions": [
            {
                "id": str(s.pk),
                "project": s.agent.project.slug,
                "agent": s.agent.slug,
                "started_at": s.created_at.isoformat(),
                "ended_at": _when(s.ended_at),
                "tokens": s.total_tokens,
                "prompt_sha256": s.prompt_sha256,
                "prompt_status": prompt_status[s.pk],
                "prompt": clean(found.prompts.get(s.pk)),
                "files": [
                    {"path": f.get("path"), "revision": f.get("revision")}
                    for section in (s.receipt or [])
                    if isinstance(section, dict)
                    for f in section.get("files", [])
                    if isinstance(f, dict)
                ],
            }
            for s in found.sessions
        ],
        "audit": [
            {
                "seq": e.seq,
                "at": e.created_at.isoformat(),
                "project": e.project.slug if e.project_id and e.project else None,
                "action": e.action,
                "actor": _author(e.actor_label, e.actor_user_id, user, agent=bool(e.actor_agent_id)),
                "object": clean(e.object_shown),
                "details": clean.deep(e.details or {}),
            }
            for e in found.audit
        ],
        "mentions": [_mention(m, clean, user) for m in mentions],
        "left_out": len(found.mentions) - len(mentions),
        "kept_details": [{"key": key, "reason": reason} for key, reason in sorted(keep.items())],
    }
    data["withheld"] = dict(clean.counts)
    return data, files


def _mention(mention, clean, user) -> dict:
    """A mention as the person reads it: others withheld in its line and as its author."""
    data = dict(mention.as_dict(), text=clean(mention.text))
    if data["origin"]:
        origin = dict(data["origin"])
        person = origin["author_kind"] == "person"
        own = user is not None and origin["author"] == user.get_username()
        if person and not own:
            origin["author"] = str(_("a member of staff"))
        data["origin"] = origin
    return data


def _author(label: str, author_id, user, *, agent: bool = False) -> str:
    """An author as the person reads it: themselves, an agent or the console by its label,
    another person withheld (their name is theirs)."""
    if user is not None and author_id == user.pk and not agent:
        return user.get_username()
    if agent or label.startswith(("agent:", "system:", "external")):
        return label
    return str(_("a member of staff")) if author_id or label else label


def package_build(*, by, request: SubjectRequest) -> SubjectDocument:
    """Find everything, make the package, keep it under Object Lock, and mark the request
    answered. Refused (nothing kept) when storage could not give every text."""
    if request.kind not in (Kind.ACCESS, Kind.COPY):
        raise ValidationError(_("Only access and copy requests are answered with a package."), code="kind")
    if not request.is_open and request.state != SubjectRequest.State.ANSWERED:
        raise ValidationError(
            _("The request is %(state)s."), code="state", params={"state": request.get_state_display()}
        )
    found = subject_traces.traces(request, by=by, texts=True)
    if found.problems:
        raise StorageUnavailable(
            _("Storage did not give every text (%(what)s); no package was made. Try again.")
            % {"what": "; ".join(found.problems[:3])}
        )
    with translation.override(request.language):
        data, files = answer_data(request, found)
        texts = [
            (f"{p['project']}: {p['path']}", files[p["file"]].decode()) for p in data["profiles"] if p["file"]
        ]
        html = render_to_string(
            "projects/subject/answer.html",
            {
                "answer": data,
                "request": request,
                "profile_texts": texts,
                "project_names": ", ".join(p.name for p in found.projects),
                "generated": timezone.now(),
            },
        )
    files["answer.json"] = json.dumps(data, ensure_ascii=False, indent=2).encode("utf-8")
    files["schema.json"] = json.dumps(subject_schema.SCHEMA, ensure_ascii=False, indent=2).encode("utf-8")
    files["answer.html"] = html.encode("utf-8")
    files["answer.pdf"] = pdf.render(html)
    archive, manifest = zipped(files)
    document = document_keep(
        by=by,
        request=request,
        kind=SubjectDocument.Kind.PACKAGE,
        stem="answer",
        data=archive,
        manifest=manifest,
    )
    if request.is_open:
        subjects.mark_answered(by=by, request=request, document=document.pk)
    return document


def zipped(files: dict[str, bytes]) -> tuple[bytes, dict]:
    """A zip of the files plus manifest.json (each file's size and sha256), and the manifest.
    Fixed timestamps: the same files make the same bytes."""
    manifest = {
        "files": [
            {"path": name, "size": len(body), "sha256": hashlib.sha256(body).hexdigest()}
            for name, body in sorted(files.items())
        ]
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, body in [
            *sorted(files.items()),
            ("manifest.json", json.dumps(manifest, indent=2).encode()),
        ]:
            info = zipfile.ZipInfo(name, date_time=(2000, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, body)
    return out.getvalue(), manifest
