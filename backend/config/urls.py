from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path
from django.utils.csp import CSP
from django.views.decorators.csp import csp_override
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerSplitView,
)

from labgpu.core.views import spa_index

api_v1 = [
    path("", include("labgpu.accounts.urls")),
    path("", include("labgpu.pricing.urls")),  # before catalog: instance-types/<id>/prices/
    path("", include("labgpu.catalog.urls")),
    path("", include("labgpu.bookings.urls")),
    path("", include("labgpu.quotas.urls")),
    path("", include("labgpu.budgets.urls")),
    path("", include("labgpu.audit.urls")),
    path("", include("labgpu.provisioning.urls")),
    path("", include("labgpu.health.urls")),
    path("", include("labgpu.usage.urls")),
    path("", include("labgpu.feeds.urls")),
    path("", include("labgpu.invitations.urls")),
    path("", include("labgpu.sso.urls")),
    path("", include("labgpu.directory.urls")),
    path("", include("labgpu.chat.urls")),
    path("", include("labgpu.statements.urls")),
    path("", include("labgpu.waitlist.urls")),
]

urlpatterns = [
    path("api/v1/", include(api_v1)),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves Swagger UI's init script as a file: no inline script under CSP.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path(
        "api/redoc/",
        # ReDoc injects <style> elements; only its page allows inline styles.
        csp_override({**settings.SECURE_CSP, "style-src": [CSP.SELF, CSP.UNSAFE_INLINE]})(
            SpectacularRedocView.as_view(url_name="schema")
        )
        if getattr(settings, "SECURE_CSP", None)
        else SpectacularRedocView.as_view(url_name="schema"),
        name="api-redoc",
    ),
    # /healthz, /readyz, /metrics (outside /api/, not in the schema).
    path("", include("labgpu.ops.urls")),
    path("admin/", admin.site.urls),
    # OpenID Connect: the browser's way to the provider and back (labgpu.sso.oidc).
    path("oidc/", include("labgpu.sso.browser_urls")),
    # Everything else is the single-page app; its router handles the path.
    re_path(r"^(?!api/|admin/|static/|oidc/).*$", spa_index, name="spa"),
]

handler400 = "labgpu.api.exceptions.handler400"
handler403 = "labgpu.api.exceptions.handler403"
handler404 = "labgpu.api.exceptions.handler404"
handler500 = "labgpu.api.exceptions.handler500"
