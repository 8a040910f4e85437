"""The console's form for a new webhook or audit stream (the services check it again)."""

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from projects import outbox
from projects.events import subscriptions, targets
from projects.models import WebhookSubscription


class WebhookForm(forms.Form):
    kind = forms.ChoiceField(
        label=_("Kind"),
        choices=WebhookSubscription.Kind.choices,
        initial=WebhookSubscription.Kind.WEBHOOK,
        help_text=_(
            "A webhook receives the event types you pick; an audit stream (for a SIEM) "
            "receives every audit event of this project with its hash-chain fields."
        ),
    )
    url = forms.CharField(
        label=_("Receiver URL"),
        max_length=targets.MAX_URL,
        widget=forms.URLInput(
            attrs={"placeholder": "https://hooks.example.com/memory", "autocomplete": "off"}
        ),
        help_text=_(
            "Called with a POST of JSON, signed as Standard Webhooks says. Addresses "
            "inside your network are refused unless the deployment allows them "
            "(MGC_WEBHOOK_ALLOWED_NETWORKS)."
        ),
    )
    events = forms.MultipleChoiceField(
        label=_("Events"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        choices=[(e, e) for e in outbox.EVENT_TYPES],
        help_text=_("For a webhook: what it receives."),
    )
    include_content = forms.BooleanField(
        label=_("Include texts"),
        required=False,
        help_text=_(
            "Revision and proposal texts go along; they may be personal data. Without "
            "it, events carry paths, revision numbers and authors only."
        ),
    )
    headers = forms.CharField(
        label=_("Extra headers"),
        required=False,
        widget=forms.Textarea(
            attrs={"rows": 2, "placeholder": "Authorization: Splunk <token>", "autocomplete": "off"}
        ),
        help_text=_(
            "One per line, Name: value: for example Splunk HEC's Authorization: Splunk "
            "<token>, or Elastic's Authorization: ApiKey <key>."
        ),
    )
    description = forms.CharField(label=_("Description"), required=False, max_length=200)

    def clean_url(self) -> str:
        return targets.validate_url(self.cleaned_data["url"])

    def clean_headers(self) -> dict:
        return subscriptions.parse_headers(self.cleaned_data["headers"])

    def clean(self):
        data = super().clean()
        if data.get("kind") == WebhookSubscription.Kind.WEBHOOK and not data.get("events"):
            self.add_error("events", ValidationError(_("Pick at least one event type."), code="no_events"))
        return data
