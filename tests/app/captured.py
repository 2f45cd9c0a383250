"""The extender requests captured from kube-scheduler v1.36.2 (see wire_fixtures/README.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).parent / "wire_fixtures"
NODE_CACHE = "run1-nodecache-true"
FULL = "run2-nodecache-false"


def body(run: str, name: str) -> bytes:
    return (ROOT / run / name).read_bytes()


def doc(run: str, name: str) -> Any:
    return orjson.loads(body(run, name))


def requests(run: str, verb: str) -> list[str]:
    """File names of the captured requests of one verb, in capture order."""
    return sorted(p.name for p in (ROOT / run).glob(f"*-{verb}.req.json"))
