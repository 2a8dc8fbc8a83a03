"""The SPA's index.html tells a signed-out visitor's first page that there is no session, so it
never asks /api/v1/me/ only to be answered 401 (logged in the browser's console at every visit
to the login page); a signed-in visitor's page preloads /me/ as before."""

import json
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


# Vite's manifest as `npm run build` writes it (build.manifest), cut to the entries that matter.
MANIFEST = {
    "index.html": {"file": "assets/index-DBMbRqg4.js", "name": "index", "isEntry": True},
    "_dashboard-shared-CpuncUF0.js": {
        "file": "assets/dashboard-shared-CpuncUF0.js",
        "name": "dashboard-shared",
        "imports": ["index.html"],
        "css": ["assets/dashboard-shared-Bzp4DSzz.css"],
    },
    "src/views/quotas/QuotaListView.vue": {
        "file": "assets/QuotaListView-B2f0aW1c.js",
        "name": "QuotaListView",
        "isDynamicEntry": True,
    },
}
BOOKINGS_PRELOAD = (
    b'<link rel="preload" href="/api/v1/bookings/?mine=true&amp;status=pending&amp;status=scheduled'
    b"&amp;status=provisioning&amp;status=ready&amp;status=ending&amp;ordering=start&amp;page_size=100"
    b'" as="fetch" crossorigin="anonymous" />'
)
CHUNK_PRELOAD = (
    b'<link rel="modulepreload" crossorigin href="/assets/dashboard-shared-CpuncUF0.js" />'
)
CSS_PRELOAD = (
    b'<link rel="preload" as="style" crossorigin href="/assets/dashboard-shared-Bzp4DSzz.css" />'
)


@pytest.fixture
def with_manifest(built):
    (built / ".vite").mkdir()
    (built / ".vite" / "manifest.json").write_text(json.dumps(MANIFEST))
    return built


def test_the_dashboard_preloads_its_chunk_and_first_read_with_me(client, with_manifest, alice):
    client.force_login(alice)
    page = client.get("/")
    head = page.content.split(b"</head>")[0]
    for link in (BOOKINGS_PRELOAD, CHUNK_PRELOAD, CSS_PRELOAD):
        assert head.count(link) == 1, link
    # Beside /me/'s, before the scripts: the browser starts them as soon as it reads them.
    assert head.index(ME_PRELOAD) < head.index(BOOKINGS_PRELOAD) < head.index(b"<script")


def test_other_pages_and_signed_out_visitors_preload_none_of_it(client, with_manifest, alice):
    signed_out = client.get("/")
    client.force_login(alice)
    elsewhere = client.get("/quotas")
    for page in (signed_out, elsewhere):
        assert b"/api/v1/bookings/" not in page.content
        assert b"dashboard-shared" not in page.content


def test_without_a_manifest_the_read_is_still_preloaded(client, built, alice):
    client.force_login(alice)
    page = client.get("/")
    assert BOOKINGS_PRELOAD in page.content
    assert b"modulepreload" not in page.content
