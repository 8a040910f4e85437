"""Erasure answering a request (erasure, or withdrawal of consent), with the proof Roskomnadzor
Order No. 179 of 28.10.2022 asks for: a destruction act (operator, subject, categories of data,
ground, method, date, who did it) and an extract from the event log for that erasure (the
audit events with their hash-chain fields, so anyone can check them against the chain). Both
as JSON and PDF, in one zip kept 3 years under Object Lock.

The erasure is the console's one erasure (governance.erasure.profile_erase): under a legal
hold it is refused, as everywhere, and the request records the refusal.
"""

from __future__ import annotations

import json

from django.conf import settings
from django.core.exceptions import ValidationError
from django.template.loader import render_to_string
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from projects import outbox
from projects.governance import erasure, pdf, subjects
from projects.governance.subject_package import zipped
from projects.governance.subject_records import document_keep
from projects.memory.errors import Held
from projects.memory.storage import bucket_storage
from projects.models import AuditChain, AuditEvent, SubjectDocument, SubjectRequest

Kind = SubjectRequest.Kind
ACT_SCHEMA = "urn:mgc:destruction-act:1"


def _ground(request: SubjectRequest) -> dict:
    """The ground of the destruction, in the person's language (the act is theirs to read)."""
    with translation.override(request.language):
        return _ground_text(request)


def _ground_text(request: SubjectRequest) -> dict:
    article = next(iter(request.deadlines.values()), {}).get("article", "")
    if request.kind == Kind.WITHDRAWAL:
        code, text = "consent_withdrawn", _("The person withdrew their consent to the processing.")
    elif request.ground == SubjectRequest.Ground.PURPOSE:
        code, text = "purpose_achieved", _("The purpose of the processing was achieved.")
    else:
        code, text = "subject_request", _("The person asked for their data to be destroyed.")
    articles = [v.get("article") for v in request.deadlines.values() if v.get("article")]
    return {"code": code, "text": str(text), "articles": articles or [article]}


def erasure_answer(*, by, request: SubjectRequest) -> SubjectDocument:
    """Erase the person's profile memory where the request reaches and `by` may erase, then
    make and keep the act. Held (recorded on the request) under a legal hold."""
    if request.kind not in (Kind.ERASURE, Kind.WITHDRAWAL):
        raise ValidationError(
            _("Only erasure and withdrawal of consent are answered by an erasure."), code="kind"
        )
    if not request.is_open:
        raise ValidationError(
            _("The request is %(state)s."), code="state", params={"state": request.get_state_display()}
        )
    person = request.user
    if person is None:
        raise ValidationError(
            _("The request names no account: the console holds no profile for them to erase."),
            code="no_account",
        )
    projects = erasure.person_projects(person, by=by)
    if request.project_id:
        projects = [p for p in projects if p.pk == request.project_id]
    if not projects:
        raise ValidationError(
            _(
                "Erasure is done by a project's admin (or a superuser): none of the person's "
                "projects is yours to erase."
            ),
            code="not_allowed",
        )
    before = AuditChain.objects.filter(pk=1).values_list("last_seq", flat=True).first() or 0
    try:
        done = erasure.profile_erase(
            by=by, user=person, reason=f"subject request #{request.pk} ({request.kind})", projects=projects
        )
    except Held as exc:
        subjects.record_held(by=by, request=request, message=exc.message)
        raise
    erased = AuditEvent.objects.filter(seq__gt=before, action="profile.erase", details__user_id=person.pk)
    own = AuditEvent.objects.filter(object_type="subjectrequest", object_id=str(request.pk))
    events = sorted({e.pk: e for e in [*erased, *own]}.values(), key=lambda e: e.seq or 0)
    now, bucket = timezone.now(), projects[0].bucket
    act = {
        "schema": ACT_SCHEMA,
        "operator": settings.MGC_OPERATOR_NAME,
        "number": f"{request.pk}-{now:%Y%m%d}",
        "destroyed_at": now.isoformat(),
        "subject": {"username": person.get_username(), "name": request.name, "email": request.email},
        "request": {
            "id": request.pk,
            "kind": request.kind,
            "law": request.law,
            "received_at": request.received_at.isoformat(),
            "due_on": request.due_on.isoformat(),
        },
        "ground": _ground(request),
        "categories": [
            "profile memory (USER.md): every revision, snapshot and stored version",
            "prompts kept from agent sessions that carried the profile",
            "agents' proposals and reviewers' flags quoting the profile",
            "stored runner answers and unsent events quoting the profile",
        ],
        "information_system": f"Memory Governance Console; S3 bucket {bucket_storage(bucket).bucket_name}",
        "method": "programmatic deletion of every S3 object and stored version, then of the database records",
        "performed_by": {"username": by.get_username(), "name": by.get_full_name()},
        "projects": [
            {
                "project": e.project.slug if e.project else None,
                "files": e.details.get("files"),
                "revisions": e.details.get("revisions"),
                "objects": e.details.get("objects"),
                "prompts": e.details.get("prompts"),
            }
            for e in events
            if e.action == "profile.erase"
        ],
        "totals": {"files": done.files, "revisions": done.revisions, "objects": done.objects},
    }
    extract = {
        "schema": "urn:mgc:audit-extract:1",
        "about": f"erasure for subject request #{request.pk}",
        "events": [outbox.audit_fields(e) for e in events],
    }
    with translation.override(request.language):
        html = render_to_string(
            "projects/subject/act.html",
            {"act": act, "extract": extract, "request": request, "destroyed": now},
        )
    files = {
        "act.json": json.dumps(act, ensure_ascii=False, indent=2).encode("utf-8"),
        "extract.json": json.dumps(extract, ensure_ascii=False, indent=2, default=str).encode("utf-8"),
        "act.html": html.encode("utf-8"),
        "act.pdf": pdf.render(html),
    }
    archive, manifest = zipped(files)
    document = document_keep(
        by=by, request=request, kind=SubjectDocument.Kind.ACT, stem="act", data=archive, manifest=manifest
    )
    subjects.mark_answered(by=by, request=request, document=document.pk)
    return document
