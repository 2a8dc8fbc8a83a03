from django.conf import settings
from django.http import FileResponse, HttpRequest, HttpResponse
from django.views.decorators.csrf import ensure_csrf_cookie

PLACEHOLDER = """<!doctype html><html><head><meta charset="utf-8"><title>LabGPU</title></head>
<body><h1>LabGPU</h1><p>The web app is not built yet: run <code>make run</code> (it builds it)
or <code>make dev</code>. The API lives at <a href="/api/docs/">/api/docs/</a>.</p></body></html>"""


@ensure_csrf_cookie
def spa_index(request: HttpRequest) -> HttpResponse:
    """Serve the built SPA's index.html for any app route (its assets come from WhiteNoise)."""
    index = settings.FRONTEND_DIST / "index.html"
    if index.exists():
        response = FileResponse(index.open("rb"), content_type="text/html; charset=utf-8")
        response["Cache-Control"] = "no-cache"
        return response
    return HttpResponse(PLACEHOLDER)
