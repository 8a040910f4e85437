"""Webhooks and audit streams of a project (admins): make, test, rotate, disable, remove; the
delivery log of each, and redelivery. The services are projects/events/subscriptions.py."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db.models import Count, Prefetch, Q
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _

from projects.errors import explain
from projects.events import subscriptions
from projects.forms.webhooks import WebhookForm
from projects.governance import permissions
from projects.models import DeliveryAttempt, OutboxEvent, WebhookSubscription
from projects.views.base import project_view
from projects.views.paging import LIST, page_of


@project_view(capability=permissions.can_manage)
def webhook_list_view(request, project, role):
    form, status, secret = WebhookForm(), 200, None
    if request.method == "POST":
        form = WebhookForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                subscription, secret = subscriptions.webhook_create(
                    by=request.user,
                    project=project,
                    url=data["url"],
                    events=data["events"],
                    include_content=data["include_content"],
                    kind=data["kind"],
                    headers=data["headers"],
                    description=data["description"],
                )
            except ValidationError as exc:
                form.add_error("url" if exc.code == "webhook_url" else None, exc)
            else:
                request.session["new_webhook_secret"] = [subscription.pk, secret]
                return redirect("projects:webhook_list", slug=project.slug)
        status = 400
    shown = request.session.pop("new_webhook_secret", None)
    found = (
        WebhookSubscription.objects.filter(project=project, removed_at__isnull=True)
        .annotate(
            pending=Count("outbox", filter=Q(outbox__state=OutboxEvent.State.PENDING)),
            failed=Count("outbox", filter=Q(outbox__state=OutboxEvent.State.FAILED)),
        )
        .order_by("-created_at")
    )
    return render(
        request,
        "projects/webhooks.html",
        {
            "project": project,
            "role": role,
            "subscriptions": found,
            "form": form,
            "new_secret": shown[1] if shown else secret,
            "new_secret_for": shown[0] if shown else None,
        },
        status=status,
    )


@project_view(capability=permissions.can_manage)
def webhook_detail_view(request, project, role, webhook_id):
    subscription = get_object_or_404(WebhookSubscription, project=project, pk=webhook_id)
    events = (
        OutboxEvent.objects.filter(subscription=subscription)
        .order_by("-created_at", "-id")
        .prefetch_related(Prefetch("log", queryset=DeliveryAttempt.objects.order_by("number")))
    )
    state = request.GET.get("state", "")
    if state in OutboxEvent.State.values:
        events = events.filter(state=state)
    page = page_of(events, LIST, request)
    return render(
        request,
        "projects/webhook_detail.html",
        {
            "project": project,
            "role": role,
            "subscription": subscription,
            "page": page,
            "state": state,
            "states": OutboxEvent.State.choices,
            "new_secret": request.session.pop("new_webhook_secret_rotated", None),
            "now": timezone.now(),
        },
    )


@project_view(capability=permissions.can_manage, methods=("POST",))
def webhook_action_view(request, project, role, webhook_id):
    subscription = get_object_or_404(
        WebhookSubscription, project=project, pk=webhook_id, removed_at__isnull=True
    )
    action = request.POST.get("action", "")
    try:
        if action == "test":
            event = subscriptions.webhook_test(by=request.user, subscription=subscription)
            messages.success(
                request,
                _("Test event %(id)s is on its way; its attempt appears below within seconds.")
                % {"id": event.event_id},
            )
        elif action == "rotate":
            secret = subscriptions.webhook_rotate(by=request.user, subscription=subscription)
            request.session["new_webhook_secret_rotated"] = secret
        elif action in ("enable", "disable"):
            subscriptions.webhook_set_enabled(
                by=request.user, subscription=subscription, enabled=action == "enable"
            )
        elif action == "remove":
            subscriptions.webhook_remove(by=request.user, subscription=subscription)
            messages.success(
                request,
                _("Removed the webhook to %(url)s; nothing more is sent to it.") % {"url": subscription.url},
            )
            return redirect("projects:webhook_list", slug=project.slug)
        elif action == "redeliver":
            event = get_object_or_404(
                OutboxEvent, subscription=subscription, pk=_int(request.POST.get("event"))
            )
            subscriptions.event_redeliver(by=request.user, event=event)
            messages.success(
                request,
                _("Event %(id)s will be delivered again, with the same webhook-id.") % {"id": event.event_id},
            )
    except ValidationError as exc:
        messages.error(request, explain(exc))
    return redirect("projects:webhook_detail", slug=project.slug, webhook_id=subscription.pk)


def _int(raw) -> int:
    try:
        return int(raw)
    except (TypeError, ValueError):
        return 0
