"""The layouts every deployment check runs on: deploy/ and the chart under several values."""

from __future__ import annotations

import functools
from typing import Any

from .deploy_manifests import Manifest, load_kustomization, rendered_documents

#: Chart values per named layout. Together they switch every branch of the templates.
CHART_LAYOUTS: dict[str, dict[str, Any]] = {
    "chart-default": {},
    "chart-metrics": {"metrics": {"enabled": True}},
    "chart-no-reclaim": {"reclaimLoop": {"enabled": False}},
    "chart-mtls-reclaim-ha": {
        "replicaCount": 2,
        "metrics": {"enabled": True},
        "reclaimLoop": {"enabled": True},
        "statusWriteBack": {"enabled": True},
        "extender": {
            "tls": {
                "enabled": True,
                "secretName": "queue-extender-tls",
                "serverName": "queue-extender.local",
                "clientAuth": True,
            },
            "logFormat": "json",
            "manageAnnotated": True,
            "delegatedAuth": {"enabled": True, "cacheTTL": 5},
        },
    },
    "chart-listen-all-no-peers": {
        "extender": {
            "listenAll": True,
            "tls": {"enabled": True, "secretName": "tls", "clientAuth": True},
        },
        "networkPolicy": {"from": []},
        "statusPage": {"enabled": False},
    },
    "chart-closed-dry-run": {
        "statusPage": {"enabled": False},
        "reclaimLoop": {"enabled": True, "dryRun": True},
    },
}

LAYOUTS = ["deploy", *CHART_LAYOUTS]


@functools.cache
def _documents(layout: str) -> tuple[Manifest, ...]:
    if layout == "deploy":
        return tuple(load_kustomization())
    return tuple(rendered_documents(CHART_LAYOUTS[layout]))


def layout_documents(layout: str) -> list[Manifest]:
    """A fresh list (the objects are shared: tests must not mutate them)."""
    return list(_documents(layout))
