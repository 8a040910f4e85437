"""Forms of the editor and the workspace. Validation says what is wrong; the text typed is
always sent back to the page, never dropped."""

import datetime as dt
import json
import re

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from projects import jsontext
from projects.governance import members as membership_service
from projects.governance.retention import rule_clean
from projects.memory import content, layout, merging
from projects.memory.errors import ContentRejected
from projects.models import Membership, RetentionRule
from projects.runners import context as prompt_context


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
        label="Markdown", required=False, strip=False,
        widget=forms.Textarea(attrs={"rows": 28, "spellcheck": "false", "class": "editor-text"}),
    )
    message = forms.CharField(
        label=_("Message"), required=False, max_length=500,
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
            self.add_error("content", ValidationError(
                _("The text is empty: agents would read nothing from this file. Save it empty "
                  "anyway, or write something first."), code="empty_text"))
        if data.get("merging") and merging.unresolved_markers(data.get("content", "")):
            self.add_error("content", ValidationError(
                _("The text still holds conflict markers (<<<<<<<, =======, >>>>>>>): choose "
                  "a side for each overlapping change above, or edit them out."),
                code="merge_markers"))
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
        label=_("Path"), max_length=layout.MAX_PATH_CHARS, strip=False,
        help_text=_("Relative path ending in .md, e.g. incidents/2026-12-02-outage.md"),
        widget=forms.TextInput(attrs={"placeholder": _("folder/name.md"), "autocomplete": "off"}),
    )

    def clean_path(self) -> str:
        return layout.validate_workspace_path(self.cleaned_data["path"])


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

    value = _PrettyJSONField(label="JSON", required=False, widget=forms.Textarea(
        attrs={"rows": 18, "class": "editor-text", "spellcheck": "false"}))

    def clean_value(self):
        value = self.cleaned_data["value"]
        if value is None:
            raise ValidationError(self.fields["value"].error_messages["required"],
                                  code="required")
        return value


class TokenForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=100, widget=forms.TextInput(
        attrs={"placeholder": _("e.g. production runner")}))
    expires_in_days = forms.IntegerField(label=_("Expires in days"), required=False, min_value=1,
                                         max_value=3650, help_text=_("Empty: does not expire."))


_MOMENT_FORMATS = prompt_context.MOMENT_FORMATS  # as the pages show dates, in either language


class AuditFilterForm(forms.Form):
    """Filters of the audit page; every field optional. Times are in the console's time zone.
    A reviewer of a few projects picks one from a list; one of hundreds types its slug."""

    PROJECT_CHOICES_MAX = 200

    project = forms.CharField(label=_("Project"), required=False, max_length=50)
    actor = forms.CharField(label=_("Who"), required=False, max_length=200, widget=forms.TextInput(
        attrs={"placeholder": _("name, agent:slug, external"), "class": "short"}))
    action = forms.ChoiceField(label=_("Action"), required=False)
    since = forms.DateTimeField(
        label=_("From"), required=False, input_formats=_MOMENT_FORMATS,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"))
    until = forms.DateTimeField(
        label=_("until"), required=False, input_formats=_MOMENT_FORMATS,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"))

    def __init__(self, *args, projects, actions: dict[str, str], **kwargs):
        super().__init__(*args, **kwargs)
        self.projects = projects  # a queryset: only the chosen one is fetched
        few = list(projects.order_by("name")[:self.PROJECT_CHOICES_MAX + 1])
        if len(few) <= self.PROJECT_CHOICES_MAX:
            self.fields["project"] = forms.ChoiceField(
                label=_("Project"), required=False,
                choices=[("", _("All projects"))] + [(p.slug, p.name) for p in few])
        else:
            self.fields["project"].widget.attrs.update(placeholder=_("project slug"), **{"class": "short"})
        groups = sorted({a.split(".", 1)[0] + "." for a in actions})
        self.fields["action"].choices = (
            [("", _("All actions"))]
            + [(g, _("%(group)s* (any)") % {"group": g}) for g in groups]
            + [(a, f"{a}: {label}") for a, label in sorted(actions.items())])

    def clean_project(self):
        slug = self.cleaned_data["project"].strip()
        if not slug:
            return None
        project = self.projects.filter(slug=slug).first()
        if project is None:
            raise ValidationError(_("No project %(slug)s that you review."), code="project",
                                  params={"slug": slug})
        return project

    def _moment(self, name: str):
        value = self.cleaned_data[name]
        if value is not None:
            try:  # years 1 and 9999 overflow when moved to UTC from an offset time zone
                value.astimezone(dt.UTC)
            except OverflowError:
                raise ValidationError(_("Pick a date between the years 2 and 9998."),
                                      code="bad_date") from None
        return value

    def clean_since(self):
        return self._moment("since")

    def clean_until(self):
        return self._moment("until")

    def clean(self):
        data = super().clean()
        since, until = data.get("since"), data.get("until")
        if since and until and since >= until:
            raise ValidationError(_("'From' must be before 'until'."), code="bad_range")
        return data


class MemberForm(forms.Form):
    username = forms.CharField(label=_("Username"), max_length=150, widget=forms.TextInput(
        attrs={"autocomplete": "off", "placeholder": _("username")}))
    role = forms.ChoiceField(label=_("Role"), choices=Membership.Role.choices,
                             initial=Membership.Role.EMPLOYEE)

    def clean_username(self) -> str:
        User = get_user_model()
        name = User.normalize_username(self.cleaned_data["username"].strip())
        found = User.objects.filter(username__iexact=name, is_active=True)
        user = found.filter(username=name).first()
        if user is None:  # "NINA" finds nina, unless the case leaves it ambiguous
            candidates = list(found[:2])
            if len(candidates) > 1:
                raise ValidationError(_("Several accounts are called %(name)s in some case; type "
                                        "the username exactly."), code="ambiguous_user",
                                      params={"name": name})
            user = candidates[0] if candidates else None
        if user is None:
            raise ValidationError(_("No active account is called %(name)s. Create it below "
                                    "under \"New account\"."), code="no_user",
                                  params={"name": name})
        self.cleaned_data["user"] = user
        return name


class AccountForm(forms.Form):
    """A new account for a person, added to the project at once (members page)."""

    username = forms.CharField(
        label=_("Username"), max_length=150, validators=[UnicodeUsernameValidator()],
        help_text=_("Letters, digits and @ . + - _ only; what the person logs in with."),
        widget=forms.TextInput(attrs={"autocomplete": "off"}))
    email = forms.EmailField(
        label=_("E-mail (optional)"), required=False,
        help_text=_("The set-password link is sent here; you also see it to pass on yourself."))
    first_name = forms.CharField(label=_("First name (optional)"), max_length=150, required=False)
    last_name = forms.CharField(label=_("Last name (optional)"), max_length=150, required=False)
    role = forms.ChoiceField(label=_("Role"), choices=Membership.Role.choices,
                             initial=Membership.Role.EMPLOYEE)

    def clean_username(self) -> str:
        name = get_user_model().normalize_username(self.cleaned_data["username"].strip())
        membership_service.username_free(name)  # checked again under a lock when created
        return name


class EraseForm(forms.Form):
    """Erasure cannot be undone: the admin types the person's username to confirm."""

    reason = forms.CharField(label=_("Why"), max_length=500, widget=forms.TextInput(
        attrs={"placeholder": _("e.g. GDPR art. 17 request #1234")}))
    confirm = forms.CharField(max_length=150, label=_("Type the username to confirm"),
                              widget=forms.TextInput(attrs={"autocomplete": "off"}))
    projects = forms.MultipleChoiceField(label=_("In these projects"),
                                         widget=forms.CheckboxSelectMultiple)

    def __init__(self, *args, username: str, projects=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.username = username
        self.fields["projects"].choices = [(p.slug, p.name) for p in projects]
        self.fields["projects"].initial = [p.slug for p in projects]

    def clean_confirm(self) -> str:
        if self.cleaned_data["confirm"].strip() != self.username:
            raise ValidationError(_("Type %(name)s exactly to confirm."), code="confirm",
                                  params={"name": self.username})
        return self.cleaned_data["confirm"]


class AgentForm(forms.Form):
    slug = forms.SlugField(label=_("Slug"), max_length=50,
                           help_text=_("Short name used in URLs and by runners."))
    name = forms.CharField(label=_("Name"), max_length=200)
    description = forms.CharField(label=_("Description"), required=False,
                                  widget=forms.Textarea(attrs={"rows": 3}))


class ProjectForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=200)
    description = forms.CharField(label=_("Description"), required=False,
                                  widget=forms.Textarea(attrs={"rows": 3}))


class NewProjectForm(ProjectForm):
    slug = forms.SlugField(label=_("Slug"), max_length=50, help_text=_("Short name used in URLs."))
    bucket = forms.CharField(label=_("Bucket"), required=False, max_length=63,
                             help_text=_("Own S3 bucket; empty uses the console's bucket."))
    key_prefix = forms.CharField(label=_("Key prefix"), required=False, max_length=200,
                                 help_text=_("Own key prefix ending with '/'; empty uses "
                                             "projects/<id>/."))

    field_order = ["slug", "name", "description", "bucket", "key_prefix"]

    def clean_bucket(self) -> str:
        bucket = self.cleaned_data["bucket"].strip()
        # S3's naming rules: 3-63 of a-z 0-9 . -, letters or digits at both ends, no "..",
        # not shaped like an IP address, none of the reserved prefixes and suffixes.
        if bucket and (not re.fullmatch(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", bucket)
                       or ".." in bucket or ".-" in bucket or "-." in bucket
                       or re.fullmatch(r"\d{1,3}(\.\d{1,3}){3}", bucket)
                       or bucket.startswith(("xn--", "sthree-", "amzn-s3-demo-"))
                       or bucket.endswith(("-s3alias", "--ol-s3", "--x-s3"))):
            raise ValidationError(_("A bucket name is 3-63 lowercase letters, digits, '.' and '-'."),
                                  code="bucket")
        return bucket

    def clean_key_prefix(self) -> str:
        prefix = self.cleaned_data["key_prefix"].strip()
        if prefix:
            layout.project_prefix(None, prefix)
        return prefix


class RetentionRuleForm(forms.Form):
    """One retention rule; its meaning is checked by governance.retention.rule_clean, whose
    errors land at their fields."""

    kind = forms.ChoiceField(label=_("Expires"), choices=RetentionRule.Kind.choices)
    glob = forms.CharField(label=_("Files"), required=False, max_length=300,
                           help_text=_("For files and history: USER.md, AGENTS.md, "
                                       "workspace/logs/**, workspace/**.md..."))
    days = forms.IntegerField(label=_("Days kept"), required=False, min_value=1,
                              max_value=36_500)
    keep_revisions = forms.IntegerField(label=_("Newest revisions kept"), required=False,
                                        min_value=1, max_value=36_500,
                                        help_text=_("For history only."))

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        try:
            return rule_clean(**{k: data.get(k) for k in ("kind", "glob", "days",
                                                          "keep_revisions")})
        except ValidationError as exc:
            for field, problems in exc.error_dict.items():
                for problem in problems:
                    self.add_error(field, problem)
        return data


class HoldForm(forms.Form):
    """A legal hold: on the whole project, or one person, one file (its id) or a workspace glob."""

    reason = forms.CharField(label=_("Reason"), max_length=500)
    case_reference = forms.CharField(label=_("Case reference"), max_length=200, required=False)
    person = forms.ModelChoiceField(label=_("Person"), required=False, queryset=None,
                                    to_field_name="username",
                                    help_text=_("Their profile in every project, and what agents "
                                                "were told about them."))
    glob = forms.CharField(label=_("Workspace files"), max_length=300, required=False,
                           help_text=_("workspace/<glob>.md, e.g. workspace/incidents/**.md"))
    file = forms.UUIDField(label=_("File id"), required=False)

    def __init__(self, *args, people, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["person"].queryset = people

    def clean(self):
        data = super().clean()
        chosen = [name for name in ("person", "glob", "file") if data.get(name)]
        if len(chosen) > 1:
            raise ValidationError(_("A hold covers the project, or one person, one file or one "
                                    "glob: pick at most one."), code="hold_target")
        data["glob"] = data.get("glob") or ""
        return data


class HoldReleaseForm(forms.Form):
    note = forms.CharField(label=_("Why it is released"), max_length=500, required=False)
