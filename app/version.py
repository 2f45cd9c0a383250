"""The installed distribution's version: one source of truth, pyproject.toml, for
``--version`` and the OpenAPI document alike."""

from __future__ import annotations

from importlib import metadata

DISTRIBUTION = "kube-queue-extender"


def version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"
