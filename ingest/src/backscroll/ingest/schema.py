"""Wire format v1 as a JSON Schema (draft 2020-12), for agent authors writing in any language.

Generated from the pydantic models of :mod:`backscroll.ingest.wire`, then completed with the rules
pydantic cannot export but JSON Schema can state:

* ``surface`` is required (and not null) on the surface types and absent or null on every other type;
* ``attrs`` keys must match the key pattern (pydantic exports the pattern but not the refusal);
* ``time`` and ``created_at`` are RFC 3339 timestamps with an offset (``format`` alone is not
  asserted by most validators), in years 0001 to 9999, with an offset within ±18:00;
* ``text`` has at most 1 MiB characters; the real limit is 1 MiB of UTF-8 bytes (said in its
  description, since JSON Schema counts characters).

It uses standard draft 2020-12 keywords only (pydantic's OpenAPI ``discriminator`` is dropped: the
``op`` constants already tell the branches apart), so it compiles in ajv's strict mode.

Rules no JSON Schema can state stay with the models: the byte limits of ``text`` and of the whole
record, that ``1.0`` is not an integer, and that a time's UTC instant lies within years 0001 to 9999
(``0001-01-01T00:30:00+01:00`` is in year 0 in UTC; said in the time fields' descriptions).
Regenerate the committed file with
``python -m backscroll.ingest.schema > schemas/wire-v1.schema.json``; a unit test keeps them equal.
"""

from __future__ import annotations

import json
from typing import Any, Final

from pydantic import TypeAdapter

from backscroll.ingest.wire import (
    MAX_RECORD_BYTES,
    MAX_TEXT_BYTES,
    SURFACE_TYPES,
    WIRE_VERSION,
    EventRecord,
    HeaderRecord,
    Record,
)

__all__ = ["SCHEMA_ID", "TIME_PATTERN", "wire_json_schema"]

SCHEMA_ID: Final = f"urn:backscroll:schema:wire-v{WIRE_VERSION}"

#: RFC 3339 ``date-time`` with a mandatory offset, in the spelling the decoder accepts (upper-case
#: ``T`` and ``Z``), years 0001 to 9999, offsets within ±18:00. Day-of-month, leap seconds and the
#: UTC instant's year are left to the decoder.
TIME_PATTERN: Final = (
    r"^(?!0000)[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
    r"T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]+)?"
    r"(Z|[+-]((0[0-9]|1[0-7]):[0-5][0-9]|18:00))$"
)

_DESCRIPTION: Final = (
    f"One value of a backscroll Kafka record, wire format v{WIRE_VERSION}. The record key is the "
    "session id in UTF-8; the value is one JSON object, either a session header (kind 'header') or "
    f"an event (kind 'event'), at most {MAX_RECORD_BYTES} bytes. See docs/wire-format.md."
)


_TIME_DESCRIPTION: Final = (
    "RFC 3339 with an offset of at most 18 hours either way. Its UTC instant must lie within years "
    "0001 to 9999: 0001-01-01T00:30:00+01:00 and 9999-12-31T23:30:00-01:00 are rejected."
)


def _object_branch(schema: dict[str, Any]) -> dict[str, Any]:
    """The non-null branch of an optional field's ``anyOf``."""
    branches: list[dict[str, Any]] = schema["anyOf"]
    return next(b for b in branches if b.get("type") != "null")


def _drop_openapi_keywords(node: Any) -> None:
    if isinstance(node, dict):
        node.pop("discriminator", None)
        for value in node.values():
            _drop_openapi_keywords(value)
    elif isinstance(node, list):
        for value in node:
            _drop_openapi_keywords(value)


def _close_pattern_properties(node: Any) -> None:
    if isinstance(node, dict):
        if "patternProperties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        for value in node.values():
            _close_pattern_properties(value)
    elif isinstance(node, list):
        for value in node:
            _close_pattern_properties(value)


def wire_json_schema() -> dict[str, Any]:
    """The JSON Schema of one record value (a header or an event)."""
    generated = TypeAdapter(Record).json_schema()
    defs: dict[str, Any] = generated["$defs"]
    event: dict[str, Any] = defs[EventRecord.__name__]
    header: dict[str, Any] = defs[HeaderRecord.__name__]

    for fields, name in ((event, "time"), (header, "created_at")):
        fields["properties"][name]["pattern"] = TIME_PATTERN
        fields["properties"][name]["description"] = _TIME_DESCRIPTION

    text = _object_branch(event["properties"]["text"])
    text["maxLength"] = MAX_TEXT_BYTES
    event["properties"]["text"]["description"] = f"At most {MAX_TEXT_BYTES} bytes once encoded as UTF-8."

    event["allOf"] = [
        {
            "if": {"properties": {"type": {"enum": sorted(SURFACE_TYPES)}}, "required": ["type"]},
            "then": {"required": ["surface"], "properties": {"surface": {"type": "object"}}},
            "else": {"properties": {"surface": {"type": "null"}}},
        }
    ]
    _close_pattern_properties(generated)
    _drop_openapi_keywords(generated)

    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": f"backscroll wire record v{WIRE_VERSION}",
        "description": _DESCRIPTION,
        **generated,
    }


def main() -> None:
    print(json.dumps(wire_json_schema(), indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
