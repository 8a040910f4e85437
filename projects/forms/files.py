"""Forms of the editor and the workspace. Validation says what is wrong; the text typed is
always sent back to the page, never dropped."""

import re

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from projects.memory import content, layout, merging
from projects.memory.errors import ContentRejected


def _file_text(typed: str) -> str:
    """Text typed for a memory file: LF line ends, and the store's own check (NUL, size)."""
    text = content.from_textarea(typed)
    try:
        content.encode(text)
    except ContentRejected as exc:
        raise ValidationError(exc.message, code=exc.code) from None
    return text


class EditForm(forms.Form):
    content = forms.CharField(
        label="Markdown",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 28, "spellcheck": "false", "class": "editor-text"}),
    )
    message = forms.CharField(
        label=_("Message"),
        required=False,
        max_length=500,
        widget=forms.TextInput(attrs={"placeholder": _("What changed and why (optional)")}),
    )
    base_revision = forms.IntegerField(required=False, min_value=0, widget=forms.HiddenInput)
    # Set when the text came out of a three-way merge: its conflict markers must be gone.
    merging = forms.BooleanField(required=False, widget=forms.HiddenInput)
    # Set by "Save it empty": an empty text is saved only when the person said so.
    allow_empty = forms.BooleanField(required=False, widget=forms.HiddenInput)

    def clean_content(self) -> str:
        return _file_text(self.cleaned_data["content"])

    @property
    def asks_empty(self) -> bool:
        return self.is_bound and self.has_error("content", "empty_text")

    def clean(self):
        data = super().clean()
        if "content" in data and not data["content"].strip() and not data.get("allow_empty"):
            self.add_error(
                "content",
                ValidationError(
                    _(
                        "The text is empty: agents would read nothing from this file. Save it empty "
                        "anyway, or write something first."
                    ),
                    code="empty_text",
                ),
            )
        if data.get("merging") and merging.unresolved_markers(data.get("content", "")):
            self.add_error(
                "content",
                ValidationError(
                    _(
                        "The text still holds conflict markers (<<<<<<<, =======, >>>>>>>): choose "
                        "a side for each overlapping change above, or edit them out."
                    ),
                    code="merge_markers",
                ),
            )
        return data


class ResolveForm(forms.Form):
    """The person's choices for the overlapping changes of a merge; the texts are read again
    from the revisions, and the person's own text travels with the form."""

    merge_base = forms.IntegerField(required=False, min_value=0, widget=forms.HiddenInput)
    merge_head = forms.IntegerField(min_value=1, widget=forms.HiddenInput)
    your_text = forms.CharField(required=False, strip=False, widget=forms.HiddenInput)
    message = forms.CharField(required=False, max_length=500, widget=forms.HiddenInput)

    def clean_your_text(self) -> str:
        # The same text as the editor's, so the same rules: LF line ends (a browser sends
        # CRLF, which would make every line differ from the base and swallow the other
        # side's changes into one overlap), and no more than a file may hold.
        return _file_text(self.cleaned_data["your_text"])

    def choices(self, data) -> dict[int, str]:
        found = {}
        for key, value in data.items():
            number = key.removeprefix("hunk-")
            if number != key and _HUNK_NUMBER.fullmatch(number) and value in merging.CHOICES:
                found[int(number)] = value
        return found


_HUNK_NUMBER = re.compile(r"[0-9]{1,6}")  # ASCII digits: "²".isdigit() is true, int() refuses it


class RestoreForm(forms.Form):
    message = forms.CharField(label=_("Message"), required=False, max_length=500)
    base_revision = forms.IntegerField(min_value=0, widget=forms.HiddenInput)


class DeleteForm(forms.Form):
    message = forms.CharField(label=_("Reason"), required=False, max_length=500)
    base_revision = forms.IntegerField(min_value=0, widget=forms.HiddenInput)


class NewWorkspaceFileForm(forms.Form):
    path = forms.CharField(
        label=_("Path"),
        max_length=layout.MAX_PATH_CHARS,
        strip=False,
        help_text=_("Relative path ending in .md, e.g. incidents/2026-12-02-outage.md"),
        widget=forms.TextInput(attrs={"placeholder": _("folder/name.md"), "autocomplete": "off"}),
    )

    def clean_path(self) -> str:
        return layout.validate_workspace_path(self.cleaned_data["path"])
