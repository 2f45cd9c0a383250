"""Write a kubeconfig that points the official client at the stand-in API server.

Going through a real kubeconfig file (rather than handing the code a prebuilt client) makes
the tests exercise the same loading path as production: ``load_kube_config`` picking the
server URL and the bearer token out of the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def write_kubeconfig(
    path: str | Path,
    server: str,
    *,
    token: str | None = None,
    namespace: str | None = None,
    name: str = "fakeapi",
) -> Path:
    """Write a one-cluster, one-user, one-context kubeconfig and return its path."""
    user: dict[str, Any] = {"token": token} if token else {}
    context: dict[str, Any] = {"cluster": name, "user": name}
    if namespace:
        context["namespace"] = namespace
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server}}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": context}],
        "current-context": name,
        "preferences": {},
    }
    target = Path(path)
    target.write_text(yaml.safe_dump(document, sort_keys=False))
    return target
