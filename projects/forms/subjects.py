"""Forms of subjects' requests: registering one, the person's own ask, and each step."""

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from projects.models import SubjectRequest

REGISTER = ""  # the project choice meaning "the console's register"


class RequestForm(forms.Form):
    """A request someone made by mail, letter, phone or in person, registered by a handler."""

    project = forms.ChoiceField(label=_("Handled in"), required=False)
    person = forms.CharField(
        label=_("Account"),
        required=False,
        max_length=150,
        help_text=_("Their username, if they have an account; else give their name and e-mail."),
    )
    name = forms.CharField(label=_("Name"), required=False, max_length=200)
    email = forms.EmailField(label=_("E-mail"), required=False)
    phone = forms.CharField(
        label=_("Phone"), required=False, max_length=40, help_text=_("Searched for too, if given.")
    )
    kind = forms.ChoiceField(label=_("Kind"), choices=SubjectRequest.Kind.choices)
    law = forms.ChoiceField(label=_("Answered under"), choices=SubjectRequest.Law.choices)
    ground = forms.ChoiceField(
        label=_("Ground (erasure)"),
        required=False,
        choices=[("", "–"), *SubjectRequest.Ground.choices],
        help_text=_("Under 152-FZ the ground sets the erasure's clock."),
    )
    received_at = forms.DateTimeField(
        label=_("Received"),
        required=False,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        help_text=_("Empty: now."),
    )
    channel = forms.ChoiceField(label=_("Channel"), choices=SubjectRequest.Channel.choices, initial="email")
    language = forms.ChoiceField(label=_("Answer in"), choices=settings.LANGUAGES)
    details = forms.CharField(
        label=_("What they wrote"), required=False, widget=forms.Textarea(attrs={"rows": 3})
    )

    def __init__(self, *args, projects, register: bool, **kwargs):
        super().__init__(*args, **kwargs)
        choices = [(REGISTER, _("The console's register (every project)"))] if register else []
        self.fields["project"].choices = choices + [(p.slug, p.name) for p in projects]
        self.projects = {p.slug: p for p in projects}

    def clean_person(self):
        username = self.cleaned_data.get("person", "").strip()
        if not username:
            return None
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise ValidationError(_("No account %(name)s."), code="no_account", params={"name": username})
        return user

    def clean_project(self):
        slug = self.cleaned_data.get("project", "")
        return self.projects.get(slug) if slug else None

    def clean_received_at(self):
        value = self.cleaned_data.get("received_at")
        if value and value > timezone.now():
            raise ValidationError(_("A request cannot come in the future."), code="future")
        return value


class AskForm(forms.Form):
    """A person asking about themselves, signed in."""

    kind = forms.ChoiceField(label=_("I ask for"), choices=SubjectRequest.Kind.choices, initial="access")
    law = forms.ChoiceField(
        label=_("Under"),
        choices=SubjectRequest.Law.choices,
        initial="both",
        help_text=_("152-FZ: 10 working days for access; GDPR: one month."),
    )
    language = forms.ChoiceField(label=_("Answer me in"), choices=settings.LANGUAGES)
    details = forms.CharField(
        label=_("Anything to add"), required=False, max_length=4000, widget=forms.Textarea(attrs={"rows": 3})
    )


class NoteForm(forms.Form):
    """One text a step needs: how identity was checked, the reasoned notice, the ground..."""

    text = forms.CharField(label=_("Note"), max_length=4000, widget=forms.Textarea(attrs={"rows": 3}))

    def __init__(self, *args, label=None, **kwargs):
        super().__init__(*args, **kwargs)
        if label:
            self.fields["text"].label = label
