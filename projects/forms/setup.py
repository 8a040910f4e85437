"""Forms of projects and agents: opening them, their names and descriptions, an agent's
manifest or hook policy as raw JSON, and its runners' tokens."""

import json
import re

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from projects import jsontext
from projects.memory import layout


class _PrettyJSONField(forms.JSONField):
    """Shows the stored value indented, once encoded (a str initial would be encoded twice).
    JSON nested too deep or holding lone surrogates is refused here (`jsontext`), not stored
    to break the pages that show it."""

    def to_python(self, value):
        try:
            converted = super().to_python(value)
            jsontext.check(converted)
        except RecursionError:
            raise ValidationError(jsontext.too_deep(), code="invalid") from None
        except jsontext.BadJSON as exc:
            raise ValidationError(str(exc), code="invalid") from None
        return converted

    def bound_data(self, data, initial):
        try:
            value = super().bound_data(data, initial)
            jsontext.check(value)
        except (RecursionError, jsontext.BadJSON):  # shown again as typed, with the error
            return forms.fields.InvalidJSONInput(data)
        return value

    def prepare_value(self, value):
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value
        return json.dumps(value, indent=2, ensure_ascii=False)


class JsonSettingForm(forms.Form):
    """An agent's manifest or hook policy as raw JSON; the caller validates its meaning.
    `{}` is a value (a policy with no rules); only an empty box is missing."""

    value = _PrettyJSONField(
        label="JSON",
        required=False,
        widget=forms.Textarea(attrs={"rows": 18, "class": "editor-text", "spellcheck": "false"}),
    )

    def clean_value(self):
        value = self.cleaned_data["value"]
        if value is None:
            raise ValidationError(self.fields["value"].error_messages["required"], code="required")
        return value


class TokenForm(forms.Form):
    name = forms.CharField(
        label=_("Name"),
        max_length=100,
        widget=forms.TextInput(attrs={"placeholder": _("e.g. production runner")}),
    )
    expires_in_days = forms.IntegerField(
        label=_("Expires in days"),
        required=False,
        min_value=1,
        max_value=3650,
        help_text=_("Empty: does not expire."),
    )


class AgentForm(forms.Form):
    slug = forms.SlugField(
        label=_("Slug"), max_length=50, help_text=_("Short name used in URLs and by runners.")
    )
    name = forms.CharField(label=_("Name"), max_length=200)
    description = forms.CharField(
        label=_("Description"), required=False, widget=forms.Textarea(attrs={"rows": 3})
    )


class ProjectForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=200)
    description = forms.CharField(
        label=_("Description"), required=False, widget=forms.Textarea(attrs={"rows": 3})
    )
    stale_days = forms.IntegerField(
        label=_("Stale after (days)"),
        required=False,
        min_value=1,
        max_value=3650,
        help_text=_(
            "Memory health: episodic notes older than this, and files no session received for as "
            "long, are stale. Empty: the console's default."
        ),
    )


class NewProjectForm(ProjectForm):
    stale_days = None  # set later, on the project's settings
    slug = forms.SlugField(label=_("Slug"), max_length=50, help_text=_("Short name used in URLs."))
    bucket = forms.CharField(
        label=_("Bucket"),
        required=False,
        max_length=63,
        help_text=_("Own S3 bucket; empty uses the console's bucket."),
    )
    key_prefix = forms.CharField(
        label=_("Key prefix"),
        required=False,
        max_length=200,
        help_text=_("Own key prefix ending with '/'; empty uses projects/<id>/."),
    )

    field_order = ["slug", "name", "description", "bucket", "key_prefix"]

    def clean_bucket(self) -> str:
        bucket = self.cleaned_data["bucket"].strip()
        # S3's naming rules: 3-63 of a-z 0-9 . -, letters or digits at both ends, no "..",
        # not shaped like an IP address, none of the reserved prefixes and suffixes.
        if bucket and (
            not re.fullmatch(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", bucket)
            or ".." in bucket
            or ".-" in bucket
            or "-." in bucket
            or re.fullmatch(r"\d{1,3}(\.\d{1,3}){3}", bucket)
            or bucket.startswith(("xn--", "sthree-", "amzn-s3-demo-"))
            or bucket.endswith(("-s3alias", "--ol-s3", "--x-s3"))
        ):
            raise ValidationError(
                _("A bucket name is 3-63 lowercase letters, digits, '.' and '-'."), code="bucket"
            )
        return bucket

    def clean_key_prefix(self) -> str:
        prefix = self.cleaned_data["key_prefix"].strip()
        if prefix:
            layout.project_prefix(None, prefix)
        return prefix
