"""Django admin registrations. Content edits go through the console (the store), never here:
revisions and audit events are read-only in the admin."""

from django.contrib import admin, messages
from django.core.exceptions import ValidationError

from projects.errors import explain
from projects.governance import members
from projects.models import Agent, AuditEvent, Membership, MemoryFile, Project, Revision


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
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "id", "bucket", "key_prefix", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    readonly_fields = ["id", "created_at"]
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
            members.member_set(by=request.user, project=obj.project, user=obj.user,
                                  role=obj.role)
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
class AgentAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "project", "created_at"]
    list_filter = ["project"]
    search_fields = ["name", "slug"]
    readonly_fields = ["id", "created_at"]
    list_select_related = ["project"]


class _ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


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
