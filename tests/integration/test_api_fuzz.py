"""Schemathesis against the app's own OpenAPI spec: requests generated from the schema (valid and
schema-violating, including path ids of every shape) to every API operation, with a document, a
reading and its checkpoints in the database so that generated ids can hit real rows. No answer may be
a server error. Embedded mode (the local admin), so every request reaches its handler."""

from __future__ import annotations

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings

from app.web import create_app

pytestmark = pytest.mark.integration
EXAMPLES = 20  # per operation; raise it locally to fuzz longer


def test_no_api_operation_answers_a_server_error(settings):
    app = create_app(settings)
    with TestClient(app) as client:  # a document and a reading for generated ids to find
        doc = client.post("/api/documents", files={"file": ("river.txt", b"The river flows past the mill. " * 40)})
        assert doc.status_code == 201, doc.text
        asked = client.post(f"/api/documents/{doc.json()['id']}/readings", json={"question": "What flows?"})
        assert asked.status_code == 201, asked.text
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    tried, errors = [], []
    for result in schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy())
        @hypothesis_settings(
            max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck)
        )
        def call(case) -> None:
            response = case.call()
            tried.append(response.status_code)
            if response.status_code >= 500:
                errors.append(f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:300]}")

        call()
    print(
        f"\n{len(tried)} generated requests to {len(list(schema.get_all_operations()))} operations; statuses: "
        f"{ {s: tried.count(s) for s in sorted(set(tried))} }"
    )
    assert len(tried) > 100
    assert not errors, "\n".join(errors[:20])
