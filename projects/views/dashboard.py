"""The first page after login: each role's work, in the projects the person is in."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from projects.governance import dashboard


@login_required
def dashboard_view(request):
    return render(request, "projects/dashboard.html", dashboard.dashboard(request.user))
