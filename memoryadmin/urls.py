from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path

from projects.mcp import views as mcp_views
from projects.runners.api import API_V1, api
from projects.scim import views as scim_views
from projects.sso import views as sso_views
from projects.views import signin

urlpatterns = [
    path("accounts/login/", signin.SignInView.as_view(), name="login"),
    # Also ends the identity provider's session when the sign-in came from it.
    path("accounts/logout/", sso_views.logout, name="logout"),
    path("sso/", include("projects.sso.urls")),  # single sign-on: begin, the provider's answer
    # The one-time set-password link of an account an admin created (members page).
    path(
        "accounts/set-password/<uidb64>/<token>/",
        signin.SetPasswordView.as_view(),
        name="password_reset_confirm",
    ),
    path("accounts/lockouts/", signin.lockouts_view, name="lockouts"),
    path(
        "accounts/set-password/done/",
        auth_views.PasswordResetCompleteView.as_view(),
        name="password_reset_complete",
    ),
    # Django admin's own login form would be a second way to check passwords, outside the
    # sign-in guard's first middleware and without device cookies: the console's login serves it.
    path("admin/login/", signin.SignInView.as_view()),
    path("admin/", admin.site.urls),
    path(API_V1, api.urls),
    # The company's memory over MCP (projects/mcp/): the endpoint, for one agent or any, and
    # its protected resource metadata (RFC 9728), at the root and path-suffixed.
    re_path(r"^mcp/?$", mcp_views.endpoint, name="mcp"),
    re_path(r"^mcp/(?P<project>[-\w]+)/(?P<agent>[-\w]+)/?$", mcp_views.endpoint, name="mcp_agent"),
    re_path(r"^\.well-known/oauth-protected-resource(?P<path>/.*)?$", mcp_views.resource_metadata),
    # SCIM 2.0 provisioning for identity providers (projects/scim/): Users and Groups.
    re_path(r"^scim/v2/?(?P<rest>.*)$", scim_views.scim, name="scim"),
    path("i18n/", include("django.conf.urls.i18n")),  # set_language: the header's switcher
    path("", include("projects.urls")),
]
