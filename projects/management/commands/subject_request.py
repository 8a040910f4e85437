"""manage.py subject_request open|list|show|identity|extend|answer|refuse|close|remind: the
register of subjects' requests from the command line (the same functions as the console's
pages). --json prints what a program reads."""

import datetime as dt
import json

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from projects.governance import subject_acts, subject_package, subject_records, subjects
from projects.memory.errors import Held, StoreError
from projects.models import Project, SubjectRequest

Kind = SubjectRequest.Kind


class Command(BaseCommand):
    help = (
        "Subjects' requests (152-FZ, GDPR): open one (its deadline is computed), list them by due date, "
        "check identity, extend once, answer (access and copy: the package; erasure and withdrawal: "
        "the erasure and its act), refuse, close; remind sends the due-soon and overdue reminders "
        "once each (the events worker does it every MGC_SUBJECT_REMIND_SECONDS)."
    )

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        opened = sub.add_parser("open", help="Register a request.")
        opened.add_argument("--user", help="The person's username (or --name and --email).")
        opened.add_argument("--name", default="")
        opened.add_argument("--email", default="")
        opened.add_argument("--phone", default="", help="A phone number of theirs to search for.")
        opened.add_argument("--kind", required=True, choices=Kind.values)
        opened.add_argument("--law", required=True, choices=SubjectRequest.Law.values)
        opened.add_argument("--ground", default="", choices=["", *SubjectRequest.Ground.values])
        opened.add_argument("--project", help="Handle it in this project (default: the console's register).")
        opened.add_argument("--received", help="When it came in (ISO date or date-time; default: now).")
        opened.add_argument("--channel", default="email", choices=SubjectRequest.Channel.values)
        opened.add_argument("--language", default="", help="en or ru: the answer's language.")
        opened.add_argument("--details", default="")
        opened.add_argument("--handler", help="Who handles it (default: who runs this).")
        listed = sub.add_parser("list", help="Requests by due date.")
        listed.add_argument("--state", default="open", help="open (default), all, or a state.")
        shown = sub.add_parser("show", help="One request.")
        shown.add_argument("id", type=int)
        checked = sub.add_parser("identity", help="Record that the person's identity was checked.")
        checked.add_argument("id", type=int)
        checked.add_argument("--note", required=True, help="How it was checked.")
        extended = sub.add_parser("extend", help="Extend the deadline once, with the reasoned notice.")
        extended.add_argument("id", type=int)
        extended.add_argument("--reason", required=True)
        answered = sub.add_parser("answer", help="Answer: the package, the erasure and its act, or a note.")
        answered.add_argument("id", type=int)
        answered.add_argument("--out", help="Write the package (or the act) here.")
        answered.add_argument("--note", default="", help="Correction, restriction: what was done.")
        refused = sub.add_parser("refuse", help="Refuse, with the ground.")
        refused.add_argument("id", type=int)
        refused.add_argument("--ground", required=True)
        closed = sub.add_parser("close", help="Close an answered or refused request.")
        closed.add_argument("id", type=int)
        closed.add_argument("--note", default="")
        sub.add_parser("remind", help="Send due-soon and overdue reminders (once each).")
        for each in sub.choices.values():
            each.add_argument("--by", default="", help="Who acts (a superuser by default).")
            each.add_argument("--json", action="store_true", help="Print JSON.")

    def handle(self, *args, action, by="", json=False, **options):
        self.as_json = json
        try:
            getattr(self, f"_{action}")(self._actor(by), **options)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from exc
        except Held as exc:
            raise CommandError(f"{exc.message} The request records it.") from exc
        except StoreError as exc:
            raise CommandError(f"{exc.message} Run it again to finish.") from exc

    def _actor(self, username: str):
        users = get_user_model().objects
        actor = (
            users.filter(username=username).first()
            if username
            else users.filter(is_superuser=True).order_by("pk").first()
        )
        if actor is None:
            raise CommandError("Name who acts with --by (no superuser exists).")
        return actor

    def _request(self, by, pk: int) -> SubjectRequest:
        request = subjects.requests_of(by).filter(pk=pk).first()
        if request is None:
            raise CommandError(f"No request #{pk} that {by.get_username()} may see.")
        return request

    def _print(self, request: SubjectRequest, line: str) -> None:
        if self.as_json:
            request.refresh_from_db()
            self.stdout.write(json.dumps(subjects.request_summary(request), ensure_ascii=False, indent=2))
        else:
            self.stdout.write(line)

    def _open(self, by, *, user=None, project=None, received=None, handler=None, **fields):
        users = get_user_model().objects
        person = None
        if user:
            person = users.filter(username=user).first()
            if person is None:
                raise CommandError(f"No user {user!r}.")
        where = None
        if project:
            where = Project.objects.filter(slug=project).first()
            if where is None:
                raise CommandError(f"No project {project!r}.")
        who = None
        if handler:
            who = users.filter(username=handler).first()
            if who is None:
                raise CommandError(f"No user {handler!r}.")
        request = subjects.request_open(
            by=by,
            user=person,
            project=where,
            received_at=_moment(received) if received else None,
            handler=who,
            **{
                k: fields[k]
                for k in ("name", "email", "phone", "kind", "law", "ground", "channel", "language", "details")
            },
        )
        self._print(request, f"request #{request.pk}: {request.kind} ({request.law}), due {request.due_on}")

    def _list(self, by, *, state="open", **options):
        found = list(
            subjects.requests_of(by, state="" if state == "all" else state).prefetch_related("documents")
        )
        if self.as_json:
            self.stdout.write(
                json.dumps([subjects.request_summary(r) for r in found], ensure_ascii=False, indent=2)
            )
            return
        today = timezone.localdate()
        for r in found:
            late = " OVERDUE" if r.is_open and r.due_on < today else ""
            self.stdout.write(f"#{r.pk}\t{r.due_on}{late}\t{r.state}\t{r.kind}\t{r.law}\t{r.subject_label}")

    def _show(self, by, *, id, **options):
        request = self._request(by, id)
        self._print(request, json.dumps(subjects.request_summary(request), ensure_ascii=False, indent=2))

    def _identity(self, by, *, id, note, **options):
        request = subjects.identity_check(by=by, request=self._request(by, id), note=note)
        self._print(request, f"request #{request.pk}: identity checked")

    def _extend(self, by, *, id, reason, **options):
        request = subjects.request_extend(by=by, request=self._request(by, id), reason=reason)
        self._print(request, f"request #{request.pk}: extended, due {request.due_on}")

    def _answer(self, by, *, id, out=None, note="", **options):
        request = self._request(by, id)
        if request.kind in (Kind.ACCESS, Kind.COPY):
            document = subject_package.package_build(by=by, request=request)
        elif request.kind in (Kind.ERASURE, Kind.WITHDRAWAL):
            document = subject_acts.erasure_answer(by=by, request=request)
        else:
            subjects.request_answer_note(by=by, request=request, note=note)
            self._print(request, f"request #{request.pk}: answered")
            return
        if out:
            with open(out, "wb") as target:
                target.write(subject_records.document_read(by=by, document=document))
        where = f", written to {out}" if out else ""
        self._print(
            request, f"request #{request.pk}: answered with {document.key} (sha256 {document.sha256}){where}"
        )

    def _refuse(self, by, *, id, ground, **options):
        request = subjects.request_refuse(by=by, request=self._request(by, id), ground=ground)
        self._print(request, f"request #{request.pk}: refused")

    def _close(self, by, *, id, note="", **options):
        request = subjects.request_close(by=by, request=self._request(by, id), note=note)
        self._print(request, f"request #{request.pk}: closed")

    def _remind(self, by, **options):
        sent = subjects.reminders_send()
        if self.as_json:
            self.stdout.write(json.dumps(sent))
        else:
            self.stdout.write(f"reminders sent: due soon {sent['due_soon']}, overdue {sent['overdue']}")


def _moment(value: str) -> dt.datetime:
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        raise CommandError(f"--received: not an ISO date or date-time: {value!r}") from None
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    return moment
