from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from projects.memory import lookalikes
from projects.models import GroupMapping, Membership


class GroupMappingForm(forms.Form):
    group = forms.CharField(
        label=_("Provider group"),
        max_length=GroupMapping._meta.get_field("group").max_length,
        help_text=_(
            "As the identity provider names it in the groups claim: Keycloak sends the "
            "group's name (or its path, such as /sre), Entra ID the group's object id."
        ),
        widget=forms.TextInput(attrs={"autocomplete": "off", "placeholder": "sre"}),
    )
    role = forms.ChoiceField(
        label=_("Role"), choices=Membership.Role.choices, initial=Membership.Role.EMPLOYEE
    )

    def clean_group(self) -> str:
        group = self.cleaned_data["group"]
        if any(lookalikes.is_ignorable(c) or not c.isprintable() for c in group):
            raise ValidationError(
                _("The group name holds invisible or control characters; type it as the provider sends it."),
                code="group_invisible",
            )
        return group
