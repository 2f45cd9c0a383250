"""The stand-in Kubernetes API server and the small helpers that go with it in tests.

Import as ``tests.fakeapi`` (from the repository root, as pytest and ``bench/`` run).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from .kubeconfig import write_kubeconfig
from .server import FakeApiServer, RecordedRequest, status_body

__all__ = [
    "FakeApiServer",
    "RecordedRequest",
    "RecordingSink",
    "status_body",
    "wait_until",
    "write_kubeconfig",
]


def wait_until(
    condition: Callable[[], object], timeout: float = 5.0, message: str = "condition"
) -> None:
    """Poll ``condition`` until truthy; fail the test with ``message`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}")
        time.sleep(0.01)


class RecordingSink:
    """A dict-backed EventSink that remembers what it was told, for assertions."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.objects: dict[str, dict[str, dict[str, Any]]] = {}
        self.calls: list[tuple[str, str, str]] = []  # (operation, kind, key)
        self.synced_count: Counter[str] = Counter()

    def upsert(self, kind: str, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
        with self._lock:
            self.objects.setdefault(kind, {})[key] = obj
            self.calls.append(("upsert", kind, key))

    def delete(self, kind: str, key: str) -> None:
        with self._lock:
            self.objects.get(kind, {}).pop(key, None)
            self.calls.append(("delete", kind, key))

    def synced(self, kind: str) -> None:
        with self._lock:
            self.synced_count[kind] += 1
            self.calls.append(("synced", kind, ""))

    def keys(self, kind: str) -> set[str]:
        with self._lock:
            return set(self.objects.get(kind, {}))

    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        with self._lock:
            return self.objects.get(kind, {}).get(key)

    def count(self, operation: str, kind: str, key: str | None = None) -> int:
        with self._lock:
            return sum(
                1
                for op, k, obj_key in self.calls
                if op == operation and k == kind and (key is None or obj_key == key)
            )
