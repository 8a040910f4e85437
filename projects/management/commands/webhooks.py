"""Webhooks and audit streams from the command line: the same services as the project's
Webhooks page, audited (as the account named with --by, else the console).

    webhooks add --project SLUG --url URL --events a,b [--include-content]   # prints the secret once
    webhooks add --kind audit --url URL [--project SLUG] [--header "Authorization: Splunk T"]
    webhooks list [--project SLUG]
    webhooks test ID               # one signed webhook.test event now; prints the answer
    webhooks remove ID
    webhooks rotate ID [--overlap-hours H]                                   # prints the new secret
    webhooks enable ID | disable ID [--reason TEXT]
    webhooks log ID [--limit N]    # the delivery log
    webhooks redeliver ID EVENT_ID
    webhooks check-url URL         # allowed or refused, and why; resolves the host, sends nothing
"""

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from projects import outbox
from projects.events import delivery, subscriptions, targets
from projects.models import DeliveryAttempt, OutboxEvent, Project, WebhookSubscription


class Command(BaseCommand):
    help = (
        "Add, list, test, remove, rotate, enable or disable webhooks and audit streams; read "
        "their delivery log; redeliver an event."
    )

    def add_arguments(self, parser):
        parser.add_argument("--by", help="the admin's username recorded in the audit trail")
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add", help="a new webhook or audit stream (prints its secret once)")
        add.add_argument(
            "--project",
            help="the project's slug (an audit stream without one receives every project's events)",
        )
        add.add_argument("--url", required=True)
        add.add_argument(
            "--events", default="", help="comma-separated event types: " + ", ".join(outbox.EVENT_TYPES)
        )
        add.add_argument(
            "--include-content",
            action="store_true",
            help="send revision and proposal texts too (they may be personal data)",
        )
        add.add_argument(
            "--kind", choices=WebhookSubscription.Kind.values, default=WebhookSubscription.Kind.WEBHOOK
        )
        add.add_argument(
            "--header",
            action="append",
            default=[],
            metavar="'NAME: VALUE'",
            help="an extra header (repeatable), e.g. 'Authorization: Splunk <token>'",
        )
        add.add_argument("--description", default="")
        listing = sub.add_parser("list", help="subscriptions, with their state")
        listing.add_argument("--project")
        for name in ("remove", "test", "enable"):
            sub.add_parser(name).add_argument("id", type=int)
        disable = sub.add_parser("disable")
        disable.add_argument("id", type=int)
        disable.add_argument("--reason", default="")
        rotate = sub.add_parser("rotate", help="a new secret; the old one signs too for a while")
        rotate.add_argument("id", type=int)
        rotate.add_argument("--overlap-hours", type=float)
        log = sub.add_parser("log", help="the delivery log: events and attempts")
        log.add_argument("id", type=int)
        log.add_argument("--limit", type=int, default=20)
        redeliver = sub.add_parser("redeliver", help="send an event again (same webhook-id)")
        redeliver.add_argument("id", type=int)
        redeliver.add_argument("event_id")
        check = sub.add_parser(
            "check-url",
            help="would the console send to this URL? Resolves its host, connects to nothing",
        )
        check.add_argument("url")

    def handle(self, *args, action, by=None, **options):
        admin = get_user_model().objects.filter(username=by).first() if by else None
        if by and admin is None:
            raise CommandError(f"No account {by}.")
        try:
            getattr(self, f"_{action.replace('-', '_')}")(admin, **options)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None

    def _subscription(self, pk: int) -> WebhookSubscription:
        found = WebhookSubscription.objects.select_related("project").filter(pk=pk).first()
        if found is None:
            raise CommandError(f"No webhook {pk}.")
        return found

    def _add(self, admin, *, project, url, events, include_content, kind, header, description, **_):
        found = None
        if project:
            found = Project.objects.filter(slug=project).first()
            if found is None:
                raise CommandError(f"No project {project}.")
        elif kind == WebhookSubscription.Kind.WEBHOOK:
            raise CommandError("A webhook needs --project.")
        subscription, secret = subscriptions.webhook_create(
            by=admin,
            project=found,
            url=url,
            events=events,
            include_content=include_content,
            kind=kind,
            headers="\n".join(header),
            description=description,
        )
        self.stdout.write(f"webhook {subscription.pk}: {subscription.kind} to {subscription.url}")
        if subscription.events:
            self.stdout.write(
                f"events: {', '.join(subscription.events)}"
                + (" (with content)" if subscription.include_content else "")
            )
        self.stdout.write(f"signing secret (shown once; keep it with the receiver): {secret}")

    def _list(self, admin, *, project=None, **_):
        found = WebhookSubscription.objects.select_related("project").filter(removed_at__isnull=True)
        if project:
            found = found.filter(project__slug=project)
        for s in found.order_by("pk"):
            state = f"disabled: {s.disabled_reason}" if s.disabled_at else "enabled"
            what = ",".join(s.events) if s.kind == WebhookSubscription.Kind.WEBHOOK else "every audit event"
            self.stdout.write(
                f"{s.pk}\t{s.project.slug if s.project else '*'}\t{s.kind}\t{s.url}\t"
                f"{what}{' +content' if s.include_content else ''}\t{state}"
            )

    def _remove(self, admin, *, id, **_):  # noqa: A002
        cancelled = subscriptions.webhook_remove(by=admin, subscription=self._subscription(id))
        self.stdout.write(f"webhook {id} removed; {cancelled} waiting event(s) cancelled")

    def _test(self, admin, *, id, **_):  # noqa: A002
        subscription = self._subscription(id)
        if not subscription.active:
            raise CommandError(f"Webhook {id} is disabled or removed.")
        event = subscriptions.webhook_test(by=admin, subscription=subscription, queue=False)
        outcome = delivery.deliver(event.pk)
        attempt = DeliveryAttempt.objects.filter(event=event).first()
        answer = (
            f"HTTP {attempt.status_code}"
            if attempt and attempt.status_code
            else (attempt.error if attempt else "not sent")
        )
        self.stdout.write(f"{event.event_id}: {outcome} ({answer})")
        if attempt and attempt.response_excerpt:
            self.stdout.write(attempt.response_excerpt)
        if outcome != "delivered":
            raise CommandError("The test event was not delivered.")

    def _rotate(self, admin, *, id, overlap_hours=None, **_):  # noqa: A002
        subscription = self._subscription(id)
        secret = subscriptions.webhook_rotate(
            by=admin, subscription=subscription, overlap_hours=overlap_hours
        )
        subscription.refresh_from_db()
        self.stdout.write(f"new signing secret (shown once): {secret}")
        until = subscription.previous_secret_until
        self.stdout.write(f"the old one signs too until {until:%Y-%m-%d %H:%M %Z}")

    def _enable(self, admin, *, id, **_):  # noqa: A002
        subscriptions.webhook_set_enabled(by=admin, subscription=self._subscription(id), enabled=True)
        self.stdout.write(f"webhook {id} enabled")

    def _disable(self, admin, *, id, reason="", **_):  # noqa: A002
        subscriptions.webhook_set_enabled(
            by=admin, subscription=self._subscription(id), enabled=False, reason=reason
        )
        self.stdout.write(f"webhook {id} disabled")

    def _log(self, admin, *, id, limit=20, **_):  # noqa: A002
        subscription = self._subscription(id)
        for event in OutboxEvent.objects.filter(subscription=subscription).order_by("-id")[:limit]:
            self.stdout.write(
                f"{event.created_at:%Y-%m-%d %H:%M:%S} {event.event_id} {event.type} "
                f"{event.state} attempts={event.attempts}"
            )
            for a in event.log.order_by("number"):
                answer = f"HTTP {a.status_code}" if a.status_code else (a.error or "no answer recorded")
                excerpt = a.response_excerpt.replace("\n", " ")[:80]
                self.stdout.write(
                    f"  #{a.number} {a.started_at:%H:%M:%S} {answer}"
                    f"{f' ({a.duration_ms} ms)' if a.duration_ms is not None else ''}"
                    f"{f' {excerpt!r}' if excerpt else ''}"
                )

    def _redeliver(self, admin, *, id, event_id, **_):  # noqa: A002
        event = OutboxEvent.objects.filter(subscription_id=id, event_id=event_id).first()
        if event is None:
            raise CommandError(f"No event {event_id} for webhook {id}.")
        subscriptions.event_redeliver(by=admin, event=event)
        self.stdout.write(f"{event_id} queued again")

    def _check_url(self, admin, *, url, **_):
        """The guard's verdict on a URL, as registration and every delivery attempt reach it,
        address by address. A host name is resolved (by this machine's resolver, now; a
        delivery resolves it again at each attempt); nothing is ever connected to."""
        try:
            parts, judged = targets.inspect(url.strip())
        except targets.TargetRefused as exc:
            raise CommandError(f"refused: {exc}", returncode=1) from None
        if [j.address for j in judged] != [parts.host]:
            self.stdout.write(
                f"{parts.host} resolves (this machine's resolver, now) to "
                f"{', '.join(j.address for j in judged) or 'nothing'}"
            )
        for j in judged:
            if j.allowlisted:
                said = "allowed (MGC_WEBHOOK_ALLOWED_NETWORKS names it)"
            elif j.allowed:
                said = "allowed (public)"
            else:
                said = f"refused: {j.reasons()}"
            self.stdout.write(f"  {j.address}: {said}")
        self.stdout.write("Nothing was sent: the URL was only judged.")
        try:
            addresses = targets.verdict(parts, judged)
        except targets.TargetRefused as exc:
            raise CommandError(f"refused: {exc}", returncode=1) from None
        self.stdout.write(
            f"allowed: a delivery would POST to {addresses[0]} port {parts.port} (Host: {parts.host}); "
            "the address is checked again at every attempt."
        )
