from django.urls import path

from projects.views import browse, files, runs

app_name = "projects"

urlpatterns = [
    path("", browse.project_list, name="project_list"),
    path("preview/", files.preview, name="preview"),
    path("p/<slug:slug>/", browse.project_detail, name="project_detail"),
    path("p/<slug:slug>/agents/<slug:agent_slug>/", browse.agent_detail, name="agent_detail"),
    path("p/<slug:slug>/agents/<slug:agent_slug>/settings/", runs.agent_settings,
         name="agent_settings"),
    path("p/<slug:slug>/agents/<slug:agent_slug>/tokens/", runs.token_create, name="token_create"),
    path("p/<slug:slug>/agents/<slug:agent_slug>/tokens/<int:token_id>/revoke/", runs.token_revoke,
         name="token_revoke"),
    path("p/<slug:slug>/simulate/", runs.simulate, name="simulate"),
    path("p/<slug:slug>/sessions/", runs.session_list, name="session_list"),
    path("p/<slug:slug>/sessions/<uuid:session_id>/", runs.session_detail, name="session_detail"),
    path("p/<slug:slug>/proposals/", runs.proposal_list, name="proposal_list"),
    path("p/<slug:slug>/proposals/<int:proposal_id>/decide/", runs.proposal_decide,
         name="proposal_decide"),
    path("p/<slug:slug>/people/", browse.people, name="people"),
    path("p/<slug:slug>/workspace/", browse.workspace, name="workspace"),
    path("p/<slug:slug>/workspace/new/", browse.workspace_new, name="workspace_new"),
    path("p/<slug:slug>/open/", browse.file_open, name="file_open"),
    path("p/<slug:slug>/f/<uuid:file_id>/", files.file_detail, name="file_detail"),
    path("p/<slug:slug>/f/<uuid:file_id>/edit/", files.file_edit, name="file_edit"),
    path("p/<slug:slug>/f/<uuid:file_id>/history/", files.file_history, name="file_history"),
    path("p/<slug:slug>/f/<uuid:file_id>/diff/", files.file_diff, name="file_diff"),
    path("p/<slug:slug>/f/<uuid:file_id>/delete/", files.file_delete, name="file_delete"),
    path("p/<slug:slug>/f/<uuid:file_id>/r/<int:number>/", files.revision_detail,
         name="revision_detail"),
    path("p/<slug:slug>/f/<uuid:file_id>/r/<int:number>/raw/", files.revision_raw,
         name="revision_raw"),
    path("p/<slug:slug>/f/<uuid:file_id>/r/<int:number>/restore/", files.file_restore,
         name="file_restore"),
]
