"""Members of a project (admins): add someone with a role, change or remove a role, a new
account with its one-time set-password link, and a new link for who never chose a password."""

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _

from projects import drafts
from projects.errors import explain
from projects.forms.governance import AccountForm, MemberForm
from projects.governance import members, permissions
from projects.models import Membership
from projects.views import paging
from projects.views.base import project_view


@project_view(capability=permissions.can_manage)
def members_view(request, project, role):
    form = MemberForm(request.POST or None)
    status = 200
    confirm = None
    if request.method == "POST" and request.POST.get("keep"):
        # "Keep it as it is": the person decided; what they typed is settled, not lost, so
        # the next page offers no draft back as "not saved".
        drafts.saved(request, "member-add", project.pk)
        messages.info(request, _("Nothing changed."))
        return redirect("projects:members", slug=project.slug)
    if request.method == "POST":
        if form.is_valid():
            user, wanted = form.cleaned_data["user"], form.cleaned_data["role"]
            existing = Membership.objects.filter(project=project, user=user).first()
            names = {
                "name": user.get_username(),
                "project": project.name,
                "role": Membership.Role(wanted).label,
            }
            if existing is not None and existing.role == wanted:
                drafts.saved(request, "member-add", project.pk)
                messages.info(
                    request, _("%(name)s is already %(role)s in %(project)s; nothing changed.") % names
                )
                return redirect("projects:members", slug=project.slug)
            if existing is not None and request.POST.get("confirm_role") != wanted:
                # Already a member: "Add" would change the role. Ask, saying from what to what.
                confirm = {
                    "user": user,
                    "before": Membership.Role(existing.role).label,
                    "after": Membership.Role(wanted).label,
                    "role": wanted,
                }
                return _members_page(request, project, role, form=form, confirm=confirm, status=409)
            try:
                members.member_set(by=request.user, project=project, user=user, role=wanted)
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                drafts.saved(request, "member-add", project.pk)
                if existing is None:
                    messages.success(request, _("%(name)s is now %(role)s in %(project)s.") % names)
                else:
                    messages.success(
                        request,
                        _("Changed %(name)s's role from %(before)s to %(role)s.")
                        % {**names, "before": Membership.Role(existing.role).label},
                    )
                return redirect("projects:members", slug=project.slug)
        status = 400
    return _members_page(request, project, role, form=form, status=status)


@project_view(capability=permissions.can_manage, methods=("POST",))
def member_invite_view(request, project, role):
    """A new account, added with a role; the page shows its one-time set-password link
    (rendered, not redirected: the link is a credential and stays out of the session)."""
    form = AccountForm(request.POST, prefix="account")  # the page has MemberForm too
    if form.is_valid():
        data = form.cleaned_data
        try:
            membership = members.account_create(
                by=request.user,
                project=project,
                username=data["username"],
                role=data["role"],
                email=data["email"],
                first_name=data["first_name"],
                last_name=data["last_name"],
            )
        except ValidationError as exc:
            form.add_error("username" if exc.code == "username_taken" else None, exc)
        else:
            drafts.saved(request, "account", project.pk)
            user = membership.user
            link = request.build_absolute_uri(members.invite_path(user))
            emailed = members.invite_send(user=user, link=link, project=project, by=request.user)
            invite = {
                "user": user,
                "link": link,
                "emailed": emailed,
                "role": Membership.Role(membership.role).label,
                "days": max(1, settings.PASSWORD_RESET_TIMEOUT // 86400),
            }
            return _members_page(request, project, role, invite=invite)
    return _members_page(request, project, role, account_form=form, status=400)


def _members_page(
    request, project, role, *, form=None, account_form=None, invite=None, confirm=None, status: int = 200
):
    memberships = (
        Membership.objects.filter(project=project)
        .select_related("user", "mapping")
        .order_by("user__username")
    )
    page = paging.page_of(memberships, paging.AUDIT, request)
    response = render(
        request,
        "projects/members.html",
        {
            "project": project,
            "role": role,
            "page": page,
            "form": form or MemberForm(),
            "account_form": account_form or AccountForm(prefix="account"),
            "invite": invite,
            "confirm": confirm,
            "roles": Membership.Role.choices,
        },
        status=status,
    )
    if invite:
        response["Cache-Control"] = "no-store"  # the link must not outlive this page
    return response


@project_view(capability=permissions.can_manage, methods=("POST",))
def member_change_view(request, project, role, membership_id):
    membership = get_object_or_404(
        Membership.objects.select_related("user"), project=project, pk=membership_id
    )
    try:
        if request.POST.get("remove"):
            members.member_remove(by=request.user, membership=membership)
            messages.success(
                request, _("Removed %(name)s from the project.") % {"name": membership.user.get_username()}
            )
        else:
            before = membership.role
            wanted = request.POST.get("role", "")
            members.member_set(by=request.user, project=project, user=membership.user, role=wanted)
            if before == wanted:
                messages.info(
                    request,
                    _("%(name)s is already %(role)s; nothing changed.")
                    % {"name": membership.user.get_username(), "role": Membership.Role(wanted).label},
                )
            else:
                messages.success(
                    request,
                    _("Changed %(name)s's role from %(before)s to %(role)s.")
                    % {
                        "name": membership.user.get_username(),
                        "before": Membership.Role(before).label,
                        "role": Membership.Role(wanted).label,
                    },
                )
    except ValidationError as exc:
        messages.error(request, explain(exc))
    if not permissions.can_manage(permissions.role_in(request.user, project)):
        return redirect("projects:dashboard")  # removed or demoted themselves: not theirs now
    return redirect("projects:members", slug=project.slug)


@project_view(capability=permissions.can_manage, methods=("POST",))
def member_reinvite_view(request, project, role, membership_id):
    """A new set-password link for a member who never chose a password (the first link
    expired or was lost); shown once, e-mailed when there is an address, audited."""
    membership = get_object_or_404(
        Membership.objects.select_related("user"), project=project, pk=membership_id
    )
    user = membership.user
    if not members.can_reinvite(by=request.user, user=user):
        messages.error(
            request,
            _("%(name)s has chosen a password already; they reset it themselves, or a superuser does.")
            % {"name": user.get_username()},
        )
        return redirect("projects:members", slug=project.slug)
    link = request.build_absolute_uri(members.invite_path(user))
    members.invite_renew(by=request.user, project=project, user=user)
    emailed = members.invite_send(user=user, link=link, project=project, by=request.user)
    invite = {
        "user": user,
        "link": link,
        "emailed": emailed,
        "renewed": True,
        "role": Membership.Role(membership.role).label,
        "days": max(1, settings.PASSWORD_RESET_TIMEOUT // 86400),
    }
    return _members_page(request, project, role, invite=invite)
