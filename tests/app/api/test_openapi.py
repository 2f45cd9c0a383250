"""The published OpenAPI document is a contract with every client generated from it: its
paths and component schemas (names, fields, descriptions, what is required) stay exactly as
committed in ``openapi.json`` beside this file. A change to the API is made on purpose, by
writing the new document over the snapshot (``python -m tests.app.api.test_openapi``) and
committing both."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from app.cli.main import build_parser
from app.cli.serve import backend_from_args
from app.serving.server import create_app

SNAPSHOT = Path(__file__).with_name("openapi.json")


def published() -> dict[str, Any]:
    """The paths and component schemas of the full service (the verbs, the probes, /debug
    and the people's API), as ``/openapi.json`` serves them."""
    engine = backend_from_args(build_parser().parse_args(["serve", "--demo"])).backend
    document = create_app(engine).openapi()
    return {"paths": document["paths"], "schemas": document["components"]["schemas"]}


def test_the_openapi_paths_and_schemas_match_the_committed_snapshot() -> None:
    committed = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    now = published()
    assert sorted(now["paths"]) == sorted(committed["paths"])
    assert sorted(now["schemas"]) == sorted(committed["schemas"])
    for name, schema in committed["schemas"].items():
        assert now["schemas"][name] == schema, f"component schema {name} changed"
    for path, operations in committed["paths"].items():
        assert now["paths"][path] == operations, f"path {path} changed"


if __name__ == "__main__":
    SNAPSHOT.write_text(json.dumps(published(), indent=2, sort_keys=True) + "\n", "utf-8")
    sys.stdout.write(f"wrote {SNAPSHOT}\n")
