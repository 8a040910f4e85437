"""The console's forms, one module per kind of page: files (the editor and the workspace),
setup (projects and agents, an agent's settings as JSON, tokens), governance (audit filters,
members, accounts, erasure), lifecycle (retention rules, legal holds), webhooks. Validation
says what is wrong at the field; the text typed is always sent back to the page.

An agent's manifest and hook policy edited as rows are projects/agent_forms.py."""

from projects.forms.files import (
    DeleteForm,
    EditForm,
    NewWorkspaceFileForm,
    ResolveForm,
    RestoreForm,
)
from projects.forms.governance import AccountForm, AuditFilterForm, EraseForm, MemberForm
from projects.forms.lifecycle import HoldForm, HoldReleaseForm, RetentionRuleForm
from projects.forms.setup import AgentForm, JsonSettingForm, NewProjectForm, ProjectForm, TokenForm
from projects.forms.webhooks import WebhookForm

__all__ = [
    "AccountForm",
    "AgentForm",
    "AuditFilterForm",
    "DeleteForm",
    "EditForm",
    "EraseForm",
    "HoldForm",
    "HoldReleaseForm",
    "JsonSettingForm",
    "MemberForm",
    "NewProjectForm",
    "NewWorkspaceFileForm",
    "ProjectForm",
    "ResolveForm",
    "RestoreForm",
    "RetentionRuleForm",
    "TokenForm",
    "WebhookForm",
]
