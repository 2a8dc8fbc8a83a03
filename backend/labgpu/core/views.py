import json
from functools import lru_cache
from html import escape
from pathlib import Path

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import ensure_csrf_cookie

PLACEHOLDER = """<!doctype html><html><head><meta charset="utf-8"><title>LabGPU</title></head>
<body><h1>LabGPU</h1><p>The web app is not built yet: run <code>make run</code> (it builds it)
or <code>make dev</code>. The API lives at <a href="/api/docs/">/api/docs/</a>.</p></body></html>"""


# index.html preloads /api/v1/me/ so the first page learns who is signed in while its scripts
# download. With no session that read can only answer 401, which the browser logs in its console
# on every visit to the login page: the page says "signed out" instead, and the SPA asks nothing.
ME_PRELOAD = b'<link rel="preload" href="/api/v1/me/" as="fetch" crossorigin="anonymous" />'
SIGNED_OUT = b'<meta name="labgpu-session" content="signed-out" />'


# The dashboard (`/`, most visits' first page) starts its code and its first read with the HTML,
# beside /me/, instead of after the entry script has run: at 4× CPU slowdown the read began
# ≈400 ms into the load and the page waited on it (docs/benchmarks.md). The URL is the one the
# SPA asks, byte for byte (`prefetchMyUpcomingBookings`: openapi-fetch writes the query in this
# order); the e2e test `pages.spec.mjs` fails when the page's request and this differ (a preload
# that no request takes is fetched twice). The chunk is Vite's group of that name (vite.config.ts).
FIRST_PAGE_PRELOADS = {
    "/": {
        "chunk": "dashboard-shared",
        "reads": [
            "/api/v1/bookings/?mine=true&status=pending&status=scheduled&status=provisioning"
            "&status=ready&status=ending&ordering=start&page_size=100"
        ],
    }
}


def _first_page_preloads(path: str) -> bytes:
    """`<link>`s that fetch the page's chunk, its style sheets and its first reads with the HTML."""
    wanted = FIRST_PAGE_PRELOADS.get(path)
    if not wanted:
        return b""
    links = [
        f'<link rel="preload" href="{escape(url)}" as="fetch" crossorigin="anonymous" />'
        for url in wanted["reads"]
    ]
    manifest = settings.FRONTEND_DIST / ".vite" / "manifest.json"
    if manifest.exists():
        links += _chunk_links(manifest, manifest.stat().st_mtime_ns, wanted["chunk"])
    return "".join(f"\n    {link}" for link in links).encode()


@lru_cache(maxsize=8)
def _chunk_links(manifest: Path, stamp: int, name: str) -> tuple[str, ...]:
    """The preloads of Vite's chunk `name` (its file and style sheets), read from the build's
    manifest once per build (`stamp`: the file's mtime)."""
    links = []
    for chunk in json.loads(manifest.read_bytes()).values():
        if chunk.get("name") != name or chunk.get("isEntry"):
            continue
        # As Vite's own links (`crossorigin`): a preload is taken only by a request of its mode.
        links.append(f'<link rel="modulepreload" crossorigin href="/{escape(chunk["file"])}" />')
        links += [
            f'<link rel="preload" as="style" crossorigin href="/{escape(css)}" />'
            for css in chunk.get("css", [])
        ]
    return tuple(links)


@ensure_csrf_cookie
def spa_index(request: HttpRequest) -> HttpResponse:
    """Serve the built SPA's index.html for any app route (its assets come from WhiteNoise)."""
    index = settings.FRONTEND_DIST / "index.html"
    if not index.exists():
        return HttpResponse(PLACEHOLDER)
    html = index.read_bytes()
    if not request.user.is_authenticated:
        html = html.replace(ME_PRELOAD, b"").replace(b"</head>", SIGNED_OUT + b"\n  </head>", 1)
    else:
        html = html.replace(ME_PRELOAD, ME_PRELOAD + _first_page_preloads(request.path), 1)
    response = HttpResponse(html, content_type="text/html; charset=utf-8")
    # Reading the session added Vary: Cookie, so a cache never gives one visitor's page to another.
    response["Cache-Control"] = "no-cache"
    return response
