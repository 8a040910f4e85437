"""Group mappings (project admins): which provider groups grant which role in the project.
Memberships follow at each person's next sign-in (projects/governance/groups.py)."""

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _

from projects.governance import groups, permissions
from projects.models import GroupMapping, Membership
from projects.sso.forms import GroupMappingForm
from projects.views.base import project_view


@project_view(capability=permissions.can_manage)
def group_mappings_view(request, project, role):
    mappings = GroupMapping.objects.filter(project=project).select_related("created_by")
    form, status = GroupMappingForm(), 200
    if request.method == "POST":
        if "delete" in request.POST:
            mapping = get_object_or_404(mappings, pk=_int(request.POST["delete"]))
            groups.mapping_delete(by=request.user, mapping=mapping)
            messages.success(
                request,
                _(
                    "Deleted the mapping of group %(group)s. Memberships it "
                    "granted end at each person's next sign-in."
                )
                % {"group": mapping.group},
            )
            return redirect("projects:group_mappings", slug=project.slug)
        mapping = (
            get_object_or_404(mappings, pk=_int(request.POST["mapping"]))
            if "mapping" in request.POST
            else None
        )
        form = GroupMappingForm(request.POST)
        if form.is_valid():
            try:
                saved = groups.mapping_save(
                    by=request.user,
                    project=project,
                    mapping=mapping,
                    group=form.cleaned_data["group"],
                    role=form.cleaned_data["role"],
                )
            except ValidationError as exc:
                form.add_error("group" if exc.code == "mapping_exists" else None, exc)
            else:
                messages.success(
                    request,
                    _("Members of group %(group)s get the role %(role)s here from their next sign-in.")
                    % {"group": saved.group, "role": Membership.Role(saved.role).label},
                )
                return redirect("projects:group_mappings", slug=project.slug)
        status = 400
    return render(
        request,
        "projects/group_mappings.html",
        {
            "project": project,
            "role": role,
            "mappings": mappings,
            "form": form,
            "roles": Membership.Role.choices,
            "sso": settings.MGC_OIDC_ENABLED,
            "granted": Membership.objects.filter(project=project, source=Membership.Source.GROUP).count(),
        },
        status=status,
    )


def _int(raw) -> int:
    try:
        return int(raw)
    except (TypeError, ValueError):
        return 0
