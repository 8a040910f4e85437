"""A query compiled once (projects.prepared) gives what the ORM gives: the same instances,
every field converted, the select_related objects in place, in one query."""

import datetime as dt

import pytest
from django.db.models import Model
from django.utils import timezone

from projects.models import AgentToken
from projects.prepared import Prepared
from projects.runners import bearer

pytestmark = pytest.mark.django_db


def _fields(obj: Model) -> dict:
    return {field.attname: getattr(obj, field.attname) for field in obj._meta.concrete_fields}


def test_the_token_comes_with_its_agent_and_project_as_the_orm_makes_them(
    agent, make_user, django_assert_num_queries
):
    token, raw = bearer.token_create(agent=agent, name="runner", created_by=make_user("ops"))
    AgentToken.objects.filter(pk=token.pk).update(
        last_used_at=timezone.now(), expires_at=timezone.now() + dt.timedelta(days=1)
    )
    orm = AgentToken.objects.select_related("agent", "agent__project").get(pk=token.pk)
    with django_assert_num_queries(1):  # the lookup; no update (used a moment ago)
        found = bearer.token_authenticate(raw)
        project = found.agent.project  # cached, not fetched
    assert type(found) is AgentToken and found.pk == token.pk
    for mine, theirs in ((found, orm), (found.agent, orm.agent), (project, orm.agent.project)):
        assert _fields(mine) == _fields(theirs), type(mine).__name__
        assert mine._state.db == "default" and not mine._state.adding
    assert isinstance(found.expires_at, dt.datetime) and found.expires_at.tzinfo is not None


def test_no_row_is_none_and_a_value_must_be_a_parameter(agent):
    by_name = Prepared(lambda name: AgentToken.objects.filter(name=name), "name")
    assert by_name.first(name="nobody") is None
    folded = Prepared(lambda name: AgentToken.objects.all(), "name")
    with pytest.raises(ValueError, match="name"):
        folded.first(name="x")
