"""The SPA's index.html tells a signed-out visitor's first page that there is no session, so it
never asks /api/v1/me/ only to be answered 401 (logged in the browser's console at every visit
to the login page); a signed-in visitor's page preloads /me/ as before."""

from pathlib import Path

import pytest

from labgpu.core.views import ME_PRELOAD, SIGNED_OUT

# The preload line as the SPA's own frontend/index.html has it (the view matches it byte for byte).
INDEX = Path(__file__).resolve().parents[4] / "frontend" / "index.html"


@pytest.fixture
def built(tmp_path, settings):
    (tmp_path / "index.html").write_bytes(INDEX.read_bytes())
    settings.FRONTEND_DIST = tmp_path
    return tmp_path


def test_the_source_index_preloads_me_as_the_view_expects():
    assert ME_PRELOAD in INDEX.read_bytes()


@pytest.mark.django_db
def test_a_signed_out_page_says_so_and_preloads_no_me(client, built):
    page = client.get("/login")
    assert page.status_code == 200
    assert ME_PRELOAD not in page.content
    assert SIGNED_OUT in page.content
    assert "Cookie" in page["Vary"]


def test_a_signed_in_page_preloads_me(client, built, alice):
    client.force_login(alice)
    page = client.get("/bookings/new")
    assert ME_PRELOAD in page.content
    assert SIGNED_OUT not in page.content
    assert "Cookie" in page["Vary"]
