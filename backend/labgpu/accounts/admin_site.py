"""The admin site, signing in through the same limits as the API login (issue 11 item 4)."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse

from labgpu.accounts.login_limits import InvalidCredentials, LoginThrottled, login_with_limits


class LimitedAdminAuthenticationForm(AdminAuthenticationForm):
    def clean(self) -> dict:
        username = self.cleaned_data.get("username")
        password = self.cleaned_data.get("password")
        if username is not None and password:
            try:
                self.user_cache = login_with_limits(
                    request=self.request, username=username, password=password
                )
            except LoginThrottled as throttled:
                self.request.login_throttled = throttled  # type: ignore[union-attr]
                raise ValidationError(throttled.message, code="throttled") from None
            except InvalidCredentials:
                raise self.get_invalid_login_error() from None
            self.confirm_login_allowed(self.user_cache)
        return self.cleaned_data


class LabGpuAdminSite(admin.AdminSite):
    login_form = LimitedAdminAuthenticationForm

    def login(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        response = super().login(request, extra_context)
        throttled = getattr(request, "login_throttled", None)
        if throttled is not None:
            # The form shows the message; the status and header tell scripts and proxies.
            response.status_code = 429
            response["Retry-After"] = str(throttled.retry_after_s)
        return response
