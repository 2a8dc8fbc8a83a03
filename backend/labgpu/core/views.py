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


@ensure_csrf_cookie
def spa_index(request: HttpRequest) -> HttpResponse:
    """Serve the built SPA's index.html for any app route (its assets come from WhiteNoise)."""
    index = settings.FRONTEND_DIST / "index.html"
    if not index.exists():
        return HttpResponse(PLACEHOLDER)
    html = index.read_bytes()
    if not request.user.is_authenticated:
        html = html.replace(ME_PRELOAD, b"").replace(b"</head>", SIGNED_OUT + b"\n  </head>", 1)
    response = HttpResponse(html, content_type="text/html; charset=utf-8")
    # Reading the session added Vary: Cookie, so a cache never gives one visitor's page to another.
    response["Cache-Control"] = "no-cache"
    return response
