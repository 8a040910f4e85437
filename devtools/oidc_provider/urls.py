from django.contrib.auth import views as auth_views
from django.urls import include, path

from devtools.oidc_provider import views

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    # Before the toolkit's own: discovery that names introspection, introspection that
    # knows disabled people (views.py).
    path("o/.well-known/openid-configuration", views.Discovery.as_view()),
    path("o/introspect/", views.Introspection.as_view()),
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
    path("testing/users", views.users),
    path("testing/users/<str:username>/disable", views.user_disable),
    path("testing/users/<str:username>/delete", views.user_delete),
    path("testing/switches", views.switches),
    path("testing/client", views.client),
]
