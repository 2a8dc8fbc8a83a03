"""The embedded server's address reads the same in the settings, in `make` and in subprocesses."""

import dj_database_url
from django.db import connection

from config import embedded_db
from labgpu.core.testing import database_url


def test_the_embedded_url_names_the_socket_folder_the_settings_use():
    parsed = dj_database_url.parse(embedded_db.url())
    expected = embedded_db.settings_dict()
    assert parsed["HOST"] == expected["HOST"] == str(embedded_db.DATA_DIR)
    assert (parsed["NAME"], parsed["USER"], parsed["PORT"]) == ("labgpu", "postgres", "")


def test_a_subprocess_reaches_a_socket_folder_server_through_its_database_url(monkeypatch):
    for key, value in {"HOST": "/srv/lab gpu/pg", "PORT": "", "USER": "postgres",
                       "PASSWORD": "", "NAME": "test_labgpu"}.items():  # fmt: skip
        monkeypatch.setitem(connection.settings_dict, key, value)
    parsed = dj_database_url.parse(database_url())
    assert (parsed["HOST"], parsed["NAME"]) == ("/srv/lab gpu/pg", "test_labgpu")
    assert database_url(database="") == "postgres://postgres@%2Fsrv%2Flab%20gpu%2Fpg"
