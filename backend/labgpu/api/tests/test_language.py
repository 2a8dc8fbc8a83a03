"""The API answers in the caller's language: their profile's once they are known (session or
token), the browser's Accept-Language before that (issue 24 item 5)."""

import re
from datetime import timedelta

from rest_framework.test import APIClient

from conftest import client_for

URL = "/api/v1/bookings/"


def book_in_the_past(client, pool, tomorrow, **headers):
    start = tomorrow - timedelta(days=2)
    body = {
        "pool": pool.pk,
        "start": start.isoformat(),
        "end": (start + timedelta(hours=1)).isoformat(),
        "purpose": "x",
    }
    return client.post(URL, body, format="json", **headers)


def test_a_signed_in_reader_of_chinese_is_answered_in_chinese_whatever_the_browser(
    alice, pool, quotas, tomorrow
):
    alice.language = "zh-hans"
    alice.save(update_fields=["language"])
    client = APIClient()
    client.force_login(alice)

    response = book_in_the_past(client, pool, tomorrow, HTTP_ACCEPT_LANGUAGE="en")

    assert response.status_code == 400
    assert response.json()["code"] == "start_in_past"
    assert response.json()["message"] == "开始时间已经过去。"
    assert response.json()["extra"]["fields"]["start"] == ["开始时间已经过去。"]
    assert response["Content-Language"] == "zh-hans"


def test_a_token_speaks_its_owners_language(alice, pool, quotas, tomorrow):
    alice.language = "zh-hans"
    alice.save(update_fields=["language"])
    client = client_for(alice, scopes=["book"])

    response = book_in_the_past(client, pool, tomorrow, HTTP_ACCEPT_LANGUAGE="en")

    assert response.json()["message"] == "开始时间已经过去。"


def test_a_reader_of_english_is_answered_in_english_from_a_chinese_browser(
    alice, pool, quotas, tomorrow
):
    client = APIClient()
    client.force_login(alice)

    response = book_in_the_past(client, pool, tomorrow, HTTP_ACCEPT_LANGUAGE="zh-CN")

    assert response.json()["message"] == "The start is in the past."
    assert response["Content-Language"] == "en"


def test_before_sign_in_the_browsers_language_answers(db):
    response = APIClient().get("/api/v1/me/", HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9")

    assert response.status_code in (401, 403)
    assert re.search(r"[\u4e00-\u9fff]", response.json()["message"])


# Every error the framework answers, not only the services' (issue 24 item 5): a zh-Hans reader
# from an English browser, each answered in Chinese; the same request from an English reader
# answered in English. "Chinese" is checked by script, not by our own catalogue's text.
CJK = re.compile(r"[\u4e00-\u9fff]")


def _as(user, language, **client_kwargs):
    user.language = language
    user.save(update_fields=["language"])
    client = APIClient(**client_kwargs)
    client.force_login(user)
    return client


def _framework_errors(client, pool):
    yield "no such booking", client.get("/api/v1/bookings/999999/", HTTP_ACCEPT_LANGUAGE="en")
    yield "no such path", client.get("/api/v1/no-such-path/", HTTP_ACCEPT_LANGUAGE="en")
    yield "method", client.delete("/api/v1/me/", HTTP_ACCEPT_LANGUAGE="en")
    yield (
        "several fields",
        client.post(URL, {"pool": "x"}, format="json", HTTP_ACCEPT_LANGUAGE="en"),
    )
    yield (
        "broken JSON",
        client.post(URL, "{", content_type="application/json", HTTP_ACCEPT_LANGUAGE="en"),
    )
    yield (
        "a 400-day usage range",
        client.get(
            "/api/v1/usage/",
            {"start": "2026-01-01T00:00:00Z", "end": "2026-01-01T00:00:00Z"},
            HTTP_ACCEPT_LANGUAGE="en",
        ),
    )


def test_framework_errors_read_in_a_chinese_readers_language(alice, pool):
    client = _as(alice, "zh-hans")
    for what, response in _framework_errors(client, pool):
        assert response.status_code >= 400, what
        body = response.json()
        assert CJK.search(body["message"]), (what, body)
        assert response["Content-Language"] == "zh-hans", what
        assert re.search(r"[A-Za-z]{3,} [a-z]{3,}", body["message"]) is None, (what, body)


def test_framework_errors_read_in_an_english_readers_language(alice, pool):
    client = _as(alice, "en")
    for what, response in _framework_errors(client, pool):
        body = response.json()
        assert not CJK.search(body["message"]), (what, body)


def test_invalid_input_names_the_fields_inside_the_sentence(alice, pool):
    client = _as(alice, "zh-hans")
    body = client.post(URL, {"pool": "x"}, format="json").json()
    assert body["code"] == "invalid"
    assert body["message"].startswith("以下字段的输入无效：")
    assert "pool" in body["message"] and "end" in body["message"]


def test_csrf_refusals_read_in_the_readers_language_on_drf_and_django_paths(alice):
    from django.test import Client

    drf = _as(alice, "zh-hans", enforce_csrf_checks=True)
    on_drf = drf.post(URL, {}, format="json", HTTP_ACCEPT_LANGUAGE="en")
    django_client = Client(enforce_csrf_checks=True)
    django_client.force_login(alice)
    # The login view is CSRF-checked by Django's middleware (CSRF_FAILURE_VIEW), not by DRF.
    on_django = django_client.post("/api/v1/auth/login/", {}, HTTP_ACCEPT_LANGUAGE="en")
    for response in (on_drf, on_django):
        assert response.status_code == 403
        body = response.json()
        assert body["code"] == "csrf_failed"
        assert CJK.search(body["message"]), body
        assert "CSRF Failed" not in body["message"]


def test_a_refused_token_is_told_so_in_the_browsers_language(db):
    for header in ("Bearer lgp_not-a-token", "Bearer lgp_a lgp_b"):
        response = APIClient().get(
            "/api/v1/me/", HTTP_AUTHORIZATION=header, HTTP_ACCEPT_LANGUAGE="zh-CN"
        )
        assert response.status_code == 401
        assert CJK.search(response.json()["message"]), response.json()


def test_throttling_reads_in_the_readers_language(alice, monkeypatch):
    from django.core.cache import cache

    from labgpu.api.throttling import PrincipalRateThrottle

    client = _as(alice, "zh-hans")
    cache.clear()
    monkeypatch.setattr(PrincipalRateThrottle, "rate", "1/min", raising=False)
    client.get("/api/v1/me/", HTTP_ACCEPT_LANGUAGE="en")
    response = client.get("/api/v1/me/", HTTP_ACCEPT_LANGUAGE="en")
    cache.clear()
    assert response.status_code == 429
    assert CJK.search(response.json()["message"]), response.json()


def test_the_page_shows_chinese_so_the_answer_is_chinese_whatever_the_profile_says(
    alice, pool, quotas, tomorrow
):
    """A person who picked 简体中文 in this browser while their profile (e-mail, chat) says
    English reads the SPA's page: the SPA names its language in X-LabGPU-Language."""
    client = _as(alice, "en")
    response = book_in_the_past(
        client, pool, tomorrow, HTTP_ACCEPT_LANGUAGE="en", HTTP_X_LABGPU_LANGUAGE="zh-hans"
    )
    assert response.json()["message"] == "开始时间已经过去。"
    assert response["Content-Language"] == "zh-hans"
    unknown_path = client.get("/api/v1/no-such-path/", HTTP_X_LABGPU_LANGUAGE="zh-hans")
    assert CJK.search(unknown_path.json()["message"])
    signed_out = APIClient().get("/api/v1/me/", HTTP_X_LABGPU_LANGUAGE="zh-hans")
    assert CJK.search(signed_out.json()["message"])
    # Without the header, the profile's language, and a language LabGPU does not speak is ignored.
    english = book_in_the_past(client, pool, tomorrow, HTTP_X_LABGPU_LANGUAGE="fr")
    assert english.json()["message"] == "The start is in the past."
