"""Forms of the editor and the workspace. Validation says what is wrong; the text typed is
always sent back to the page, never dropped."""

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError

from projects import layout


class EditForm(forms.Form):
    content = forms.CharField(
        required=False, strip=False,
        widget=forms.Textarea(attrs={"rows": 28, "spellcheck": "false", "class": "editor-text"}),
    )
    message = forms.CharField(
        required=False, max_length=500,
        widget=forms.TextInput(attrs={"placeholder": "What changed and why (optional)"}),
    )
    base_revision = forms.IntegerField(required=False, min_value=0, widget=forms.HiddenInput)

    def clean_content(self) -> str:
        # Browsers send CRLF from a textarea; memory files use LF like the rest of the bucket.
        text = self.cleaned_data["content"].replace("\r\n", "\n")
        if "\x00" in text:
            raise ValidationError("The text contains NUL characters.", code="binary")
        size = len(text.encode("utf-8", errors="replace"))
        limit = settings.MGC_MAX_FILE_BYTES
        if size > limit:
            raise ValidationError(
                "The text is %(size)s bytes; the limit is %(limit)s bytes.", code="too_large",
                params={"size": f"{size:,}", "limit": f"{limit:,}"})
        return text


class RestoreForm(forms.Form):
    message = forms.CharField(required=False, max_length=500)
    base_revision = forms.IntegerField(min_value=0, widget=forms.HiddenInput)


class DeleteForm(forms.Form):
    message = forms.CharField(required=False, max_length=500)
    base_revision = forms.IntegerField(min_value=0, widget=forms.HiddenInput)


class NewWorkspaceFileForm(forms.Form):
    path = forms.CharField(
        max_length=layout.MAX_PATH_CHARS, strip=False,
        help_text="Relative path ending in .md, e.g. incidents/2026-12-02-outage.md",
        widget=forms.TextInput(attrs={"placeholder": "folder/name.md", "autocomplete": "off"}),
    )

    def clean_path(self) -> str:
        return layout.validate_workspace_path(self.cleaned_data["path"])


class JsonSettingForm(forms.Form):
    """An agent's manifest or hook policy as JSON; the caller validates its meaning."""

    value = forms.JSONField(widget=forms.Textarea(attrs={"rows": 18, "class": "editor-text",
                                                         "spellcheck": "false"}))


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, widget=forms.TextInput(
        attrs={"placeholder": "e.g. production runner"}))
    expires_in_days = forms.IntegerField(required=False, min_value=1, max_value=3650,
                                         help_text="Empty: does not expire.")
