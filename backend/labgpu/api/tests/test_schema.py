"""The committed OpenAPI schema is what the code generates; the docs work offline."""

import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import translation

SCHEMA = Path(__file__).resolve().parents[3] / "openapi.yaml"


def test_committed_schema_matches_the_code():
    generated = io.StringIO()
    # In English, as `make schema` writes it, whatever language an earlier test left active.
    with translation.override("en"):
        call_command("spectacular", "--validate", "--fail-on-warn", stdout=generated)
    assert SCHEMA.read_text() == generated.getvalue(), (
        "backend/openapi.yaml is stale: run `make schema` and commit it"
    )


@pytest.mark.django_db
def test_schema_and_interactive_docs_are_served_without_the_internet(client):
    assert client.get("/api/schema/").status_code == 200
    docs = client.get("/api/docs/").content.decode()
    assert "swagger-ui" in docs and "cdn.jsdelivr" not in docs and "unpkg" not in docs
    from django.contrib.staticfiles import finders

    assert finders.find("drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js")


def test_every_operation_documents_the_error_shape():
    import yaml

    schema = yaml.safe_load(SCHEMA.read_text())
    assert "Error" in schema["components"]["schemas"]
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            assert "401" in operation["responses"], (method, path)
