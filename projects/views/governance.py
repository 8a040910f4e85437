"""Governance pages: the audit trail with filters and export, the review queue and flags,
members, isolation, export of a project's memory and erasure of a profile."""

import json
import tempfile

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.http import FileResponse, Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_POST

from projects import drafts
from projects.audit import ACTIONS
from projects.errors import explain
from projects.forms import (
    AccountForm,
    AgentForm,
    AuditFilterForm,
    EraseForm,
    MemberForm,
    NewProjectForm,
    ProjectForm,
)
from projects.governance import erasure, exports, isolation, permissions, review, setup, trail
from projects.governance import members as membership_service
from projects.governance.trail import audit_read
from projects.memory import errors
from projects.memory import search as memory_search
from projects.models import Agent, AuditEvent, Flag, Membership, MemoryFile, Revision
from projects.rendering import highlighted
from projects.runners import credentials
from projects.views import paging


@login_required
def audit_log(request):
    """Who did what, when: filters by project, actor, action and time; CSV/JSONL export."""
    projects = permissions.reviewable_projects(request.user)
    permissions.require(request.user.is_superuser or projects.exists())
    form = AuditFilterForm(request.GET or None, projects=projects, actions=ACTIONS)
    status = 200
    filters = {}
    if form.is_bound:
        if form.is_valid():
            data = form.cleaned_data
            filters = {"project": data["project"], "actor": data["actor"].strip(),
                       "action": data["action"], "since": data["since"], "until": data["until"]}
        else:
            status = 400
    events = trail.audit_events(user=request.user, **filters) if status == 200 \
        else AuditEvent.objects.none()
    export = request.GET.get("export")
    if export in ("csv", "jsonl") and status == 200:
        return _export(request, events, export, filters)
    page = paging.page_of(events, paging.AUDIT, request)
    links = trail.object_links(page.object_list)
    for event in page.object_list:
        event.link = links.get(event.pk)
    return render(request, "projects/audit_log.html",
                  {"form": form, "page": page, "filtered": any(filters.values())}, status=status)


def _export(request, events, kind: str, filters: dict):
    """Streamed, so a large trail never sits in memory (governance.trail.export_lines)."""
    lines, content_type = trail.export_lines(events, kind=kind, by=request.user, filters=filters)
    response = StreamingHttpResponse(lines, content_type=content_type)
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="audit-{stamp}.{kind}"'
    return response


# --- Review ---------------------------------------------------------------------------------------


@login_required
def review_queue(request, slug):
    project, role = permissions.project_or_404(request.user, slug)
    permissions.require(permissions.can_review(role))
    queue = review.review_queue(reviewer=request.user, project=project)
    page = paging.page_of(queue, paging.REVIEW, request)
    status = 200
    try:
        items = review.review_items(list(page.object_list))
    except errors.StoreError as exc:
        items, status = [], 503
        messages.error(request, exc.message)
    _audit_review_reads(request, role, project, items)
    open_flags = (Flag.objects.filter(project=project, resolved_at__isnull=True)
                  .select_related("file", "file__agent", "file__user", "revision", "created_by"))
    return render(request, "projects/review_queue.html", {
        "project": project, "role": role, "page": page, "items": items,
        "open_flags": open_flags[:50], "open_flag_count": open_flags.count(),
    }, status=status)


def _audit_review_reads(request, role, project, items) -> None:
    """One read per file whose changes the page showed (not one per visit; a reload within
    trail.READ_WINDOW adds nothing)."""
    trail.audit_reads(user=request.user, role=role, action="read.review", project=project,
                      reads=[(item.file, {"revision": item.file.head.number, "since": item.since})
                             for item in items])


@login_required
def review_file(request, slug, file_id):
    """One file of the reviewer's queue on its own page: where "Mark reviewed" leads next."""
    project, role = permissions.project_or_404(request.user, slug)
    permissions.require(permissions.can_review(role))
    queue = review.review_queue(reviewer=request.user, project=project)
    file = queue.filter(pk=file_id).first()
    if file is None:
        file = get_object_or_404(MemoryFile, project=project, pk=file_id)
        messages.info(request, _("You have reviewed %(path)s up to its latest revision.")
                      % {"path": file.display_path})
        return redirect("projects:review_queue", slug=slug)
    status = 200
    try:
        items = review.review_items([file])
    except errors.StoreError as exc:
        items, status = [], 503
        messages.error(request, exc.message)
    _audit_review_reads(request, role, project, items)
    return render(request, "projects/review_file.html", {
        "project": project, "role": role, "file": file, "item": items[0] if items else None,
        "queued": queue.count()}, status=status)


def _review_target(request, slug, file_id):
    project, role = permissions.project_or_404(request.user, slug)
    permissions.require(permissions.can_review(role))
    file = get_object_or_404(MemoryFile, project=project, pk=file_id)
    return project, file


@login_required
@require_POST
def review_mark(request, slug, file_id):
    """Mark reviewed, then on to the next file of the queue (or back to it when none is left)."""
    project, file = _review_target(request, slug, file_id)
    # Its place in the queue before the mark takes it out: the next file is the one after it.
    queued = review.review_queue(reviewer=request.user, project=project).filter(pk=file.pk).first()
    try:
        review.review_mark(reviewer=request.user, file=file,
                           number=_int(request.POST.get("number")))
    except ValidationError as exc:
        messages.error(request, explain(exc))
        return redirect(_back(request, "projects:review_queue", slug))
    following = review.review_next(reviewer=request.user, project=project, after=queued)
    if following is None:
        messages.success(request, _("Marked %(path)s reviewed. All files are reviewed up to "
                                    "their latest revision.") % {"path": file.display_path})
        return redirect("projects:review_queue", slug=slug)
    messages.success(request, _("Marked %(path)s reviewed. Next in your queue: %(next)s.")
                     % {"path": file.display_path, "next": following.display_path})
    return redirect("projects:review_file", slug=slug, file_id=following.pk)


@login_required
@require_POST
def flag_create(request, slug, file_id):
    project, file = _review_target(request, slug, file_id)
    try:
        review.flag_create(by=request.user, file=file, number=_int(request.POST.get("number")),
                               comment=request.POST.get("comment", ""))
    except ValidationError as exc:
        messages.error(request, explain(exc))
    else:
        # The review queue's form and a revision page's form keep drafts of their own.
        drafts.saved(request, "flag", file.pk)
        drafts.saved(request, "flag", file.pk, request.POST.get("number"))
        messages.success(request, _("Flagged %(path)s.") % {"path": file.display_path})
    return redirect(_back(request, "projects:review_queue", slug))


def _flag_or_404(request, slug, flag_id):
    """The flag, for a reviewer of its project or the author of the flagged revision."""
    project, role = permissions.project_or_404(request.user, slug)
    flag = (Flag.objects.select_related("file", "file__agent", "file__user", "file__project",
                                        "revision", "created_by", "resolved_by")
            .filter(project=project, pk=flag_id).first())
    if flag is None or not permissions.can_see_flag(request.user, role, flag):
        raise Http404("No such flag.")
    return project, role, flag


@login_required
def flag_detail(request, slug, flag_id, *, reply_error: str = "", resolve_error: str = "",
                status: int = 200):
    """A flag with its thread: the author of the flagged revision answers here, a reviewer
    resolves it (a note is required, and the button asks first)."""
    project, role, flag = _flag_or_404(request, slug, flag_id)
    return render(request, "projects/flag_detail.html", {
        "project": project, "role": role, "flag": flag, "file": flag.file,
        "replies": flag.replies.select_related("author"),
        "can_resolve": permissions.can_resolve_flag(role),
        "is_author": flag.revision.author_user_id == request.user.pk,
        "reply_error": reply_error, "resolve_error": resolve_error,
        "reply_text": request.POST.get("text", "") if reply_error else "",
        "resolve_note": request.POST.get("note", "") if resolve_error else "",
    }, status=status)


@login_required
@require_POST
def flag_reply(request, slug, flag_id):
    project, role, flag = _flag_or_404(request, slug, flag_id)
    try:
        review.flag_reply(by=request.user, flag=flag, text=request.POST.get("text", ""))
    except ValidationError as exc:
        return flag_detail(request, slug, flag_id, reply_error=explain(exc), status=400)
    drafts.saved(request, "reply", flag.pk)
    messages.success(request, _("Your answer is in the flag's thread."))
    return redirect("projects:flag_detail", slug=slug, flag_id=flag.pk)


@login_required
@require_POST
def flag_resolve(request, slug, flag_id):
    project, role, flag = _flag_or_404(request, slug, flag_id)
    permissions.require(permissions.can_resolve_flag(role))
    try:
        review.flag_resolve(by=request.user, flag=flag, note=request.POST.get("note", ""))
    except ValidationError as exc:  # nothing resolved; the page asks for the note again
        return flag_detail(request, slug, flag_id, resolve_error=explain(exc), status=400)
    drafts.saved(request, "resolve", flag.pk)
    messages.success(request, _("Resolved the flag on %(path)s.")
                     % {"path": flag.file.display_path})
    return redirect(_back(request, "projects:review_queue", slug))


def _int(raw) -> int:
    try:
        return int(raw)
    except (TypeError, ValueError):
        raise ValidationError(_("The form was incomplete; nothing was changed."),
                              code="incomplete") from None


def _back(request, name: str, slug: str) -> str:
    """Back to the page the form was on (same site only), else to `name`."""
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                                  require_https=request.is_secure()):
        return target
    return reverse(name, kwargs={"slug": slug})


# --- Members --------------------------------------------------------------------------------------


@login_required
def members(request, slug):
    project, role = permissions.project_or_404(request.user, slug)
    permissions.require(permissions.can_manage(role))
    form = MemberForm(request.POST or None)
    status = 200
    confirm = None
    if request.method == "POST":
        if form.is_valid():
            user, wanted = form.cleaned_data["user"], form.cleaned_data["role"]
            existing = Membership.objects.filter(project=project, user=user).first()
            names = {"name": user.get_username(), "project": project.name,
                     "role": Membership.Role(wanted).label}
            if existing is not None and existing.role == wanted:
                drafts.saved(request, "member-add", project.pk)
                messages.info(request, _("%(name)s is already %(role)s in %(project)s; nothing "
                                         "changed.") % names)
                return redirect("projects:members", slug=slug)
            if existing is not None and request.POST.get("confirm_role") != wanted:
                # Already a member: "Add" would change the role. Ask, saying from what to what.
                confirm = {"user": user, "before": Membership.Role(existing.role).label,
                           "after": Membership.Role(wanted).label, "role": wanted}
                return _members_page(request, project, role, form=form, confirm=confirm,
                                     status=409)
            try:
                membership_service.member_set(by=request.user, project=project, user=user,
                                              role=wanted)
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                drafts.saved(request, "member-add", project.pk)
                if existing is None:
                    messages.success(request, _("%(name)s is now %(role)s in %(project)s.")
                                     % names)
                else:
                    messages.success(request, _("Changed %(name)s's role from %(before)s to "
                                                "%(role)s.")
                                     % {**names, "before": Membership.Role(existing.role).label})
                return redirect("projects:members", slug=slug)
        status = 400
    return _members_page(request, project, role, form=form, status=status)


@login_required
@require_POST
def member_invite(request, slug):
    """A new account, added with a role; the page shows its one-time set-password link
    (rendered, not redirected: the link is a credential and stays out of the session)."""
    project, role = permissions.project_or_404(request.user, slug)
    permissions.require(permissions.can_manage(role))
    form = AccountForm(request.POST, prefix="account")  # the page has MemberForm too
    if form.is_valid():
        data = form.cleaned_data
        try:
            membership = membership_service.account_create(
                by=request.user, project=project, username=data["username"], role=data["role"],
                email=data["email"], first_name=data["first_name"], last_name=data["last_name"])
        except ValidationError as exc:
            form.add_error("username" if exc.code == "username_taken" else None, exc)
        else:
            drafts.saved(request, "account", project.pk)
            user = membership.user
            link = request.build_absolute_uri(membership_service.invite_path(user))
            emailed = membership_service.invite_send(user=user, link=link, project=project,
                                                     by=request.user)
            invite = {"user": user, "link": link, "emailed": emailed,
                      "role": Membership.Role(membership.role).label,
                      "days": max(1, settings.PASSWORD_RESET_TIMEOUT // 86400)}
            return _members_page(request, project, role, invite=invite)
    return _members_page(request, project, role, account_form=form, status=400)


def _members_page(request, project, role, *, form=None, account_form=None, invite=None,
                  confirm=None, status: int = 200):
    memberships = (Membership.objects.filter(project=project).select_related("user", "mapping")
                   .order_by("user__username"))
    page = paging.page_of(memberships, paging.AUDIT, request)
    response = render(request, "projects/members.html", {
        "project": project, "role": role, "page": page, "form": form or MemberForm(),
        "account_form": account_form or AccountForm(prefix="account"), "invite": invite,
        "confirm": confirm, "roles": Membership.Role.choices}, status=status)
    if invite:
        response["Cache-Control"] = "no-store"  # the link must not outlive this page
    return response


@login_required
@require_POST
def member_change(request, slug, membership_id):
    project, role = permissions.project_or_404(request.user, slug)
    permissions.require(permissions.can_manage(role))
    membership = get_object_or_404(Membership.objects.select_related("user"), project=project,
                                   pk=membership_id)
    try:
        if request.POST.get("remove"):
            membership_service.member_remove(by=request.user, membership=membership)
            messages.success(request, _("Removed %(name)s from the project.")
                             % {"name": membership.user.get_username()})
        else:
            before = membership.role
            wanted = request.POST.get("role", "")
            membership_service.member_set(by=request.user, project=project, user=membership.user,
                                  role=wanted)
            if before == wanted:
                messages.info(request, _("%(name)s is already %(role)s; nothing changed.")
                              % {"name": membership.user.get_username(),
                                 "role": Membership.Role(wanted).label})
            else:
                messages.success(request, _("Changed %(name)s's role from %(before)s to "
                                            "%(role)s.")
                                 % {"name": membership.user.get_username(),
                                    "before": Membership.Role(before).label,
                                    "role": Membership.Role(wanted).label})
    except ValidationError as exc:
        messages.error(request, explain(exc))
    if not permissions.can_manage(permissions.role_in(request.user, project)):
        return redirect("projects:dashboard")  # removed or demoted themselves: not theirs now
    return redirect("projects:members", slug=slug)


@login_required
@require_POST
def member_reinvite(request, slug, membership_id):
    """A new set-password link for a member who never chose a password (the first link
    expired or was lost); shown once, e-mailed when there is an address, audited."""
    project, role = permissions.project_or_404(request.user, slug)
    permissions.require(permissions.can_manage(role))
    membership = get_object_or_404(Membership.objects.select_related("user"), project=project,
                                   pk=membership_id)
    user = membership.user
    if not membership_service.can_reinvite(by=request.user, user=user):
        messages.error(request, _("%(name)s has chosen a password already; they reset it "
                                  "themselves, or a superuser does.")
                       % {"name": user.get_username()})
        return redirect("projects:members", slug=slug)
    link = request.build_absolute_uri(membership_service.invite_path(user))
    membership_service.invite_renew(by=request.user, project=project, user=user)
    emailed = membership_service.invite_send(user=user, link=link, project=project,
                                             by=request.user)
    invite = {"user": user, "link": link, "emailed": emailed, "renewed": True,
              "role": Membership.Role(membership.role).label,
              "days": max(1, settings.PASSWORD_RESET_TIMEOUT // 86400)}
    return _members_page(request, project, role, invite=invite)


# --- Isolation, export, erasure -------------------------------------------------------------------


@login_required
def isolation_page(request, slug):
    """The project's prefix and bucket, and the IAM-style policies that confine it."""
    project, role = permissions.project_or_404(request.user, slug)
    permissions.require(permissions.can_manage(role))
    agents = list(Agent.objects.filter(project=project).order_by("name"))
    if request.method == "POST":
        try:
            found = isolation.check_and_record([project], ran_by=request.user.get_username())
        except errors.StoreError as exc:
            messages.error(request, exc.message)
        else:
            (messages.warning if found else messages.success)(
                request, ngettext("Isolation check: %(count)d finding.",
                                  "Isolation check: %(count)d findings.", len(found)) % {"count": len(found)}
                if found else _("Isolation check: every object has an owner and every record its "
                                "object."))
        return redirect("projects:isolation", slug=slug)
    wanted = request.GET.get("policy")
    if wanted:
        if wanted == "project":
            document, name = isolation.project_policy(project), f"{project.slug}-console"
        else:
            agent = next((a for a in agents if a.slug == wanted), None)
            if agent is None:
                raise Http404("No such agent.")
            document, name = credentials.runner_policy(agent), f"{project.slug}-{agent.slug}-runner"
        response = HttpResponse(json.dumps(document, indent=2),
                                content_type="application/json; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{name}-policy.json"'
        return response
    for agent in agents:
        agent.access = credentials.runner_access(agent)
    return render(request, "projects/isolation.html", {
        "project": project, "role": role, "agents": agents,
        "bucket": isolation.bucket_of(project),
        "project_policy": json.dumps(isolation.project_policy(project), indent=2),
        "last_check": project.isolation_checks.first(),
    })


@login_required
def project_export(request, slug):
    """A zip of the project's memory as it stands in S3, plus history.json."""
    project, role = permissions.project_or_404(request.user, slug)
    permissions.require(permissions.can_review(role))
    out = tempfile.SpooledTemporaryFile(max_size=32 * 1024 * 1024)
    try:
        exports.project_export(by=request.user, project=project, out=out)
    except errors.StoreError as exc:
        out.close()
        messages.error(request, _("%(problem)s No export was made.") % {"problem": exc.message})
        return redirect("projects:project_detail", slug=slug)
    out.seek(0)
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    return FileResponse(out, as_attachment=True, filename=f"{project.slug}-memory-{stamp}.zip",
                        content_type="application/zip")


@login_required
def profile_erase(request, slug, user_id):
    """Erase one employee's profile memory in this project, after a confirmation."""
    project, role = permissions.project_or_404(request.user, slug)
    permissions.require(permissions.can_manage(role))
    # A member, or someone who left the project and whose profile is still in it.
    person = get_object_or_404(
        get_user_model().objects.filter(
            Q(memberships__project=project)
            | Q(memory_files__project=project, memory_files__scope=MemoryFile.Scope.USER)).distinct(),
        pk=user_id)
    # One action for the person everywhere the admin may erase (a GDPR request is about a
    # person, not a project): every such project, picked by default.
    choices = erasure.person_projects(person, by=request.user)
    files = MemoryFile.objects.filter(project__in=choices, scope=MemoryFile.Scope.USER,
                                      user=person)
    revisions = Revision.objects.filter(file__in=files).count()
    form = EraseForm(request.POST or None, username=person.get_username(), projects=choices)
    standing = erasure.holds_over(person, choices)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            picked = [p for p in choices if p.slug in form.cleaned_data["projects"]]
            try:
                done = erasure.profile_erase(by=request.user, user=person,
                                                reason=form.cleaned_data["reason"],
                                                projects=picked)
            except ValidationError as exc:
                form.add_error("reason", exc)
            except errors.Held as exc:
                form.add_error(None, exc.message)
            except errors.StoreError as exc:
                form.add_error(None, _("%(problem)s Some objects may be gone already; run the "
                                       "erasure again to finish it.") % {"problem": exc.message})
            else:
                drafts.saved(request, "erase", project.pk, person.pk)
                messages.success(request, _(
                    "Erased %(name)s's profile in %(projects)s: %(revisions)s, %(objects)s. The "
                    "audit trail keeps who, when and why.") % {
                    "name": person.get_username(), "projects": ", ".join(done.projects),
                    "revisions": ngettext("%(count)d revision", "%(count)d revisions",
                                          done.revisions) % {"count": done.revisions},
                    "objects": ngettext("%(count)d object", "%(count)d objects",
                                        done.objects) % {"count": done.objects}})
                return redirect("projects:people", slug=slug)
        status = 400
    return render(request, "projects/profile_erase.html", {
        "project": project, "role": role, "person": person, "form": form, "holds": standing,
        "file_count": files.count(), "revision_count": revisions}, status=status)


# --- Projects and agents --------------------------------------------------------------------------


@login_required
def project_new(request):
    """Superusers open projects; the creator becomes the project's first admin."""
    permissions.require(request.user.is_superuser)
    form = NewProjectForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            project = setup.project_create(by=request.user, **form.cleaned_data)
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            drafts.saved(request, "project-new")
            messages.success(request, _("Created %(name)s. Add members and agents next.")
                             % {"name": project.name})
            return redirect("projects:project_detail", slug=project.slug)
    return render(request, "projects/project_form.html", {"form": form, "creating": True},
                  status=400 if form.errors else 200)


@login_required
def project_settings(request, slug):
    project, role = permissions.project_or_404(request.user, slug)
    permissions.require(permissions.can_manage(role))
    if request.method == "POST" and request.POST.get("archive") in ("1", "0"):
        archived = request.POST["archive"] == "1"
        setup.archive_set(by=request.user, target=project, archived=archived)
        messages.success(request, _("Archived %(name)s: it is hidden from lists and its agents "
                                    "get no prompt. Bring it back here at any time.")
                         % {"name": project.name} if archived
                         else _("%(name)s is back.") % {"name": project.name})
        return redirect("projects:project_detail", slug=slug)
    form = ProjectForm(request.POST or None, initial={"name": project.name,
                                                      "description": project.description})
    if request.method == "POST" and form.is_valid():
        setup.project_update(by=request.user, project=project, **form.cleaned_data)
        drafts.saved(request, "project", project.pk)
        messages.success(request, _("Saved the project's settings."))
        return redirect("projects:project_detail", slug=slug)
    return render(request, "projects/project_form.html", {
        "form": form, "project": project, "role": role}, status=400 if form.errors else 200)


@login_required
def agent_new(request, slug):
    project, role = permissions.project_or_404(request.user, slug)
    permissions.require(permissions.can_manage(role))
    form = AgentForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            agent = setup.agent_create(by=request.user, project=project, **form.cleaned_data)
        except ValidationError as exc:
            form.add_error("slug", exc)
        else:
            drafts.saved(request, "agent-new", project.pk)
            messages.success(request, _("Created %(name)s. Write its SOUL.md, then give its runner "
                                        "a token under Settings.") % {"name": agent.name})
            return redirect("projects:agent_detail", slug=slug, agent_slug=agent.slug)
    return render(request, "projects/agent_form.html", {
        "form": form, "project": project, "role": role}, status=400 if form.errors else 200)


# --- Search ----------------------------------------------------------------------------------------




@login_required
def search(request, slug):
    """Search a project's memory: current files, and old revisions on request."""
    project, role = permissions.project_or_404(request.user, slug)
    permissions.require(permissions.can_review(role))
    query = request.GET.get("q", "").strip()[:200]
    history = request.GET.get("history") == "1"
    terms = memory_search.search_terms(query)
    context = {"project": project, "role": role, "query": query, "history": history,
               "terms": terms}
    if query and not terms:
        context["error"] = _("Type at least one word to search for.")
    elif terms:
        hits = memory_search.search_memory(project=project, query=query, history=history)
        page = paging.page_of(hits, paging.SEARCH, request)
        context["page"] = page
        context["hits"] = [(hit, highlighted(memory_search.excerpt(hit.text, terms)))
                           for hit in page]
        audit_read(user=request.user, role=role, action="read.search", project=project,
                   details={"query": query, "history": history, "results": page.paginator.count})
    return render(request, "projects/search.html", context, status=400 if "error" in context else 200)
