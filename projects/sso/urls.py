"""Under the "social" namespace that social-auth reverses ("social:complete")."""

from django.urls import path

from projects.sso import views

app_name = "social"

urlpatterns = [
    path("login/<str:backend>/", views.begin, name="begin"),
    path("complete/<str:backend>/", views.complete, name="complete"),
]
