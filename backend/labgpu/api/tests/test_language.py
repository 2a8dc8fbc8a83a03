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
