"""Forms of memory's whole life: retention rules and legal holds."""

import uuid

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from projects.governance.retention import rule_clean
from projects.memory import records
from projects.models import MemoryFile, RetentionRule


class RetentionRuleForm(forms.Form):
    """One retention rule; its meaning is checked by governance.retention.rule_clean, whose
    errors land at their fields."""

    kind = forms.ChoiceField(label=_("Expires"), choices=RetentionRule.Kind.choices)
    glob = forms.CharField(
        label=_("Files"),
        required=False,
        max_length=300,
        help_text=_("For files and history: USER.md, AGENTS.md, workspace/logs/**, workspace/**.md..."),
    )
    days = forms.IntegerField(label=_("Days kept"), required=False, min_value=1, max_value=36_500)
    keep_revisions = forms.IntegerField(
        label=_("Newest revisions kept"),
        required=False,
        min_value=1,
        max_value=36_500,
        help_text=_("For history only."),
    )

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        try:
            return rule_clean(**{k: data.get(k) for k in ("kind", "glob", "days", "keep_revisions")})
        except ValidationError as exc:
            for field, problems in exc.error_dict.items():
                for problem in problems:
                    self.add_error(field, problem)
        return data


class HoldForm(forms.Form):
    """A legal hold: on the whole project, or one person, one file (by its path, with the
    project's files as suggestions) or a workspace glob."""

    reason = forms.CharField(label=_("Reason"), max_length=500)
    case_reference = forms.CharField(label=_("Case reference"), max_length=200, required=False)
    person = forms.ModelChoiceField(
        label=_("Person"),
        required=False,
        queryset=None,
        to_field_name="username",
        help_text=_("Their profile in every project, and what agents were told about them."),
    )
    glob = forms.CharField(
        label=_("Workspace files"),
        max_length=300,
        required=False,
        help_text=_("workspace/<glob>.md, e.g. workspace/incidents/**.md"),
    )
    file = forms.CharField(
        label=_("File"),
        max_length=400,
        required=False,
        help_text=_(
            "Its path, as the pages show it: workspace/incidents/a.md, agents/<agent>/SOUL.md, "
            "users/<name>/USER.md"
        ),
        widget=forms.TextInput(attrs={"list": "hold-files", "autocomplete": "off", "spellcheck": "false"}),
    )

    def __init__(self, *args, people, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["person"].queryset = people
        self.project = project

    def clean_file(self):
        """The file the path names (or, as before, its id), or None."""
        named = (self.cleaned_data.get("file") or "").strip()
        if not named:
            return None
        try:
            found = MemoryFile.objects.filter(project=self.project, pk=uuid.UUID(named)).first()
        except ValueError:
            found = records.file_by_display_path(project=self.project, path=named)
        if found is None:
            raise ValidationError(
                _("No file %(path)s in this project: pick one of the suggestions."),
                code="hold_file",
                params={"path": named},
            )
        return found

    def clean(self):
        data = super().clean()
        chosen = [name for name in ("person", "glob", "file") if data.get(name)]
        if len(chosen) > 1:
            raise ValidationError(
                _("A hold covers the project, or one person, one file or one glob: pick at most one."),
                code="hold_target",
            )
        data["glob"] = data.get("glob") or ""
        return data


class HoldReleaseForm(forms.Form):
    note = forms.CharField(label=_("Why it is released"), max_length=500, required=False)
