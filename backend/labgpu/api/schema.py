"""drf-spectacular additions: the error shape as a component, referenced by every operation."""

from typing import Any

ERROR_COMPONENT = {
    "type": "object",
    "required": ["message", "code", "extra"],
    "properties": {
        "message": {"type": "string", "description": "For people; may be shown as is."},
        "code": {"type": "string", "description": "Stable machine-readable code (docs/api.md)."},
        "extra": {
            "type": "object",
            "additionalProperties": {},
            "description": "Details: `fields` (field → messages), `next_free` windows, …",
        },
    },
}
ERROR_STATUSES = {
    "400": "Invalid input",
    "401": "Not authenticated",
    "403": "Not allowed",
    "404": "Not found",
    "429": "Throttled",
}


def add_error_responses(result: dict[str, Any], generator: Any, request: Any, public: bool):
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_COMPONENT
    ref = {"$ref": "#/components/schemas/Error"}
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            responses = operation.setdefault("responses", {})
            statuses = dict(ERROR_STATUSES)
            if method in {"post", "put", "patch"}:
                statuses["409"] = "Conflict (e.g. pool full: extra.next_free)"
            for code, description in statuses.items():
                responses.setdefault(
                    code,
                    {"description": description, "content": {"application/json": {"schema": ref}}},
                )
    return result
