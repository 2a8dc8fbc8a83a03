"""Which language the server answers a request in.

The page shows, the profile, the browser: the SPA names the language it shows in
`X-LabGPU-Language` (a person may pick Chinese in this browser while their profile, which e-mail
and chat follow, says English), and the answer is for the person reading that page. Without it
the profile's language counts once the caller is known (labgpu.accounts.authentication), and
LocaleMiddleware's choice from Accept-Language before that.
"""

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import translation

SHOWN_LANGUAGE_HEADER = "X-LabGPU-Language"


def shown_language(request: HttpRequest) -> str | None:
    """The language the page sending `request` shows, when it is one LabGPU speaks."""
    value = request.headers.get(SHOWN_LANGUAGE_HEADER, "").strip().lower()
    return value if value in {code for code, _ in settings.LANGUAGES} else None


class ShownLanguageMiddleware:
    """After LocaleMiddleware: the page's own language beats Accept-Language (and the profile)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        shown = shown_language(request)
        if shown:
            translation.activate(shown)
            request.LANGUAGE_CODE = shown
        return self.get_response(request)
