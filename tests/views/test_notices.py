"""Notices and page furniture every page shares (base.html): a skip link to the content, and
Django messages as alerts a screen reader announces (errors interrupt, the rest waits)."""

import re

import pytest
from django.urls import reverse

from projects.runners import bearer

pytestmark = pytest.mark.django_db


def _settings_after(client, url, data):
    return client.post(url, data, follow=True).content.decode()


def test_skip_link_is_the_first_focusable_element_and_targets_main(client):
    page = client.get(reverse("login")).content.decode()
    body = page[page.index("<body") :]
    first = re.search(r"<(a|button|input|select|textarea)\b[^>]*>", body).group(0)
    assert 'class="skip-link"' in first and 'href="#content"' in first
    assert '<main id="content"' in page


def test_error_message_is_an_alert_and_success_a_status(client, s3, admin, agent):
    client.force_login(admin)
    kwargs = {"slug": agent.project.slug, "agent_slug": agent.slug}
    page = _settings_after(client, reverse("projects:token_create", kwargs=kwargs), {"name": ""})
    assert re.search(r'<p class="notice error" role="alert">Give the token a name', page)

    token, _ = bearer.token_create(agent=agent, name="nightly", created_by=admin)
    page = _settings_after(
        client, reverse("projects:token_revoke", kwargs={**kwargs, "token_id": token.pk}), {}
    )
    assert re.search(r'<p class="notice success" role="status">Revoked', page)
