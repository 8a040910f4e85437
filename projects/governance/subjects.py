"""The register of subjects' requests: registering one (its deadline computed by the law it is
answered under), checking identity, extending once, answering, refusing, closing, and the
reminders when one is due soon or overdue. Every step is audited in the step's transaction;
`subject_request.received|due_soon|overdue|closed` go out as webhook events with it.

What answering does depends on the kind: access and copy make the answer package
(subject_package), erasure and withdrawal of consent erase the profile and make the act
(subject_acts), a correction links the revisions that corrected the profile, a restriction
records what was done. The long ones run as background tasks (subject_jobs).
"""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Q
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from projects.audit import Actor, audit_record
from projects.governance import deadlines, permissions
from projects.models import ConsentWithdrawal, Membership, Project, Revision, SubjectRequest

log = logging.getLogger(__name__)

Kind, State = SubjectRequest.Kind, SubjectRequest.State
MAX_TEXT = 4000

_EXTENSION_REFUSALS = {
    "already_extended": gettext_lazy("The deadline was extended once already; the law allows one extension."),
    "not_extendable": gettext_lazy("152-FZ lets only an access or copy request be extended (art. 20(1))."),
    "gdpr_first_month_over": gettext_lazy(
        "GDPR asks for the notice of an extension within the first month (art. 12(3)); that month is over."
    ),
    "deadline_passed": gettext_lazy("The deadline has passed: an extension must be sent before it."),
}


def _details(request: SubjectRequest, **extra) -> dict:
    """What every event about a request carries: no personal data (webhooks get these)."""
    return {
        "request": request.pk,
        "kind": request.kind,
        "law": request.law,
        "state": request.state,
        "due_on": request.due_on.isoformat(),
        "handler": request.handler.get_username() if request.handler_id else None,
        "user_id": request.user_id,
        **extra,
    }


def _record(request: SubjectRequest, *, by, action: str, actor: Actor | None = None, **extra) -> None:
    audit_record(
        actor=actor or Actor.person(by),
        action=action,
        project=request.project,
        obj=request,
        details=_details(request, **extra),
    )


def _deadlines(request: SubjectRequest, *, extended: bool) -> None:
    found = deadlines.deadlines(
        kind=request.kind,
        law=request.law,
        received=timezone.localdate(request.received_at),
        ground=request.ground,
        extended=extended,
    )
    request.due_on = found.due
    request.deadlines = {
        law: {"due": due.isoformat(), "article": found.articles[law]} for law, due in found.by_law.items()
    }


def request_open(
    *,
    by,
    kind: str,
    law: str,
    user=None,
    name: str = "",
    email: str = "",
    phone: str = "",
    project: Project | None = None,
    received_at: dt.datetime | None = None,
    channel: str = SubjectRequest.Channel.CONSOLE,
    handler=None,
    language: str = "",
    details: str = "",
    ground: str = "",
) -> SubjectRequest:
    """Register a request about a person (an account, or a name and e-mail), in a project or
    in the console's register. A withdrawal of consent takes effect at once: agents' writes to
    the profile are refused and the 30-day erasure clock starts."""
    if kind not in Kind.values:
        raise ValidationError(_("Unknown kind of request: %(kind)s."), code="kind", params={"kind": kind})
    if law not in SubjectRequest.Law.values:
        raise ValidationError(_("Unknown law: %(law)s."), code="law", params={"law": law})
    if user is None and not (name.strip() and email.strip()):
        raise ValidationError(
            _("Name the person: their account, or their name and e-mail address."), code="subject"
        )
    asking_for_themselves = (
        user is not None and by.pk == user.pk and channel == SubjectRequest.Channel.CONSOLE
    )
    if not asking_for_themselves and not permissions.can_register_requests(by, project):
        raise ValidationError(_("You may not register requests here."), code="not_allowed")
    if (
        handler is not None
        and project is not None
        and not permissions.can_review(permissions.role_in(handler, project))
    ):
        if not permissions.handles_all_requests(handler):
            raise ValidationError(
                _("The handler must be an admin or compliance officer here."), code="handler"
            )
    if kind == Kind.ERASURE and not ground:
        ground = SubjectRequest.Ground.UNLAWFUL
    received_at = received_at or timezone.now()
    if received_at > timezone.now() + dt.timedelta(minutes=5):
        raise ValidationError(_("A request cannot come in the future."), code="received_at")
    request = SubjectRequest(
        project=project,
        user=user,
        name=(name or (user.get_full_name() if user else "")).strip()[:200],
        email=(email or (user.email if user else "")).strip()[:254],
        phone=phone.strip()[:40],
        kind=kind,
        law=law,
        ground=ground if kind == Kind.ERASURE else "",
        language=language if language in dict(settings.LANGUAGES) else settings.LANGUAGE_CODE,
        received_at=received_at,
        channel=channel,
        details=details.strip()[:MAX_TEXT],
        handler=handler if handler is not None else (None if asking_for_themselves else by),
        created_by=by,
    )
    if asking_for_themselves:  # signed in: the console knows who they are
        request.state, request.identity_checked_at = State.IDENTITY_CHECKED, received_at
        request.identity_note = "signed in to the console"
    _deadlines(request, extended=False)
    with transaction.atomic():
        request.save()
        _record(request, by=by, action="subject_request.open", channel=channel)
        if kind == Kind.WITHDRAWAL and user is not None:
            _withdraw(request, by=by)
    return request


def _withdraw(request: SubjectRequest, *, by) -> ConsentWithdrawal:
    erase_by = timezone.localdate(request.received_at) + dt.timedelta(days=30)  # 152-FZ art. 21(5)
    withdrawal = ConsentWithdrawal.objects.create(
        user=request.user, project=request.project, request=request, erase_by=erase_by
    )
    audit_record(
        actor=Actor.person(by),
        action="consent.withdraw",
        project=request.project,
        obj=request,
        details=_details(request, erase_by=erase_by.isoformat(), everywhere=request.project_id is None),
    )
    return withdrawal


def consent_restore(*, by, user, project: Project | None = None) -> int:
    """The person gave their consent again: agents may write their profile again."""
    with transaction.atomic():
        standing = ConsentWithdrawal.objects.select_for_update().filter(
            user=user, restored_at__isnull=True, project=project
        )
        count = standing.update(restored_at=timezone.now())
        if count:
            audit_record(
                actor=Actor.person(by),
                action="consent.restore",
                project=project,
                obj=user,
                details={"user_id": user.pk, "user": user.get_username()},
            )
    return count


def _locked(request: SubjectRequest) -> SubjectRequest:
    return (
        SubjectRequest.objects.select_for_update(of=("self",))
        .select_related("project", "user", "handler")
        .get(pk=request.pk)
    )


def _require_open(request: SubjectRequest) -> None:
    if not request.is_open:
        raise ValidationError(
            _("The request is %(state)s already."),
            code="not_open",
            params={"state": request.get_state_display()},
        )


def identity_check(*, by, request: SubjectRequest, note: str) -> SubjectRequest:
    note = (note or "").strip()
    if not note:
        raise ValidationError(_("Say how the identity was checked."), code="identity_note")
    with transaction.atomic():
        locked = _locked(request)
        _require_open(locked)
        locked.identity_checked_at, locked.identity_note = timezone.now(), note[:500]
        if locked.state == State.RECEIVED:
            locked.state = State.IDENTITY_CHECKED
        locked.save()
        _record(locked, by=by, action="subject_request.identity", note=locked.identity_note)
    return locked


def request_extend(
    *, by, request: SubjectRequest, reason: str, today: dt.date | None = None
) -> SubjectRequest:
    """Extend the deadline once, as the law allows, recording the reasoned notice."""
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError(
            _("Write the reasoned notice the person is sent (the law asks for the reasons)."), code="reason"
        )
    today = today or timezone.localdate()
    with transaction.atomic():
        locked = _locked(request)
        _require_open(locked)
        refusal = deadlines.extension_refusal(
            kind=locked.kind,
            law=locked.law,
            received=timezone.localdate(locked.received_at),
            today=today,
            already=locked.extended_at is not None,
        )
        if refusal:
            raise ValidationError(str(_EXTENSION_REFUSALS[refusal]), code=refusal)
        before = locked.due_on
        locked.extended_at, locked.extension_reason = timezone.now(), reason[:MAX_TEXT]
        locked.state = State.EXTENDED
        _deadlines(locked, extended=True)
        locked.due_soon_sent_at = locked.overdue_sent_at = None  # the new date gets its own reminders
        locked.save()
        _record(
            locked,
            by=by,
            action="subject_request.extend",
            previous_due_on=before.isoformat(),
            reason=reason[:500],
        )
    return locked


def request_assign(*, by, request: SubjectRequest, handler) -> SubjectRequest:
    if handler is not None and not permissions.can_handle_request(handler, request):
        raise ValidationError(_("The handler must be an admin or compliance officer here."), code="handler")
    with transaction.atomic():
        locked = _locked(request)
        locked.handler = handler
        locked.save(update_fields=["handler"])
        _record(locked, by=by, action="subject_request.assign")
    return locked


def request_refuse(*, by, request: SubjectRequest, ground: str) -> SubjectRequest:
    ground = (ground or "").strip()
    if not ground:
        raise ValidationError(_("Give the ground for the refusal (the person is told it)."), code="ground")
    with transaction.atomic():
        locked = _locked(request)
        _require_open(locked)
        locked.state, locked.refusal_ground, locked.answered_at = (
            State.REFUSED,
            ground[:MAX_TEXT],
            timezone.now(),
        )
        locked.save()
        _record(locked, by=by, action="subject_request.refuse", ground=ground[:500])
    return locked


def mark_answered(*, by, request: SubjectRequest, note: str = "", **extra) -> SubjectRequest:
    """The request is answered (the package went, the act was made, the correction saved...)."""
    with transaction.atomic():
        locked = _locked(request)
        _require_open(locked)
        locked.state, locked.answered_at = State.ANSWERED, timezone.now()
        if note:
            locked.answer_note = note.strip()[:MAX_TEXT]
        locked.blocked_note = ""
        locked.save()
        _record(
            locked,
            by=by,
            action="subject_request.answer",
            on_time=locked.answered_at.date() <= locked.due_on,
            **extra,
        )
    return locked


def request_answer_note(*, by, request: SubjectRequest, note: str) -> SubjectRequest:
    """Answer a restriction or objection (or a correction) by saying what was done."""
    if not (note or "").strip():
        raise ValidationError(_("Say what was done; the person is told."), code="note")
    if request.kind == Kind.CORRECTION and not request.revisions.exists():
        raise ValidationError(
            _("No correction is linked yet: correct the profile from the request first."),
            code="no_correction",
        )
    if request.kind in (Kind.ACCESS, Kind.COPY, Kind.ERASURE, Kind.WITHDRAWAL):
        raise ValidationError(_("This kind of request is answered by its package or its act."), code="kind")
    return mark_answered(by=by, request=request, note=note)


def correction_link(*, by, request: SubjectRequest, revision: Revision) -> None:
    """A revision saved from the request's correction link answers it."""
    if revision.file.user_id != request.user_id:
        raise ValidationError(_("That revision is not of the person's profile."), code="not_theirs")
    with transaction.atomic():
        locked = _locked(request)
        locked.revisions.add(revision)
        _record(
            locked,
            by=by,
            action="subject_request.link",
            revision=revision.number,
            file=str(revision.file_id),
            project_slug=revision.file.project.slug,
        )


def request_close(*, by, request: SubjectRequest, note: str = "") -> SubjectRequest:
    with transaction.atomic():
        locked = _locked(request)
        if locked.state == State.CLOSED:
            return locked
        if locked.state not in (State.ANSWERED, State.REFUSED):
            raise ValidationError(_("Answer or refuse the request before closing it."), code="not_answered")
        locked.state, locked.closed_at = State.CLOSED, timezone.now()
        locked.save()
        _record(locked, by=by, action="subject_request.close", note=(note or "")[:500])
    return locked


def record_held(*, by, request: SubjectRequest, message: str) -> None:
    """An erasure the request asked for was refused under a legal hold: the request says so."""
    with transaction.atomic():
        locked = _locked(request)
        locked.blocked_note = message[:500]
        locked.save(update_fields=["blocked_note"])
        _record(locked, by=by, action="subject_request.held", hold=message[:500])


# --- Reminders ------------------------------------------------------------------------------------


def reminders_send(*, now: dt.datetime | None = None) -> dict:
    """Send each open request's due-soon reminder and its overdue reminder, once each: the
    claim is a conditional UPDATE, so two runs at once (two workers, a worker and the
    command) send one. Each is an audit event (and its webhook event) in the claim's
    transaction; the handler's mail goes after the commit. Returns how many of each went."""
    now = now or timezone.now()
    today = timezone.localdate(now)
    soon = today + dt.timedelta(days=settings.MGC_SUBJECT_DUE_SOON_DAYS)
    open_states = list(SubjectRequest.OPEN_STATES)
    sent = {"due_soon": 0, "overdue": 0}
    candidates = SubjectRequest.objects.filter(state__in=open_states)
    for pk in candidates.filter(overdue_sent_at__isnull=True, due_on__lt=today).values_list("pk", flat=True):
        sent["overdue"] += _remind(pk, "overdue", now, today)
    for pk in candidates.filter(
        due_soon_sent_at__isnull=True, due_on__gte=today, due_on__lte=soon
    ).values_list("pk", flat=True):
        sent["due_soon"] += _remind(pk, "due_soon", now, today)
    return sent


def _remind(pk: int, which: str, now: dt.datetime, today: dt.date) -> int:
    field = f"{which}_sent_at"
    with transaction.atomic():
        claimed = SubjectRequest.objects.filter(
            pk=pk, state__in=list(SubjectRequest.OPEN_STATES), **{f"{field}__isnull": True}
        ).update(**{field: now})
        if not claimed:
            return 0
        request = SubjectRequest.objects.select_related("project", "user", "handler").get(pk=pk)
        days = (request.due_on - today).days
        _record(
            request, by=None, action=f"subject_request.{which}", actor=Actor.system("reminders"), days=days
        )
        transaction.on_commit(lambda: _mail(request, which))
    return 1


def handlers_of(request: SubjectRequest) -> list:
    """Who is reminded: its handler, else everyone who may handle it."""
    if request.handler_id and request.handler.is_active:
        return [request.handler]
    people = get_user_model().objects.filter(is_active=True)
    if request.project_id:
        people = people.filter(
            Q(is_superuser=True)
            | Q(
                memberships__project_id=request.project_id,
                memberships__role__in=[Membership.Role.ADMIN, Membership.Role.COMPLIANCE],
            )
        )
    else:
        people = people.filter(is_superuser=True)
    return list(people.distinct())


def _mail(request: SubjectRequest, which: str) -> int:
    if not settings.MGC_SENDS_EMAIL:
        return 0
    addresses = sorted({p.email for p in handlers_of(request) if p.email})
    if not addresses:
        return 0
    with translation.override(settings.LANGUAGE_CODE):
        values = {"id": request.pk, "kind": request.get_kind_display(), "due": request.due_on.isoformat()}
        if which == "due_soon":
            subject = _("Subject request #%(id)s is due on %(due)s") % values
            body = (
                _(
                    "The %(kind)s request #%(id)s is due on %(due)s and is not answered yet. "
                    "Answer it, or extend it as the law allows, before then."
                )
                % values
            )
        else:
            subject = _("Subject request #%(id)s is overdue") % values
            body = (
                _(
                    "The %(kind)s request #%(id)s was due on %(due)s and is not answered. Answer it now; "
                    "the delay is in its record."
                )
                % values
            )
    try:
        return send_mail(subject, body, None, addresses)
    except OSError:
        log.warning("could not mail the %s reminder of subject request %s", which, request.pk)
        return 0


def requests_of(user, *, state: str = "", kind: str = "", project: Project | None = None):
    """The requests a person may see, optionally of one state (or "open"), kind or project,
    by due date."""
    found = permissions.visible_requests(user).select_related("project", "user", "handler")
    if project is not None:
        found = found.filter(project=project)
    if state == "open":
        found = found.filter(state__in=list(SubjectRequest.OPEN_STATES))
    elif state:
        found = found.filter(state=state)
    if kind:
        found = found.filter(kind=kind)
    return found.order_by("due_on", "pk")


def request_summary(request: SubjectRequest) -> dict:
    """A request as the command's --json prints it (and a receiver could read it)."""
    return {
        "id": request.pk,
        "kind": request.kind,
        "law": request.law,
        "state": request.state,
        "project": request.project.slug if request.project_id else None,
        "subject": {
            "username": request.user.get_username() if request.user_id else None,
            "name": request.name,
            "email": request.email,
        },
        "received_at": request.received_at.isoformat(),
        "channel": request.channel,
        "language": request.language,
        "due_on": request.due_on.isoformat(),
        "deadlines": request.deadlines,
        "handler": request.handler.get_username() if request.handler_id else None,
        "identity_checked_at": request.identity_checked_at.isoformat()
        if request.identity_checked_at
        else None,
        "extended_at": request.extended_at.isoformat() if request.extended_at else None,
        "extension_reason": request.extension_reason or None,
        "refusal_ground": request.refusal_ground or None,
        "answered_at": request.answered_at.isoformat() if request.answered_at else None,
        "closed_at": request.closed_at.isoformat() if request.closed_at else None,
        "blocked": request.blocked_note or None,
        "documents": [
            {
                "id": d.pk,
                "kind": d.kind,
                "key": d.key,
                "sha256": d.sha256,
                "size": d.size,
                "lock": d.lock_mode or None,
                "retain_until": d.retain_until.isoformat() if d.retain_until else None,
            }
            for d in request.documents.all()
        ],
    }
