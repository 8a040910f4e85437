"""A bounded fuzz run of the runner API from its own OpenAPI description (schemathesis, in
process over WSGI): valid and invalid bodies for every endpoint, with a real token. No
answer may be a 500 or break the schema the API publishes."""

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from hypothesis import HealthCheck, settings

from memoryadmin.wsgi import application
from projects.audit import Actor
from projects.memory import store
from projects.runners import bearer

pytestmark = pytest.mark.django_db

schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", application)
# A generated body over MGC_API_MAX_BODY_BYTES is refused before it is parsed, with the 413 the
# description lists: a right answer to invalid data too.
_rejection = schema.config.checks.negative_data_rejection
_rejection.expected_statuses = [*_rejection.expected_statuses, "413"]


@pytest.fixture(autouse=True)
def _keep_the_test_connection():
    """Requests go through WSGI here, not Django's test client, so do what the client does:
    keep the test's database connection (and its transaction) open across requests."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def token(s3, project, agent, person, admin):
    store.file_create(
        project=project,
        scope="agent",
        agent=agent,
        path="SOUL.md",
        content="You are calm.\n",
        actor=Actor.system("t"),
    )
    _, raw = bearer.token_create(agent=agent, name="fuzz", created_by=admin)
    return raw


@schema.parametrize()
@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
def test_runner_api_survives_generated_requests(case, token):
    case.call_and_validate(headers={"Authorization": f"Bearer {token}"})
