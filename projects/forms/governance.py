"""Forms of governance pages: the audit trail's filters, members and new accounts, erasure."""

import datetime as dt

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from projects import system_text
from projects.governance import members
from projects.models import Membership
from projects.runners import context as prompt_context

_MOMENT_FORMATS = prompt_context.MOMENT_FORMATS  # as the pages show dates, in either language


class AuditFilterForm(forms.Form):
    """Filters of the audit page; every field optional. Times are in the console's time zone.
    A reviewer of a few projects picks one from a list; one of hundreds types its slug."""

    PROJECT_CHOICES_MAX = 200

    project = forms.CharField(label=_("Project"), required=False, max_length=50)
    actor = forms.CharField(
        label=_("Who"),
        required=False,
        max_length=200,
        widget=forms.TextInput(attrs={"placeholder": _("name, agent:slug, external"), "class": "short"}),
    )
    action = forms.ChoiceField(label=_("Action"), required=False)
    since = forms.DateTimeField(
        label=_("From"),
        required=False,
        input_formats=_MOMENT_FORMATS,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
    )
    until = forms.DateTimeField(
        label=_("until"),
        required=False,
        input_formats=_MOMENT_FORMATS,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
    )

    def __init__(self, *args, projects, actions: dict[str, str], **kwargs):
        super().__init__(*args, **kwargs)
        self.projects = projects  # a queryset: only the chosen one is fetched
        few = list(projects.order_by("name")[: self.PROJECT_CHOICES_MAX + 1])
        if len(few) <= self.PROJECT_CHOICES_MAX:
            self.fields["project"] = forms.ChoiceField(
                label=_("Project"),
                required=False,
                choices=[("", _("All projects"))] + [(p.slug, p.name) for p in few],
            )
        else:
            self.fields["project"].widget.attrs.update(placeholder=_("project slug"), **{"class": "short"})
        groups = sorted({a.split(".", 1)[0] + "." for a in actions})
        self.fields["action"].choices = (
            [("", _("All actions"))]
            + [(g, _("%(group)s* (any)") % {"group": g}) for g in groups]
            + [(a, f"{a}: {label}") for a, label in sorted(actions.items())]
        )

    def clean_actor(self):
        return system_text.actor_stored(self.cleaned_data["actor"])

    def clean_project(self):
        slug = self.cleaned_data["project"].strip()
        if not slug:
            return None
        project = self.projects.filter(slug=slug).first()
        if project is None:
            raise ValidationError(
                _("No project %(slug)s that you review."), code="project", params={"slug": slug}
            )
        return project

    def _moment(self, name: str):
        value = self.cleaned_data[name]
        if value is not None:
            try:  # years 1 and 9999 overflow when moved to UTC from an offset time zone
                value.astimezone(dt.UTC)
            except OverflowError:
                raise ValidationError(
                    _("Pick a date between the years 2 and 9998."), code="bad_date"
                ) from None
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
    username = forms.CharField(
        label=_("Username"),
        max_length=150,
        widget=forms.TextInput(attrs={"autocomplete": "off", "placeholder": _("username")}),
    )
    role = forms.ChoiceField(
        label=_("Role"), choices=Membership.Role.choices, initial=Membership.Role.EMPLOYEE
    )

    def clean_username(self) -> str:
        User = get_user_model()
        name = User.normalize_username(self.cleaned_data["username"].strip())
        found = User.objects.filter(username__iexact=name, is_active=True)
        user = found.filter(username=name).first()
        if user is None:  # "NINA" finds nina, unless the case leaves it ambiguous
            candidates = list(found[:2])
            if len(candidates) > 1:
                raise ValidationError(
                    _("Several accounts are called %(name)s in some case; type the username exactly."),
                    code="ambiguous_user",
                    params={"name": name},
                )
            user = candidates[0] if candidates else None
        if user is None:
            raise ValidationError(
                _('No active account is called %(name)s. Create it below under "New account".'),
                code="no_user",
                params={"name": name},
            )
        self.cleaned_data["user"] = user
        return name


class AccountForm(forms.Form):
    """A new account for a person, added to the project at once (members page)."""

    username = forms.CharField(
        label=_("Username"),
        max_length=150,
        validators=[UnicodeUsernameValidator()],
        help_text=_("Letters, digits and @ . + - _ only; what the person logs in with."),
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
    )
    email = forms.EmailField(
        label=_("E-mail (optional)"),
        required=False,
        help_text=_("The set-password link is sent here; you also see it to pass on yourself."),
    )
    first_name = forms.CharField(label=_("First name (optional)"), max_length=150, required=False)
    last_name = forms.CharField(label=_("Last name (optional)"), max_length=150, required=False)
    role = forms.ChoiceField(
        label=_("Role"), choices=Membership.Role.choices, initial=Membership.Role.EMPLOYEE
    )

    def clean_username(self) -> str:
        name = get_user_model().normalize_username(self.cleaned_data["username"].strip())
        members.username_free(name)  # checked again under a lock when created
        return name


class EraseForm(forms.Form):
    """Erasure cannot be undone: the admin types the person's username to confirm."""

    reason = forms.CharField(
        label=_("Why"),
        max_length=500,
        widget=forms.TextInput(attrs={"placeholder": _("e.g. GDPR art. 17 request #1234")}),
    )
    confirm = forms.CharField(
        max_length=150,
        label=_("Type the username to confirm"),
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
    )
    projects = forms.MultipleChoiceField(label=_("In these projects"), widget=forms.CheckboxSelectMultiple)

    def __init__(self, *args, username: str, projects=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.username = username
        self.fields["projects"].choices = [(p.slug, p.name) for p in projects]
        self.fields["projects"].initial = [p.slug for p in projects]

    def clean_confirm(self) -> str:
        if self.cleaned_data["confirm"].strip() != self.username:
            raise ValidationError(
                _("Type %(name)s exactly to confirm."), code="confirm", params={"name": self.username}
            )
        return self.cleaned_data["confirm"]
