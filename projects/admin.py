"""Django admin registrations. Every change to a governed record goes through the console's
services (validation, an audit event, the runners' S3 policies refreshed), whatever the way
in: here, projects, agents, files, revisions and audit events are read-only (the console's
pages change them), memberships go through the same audited service as the Members page,
and changes to accounts are validated and audited like the console's own."""

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import UserChangeForm
from django.core.exceptions import ValidationError

from projects.audit import Actor, audit_record
from projects.errors import explain
from projects.governance import members
from projects.models import Agent, AuditEvent, Membership, MemoryFile, Project, Revision


class _ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class MembershipInline(admin.TabularInline):
    """Shown for reference; memberships change on their own admin page or the console's
    Members page, both of which leave an audit event."""

    model = Membership
    extra = 0
    fields = ["user", "role", "created_at"]
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Project)
class ProjectAdmin(_ReadOnlyAdmin):
    """Read-only: a project's bucket and prefix are fixed once it has files and checked
    against every other project's (Project.check_keyspace); name and description change on
    the project's settings page, which audits them."""

    list_display = ["name", "slug", "id", "bucket", "key_prefix", "created_at"]
    search_fields = ["name", "slug"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "project", "role", "created_at"]
    list_filter = ["role", "project"]
    search_fields = ["user__username", "project__name"]
    list_select_related = ["user", "project"]
    autocomplete_fields = ["user"]
    actions = None  # bulk delete would skip the audit trail
    exclude = ["source", "mapping"]  # a membership saved here is a hand-made one

    def get_readonly_fields(self, request, obj=None):
        return ["user", "project"] if obj else []

    def save_model(self, request, obj, form, change):
        # Permission changes go through the audited service, as in the console.
        try:
            members.member_set(by=request.user, project=obj.project, user=obj.user, role=obj.role)
        except ValidationError as exc:
            messages.error(request, explain(exc))
        saved = Membership.objects.filter(project=obj.project, user=obj.user).first()
        if saved is not None:
            obj.pk = saved.pk

    def delete_model(self, request, obj):
        try:
            members.member_remove(by=request.user, membership=obj)
        except ValidationError as exc:
            messages.error(request, explain(exc))


@admin.register(Agent)
class AgentAdmin(_ReadOnlyAdmin):
    """Read-only: the manifest and the hook policy change on the agent's settings page, which
    validates them, audits the change and rewrites the runners' S3 policies."""

    list_display = ["name", "slug", "project", "created_at"]
    list_filter = ["project"]
    search_fields = ["name", "slug"]
    list_select_related = ["project"]


@admin.register(MemoryFile)
class MemoryFileAdmin(_ReadOnlyAdmin):
    list_display = ["key", "scope", "project", "head"]
    list_filter = ["scope", "project"]
    search_fields = ["path", "key"]
    list_select_related = ["project", "head", "agent", "user"]


@admin.register(Revision)
class RevisionAdmin(_ReadOnlyAdmin):
    list_display = ["file", "number", "author_kind", "author_label", "size", "created_at"]
    list_filter = ["author_kind", "is_deletion"]
    search_fields = ["file__path", "author_label", "message"]
    list_select_related = ["file", "file__agent", "file__user"]


@admin.register(AuditEvent)
class AuditEventAdmin(_ReadOnlyAdmin):
    list_display = ["created_at", "actor_label", "action", "project", "object_repr"]
    list_filter = ["action", "project"]
    search_fields = ["actor_label", "object_repr"]
    list_select_related = ["project"]


class _AccountChangeForm(UserChangeForm):
    def clean_username(self):
        name = self.cleaned_data["username"]
        if name != self.instance.get_username():
            members.username_free(name, exclude=self.instance.pk)
        return name


class AccountAdmin(UserAdmin):
    """Accounts are created on a project's Members page (look-alike names refused, a one-time
    set-password link); here they can be changed, not added or deleted (a deleted account
    would take its authorship with it: deactivate instead). A changed username is held to
    the same rules, and every change is audited."""

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    form = _AccountChangeForm

    def save_model(self, request, obj, form, change):
        changed = sorted(set(form.changed_data) - {"password"})
        super().save_model(request, obj, form, change)
        if changed or "password" in form.changed_data:
            audit_record(
                actor=Actor.person(request.user),
                action="account.change",
                obj=obj,
                details={
                    "changed": changed,
                    "password": "password" in form.changed_data,
                    **{
                        field: getattr(obj, field)
                        for field in ("is_active", "is_staff", "is_superuser")
                        if field in changed
                    },
                },
            )


admin.site.unregister(get_user_model())
admin.site.register(get_user_model(), AccountAdmin)
