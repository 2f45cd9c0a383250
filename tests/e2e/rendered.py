"""kube-scheduler v1.36 started on a configuration the renderer made (not on the harness's
own), and its ``/configz``: what kube-scheduler says it runs after decoding, defaulting and
validating the file."""

from __future__ import annotations

import json
import ssl
import urllib.request
from dataclasses import dataclass
from typing import Any

from app.schedconfig.render import Rendered
from tests.e2e.controlplane import ADMIN_TOKEN, ControlPlane, Process, wait_for
from tests.ports import free_port


@dataclass
class RenderedScheduler:
    process: Process
    port: int

    def configz(self) -> dict[str, Any]:
        """kube-scheduler's running configuration (``/configz``, the admin's token)."""
        request = urllib.request.Request(f"https://127.0.0.1:{self.port}/configz")
        request.add_header("Authorization", f"Bearer {ADMIN_TOKEN}")
        with urllib.request.urlopen(request, timeout=10, context=_insecure()) as response:
            config: dict[str, Any] = json.loads(response.read())["componentconfig"]
            return config

    def profile(self, name: str) -> dict[str, Any]:
        for profile in self.configz()["profiles"]:
            if profile["schedulerName"] == name:
                found: dict[str, Any] = profile
                return found
        raise KeyError(name)

    def stop(self) -> None:
        self.process.stop()


def _insecure() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def start_rendered_scheduler(
    cp: ControlPlane, name: str, rendered: Rendered, *, verbosity: int = 2
) -> RenderedScheduler:
    """kube-scheduler on ``rendered`` with the control plane's kubeconfig; waits for
    /healthz (a configuration it refuses makes it exit, and the wait fails with its log)."""
    document = dict(rendered.document)
    document["clientConnection"] = {"kubeconfig": str(cp.kubeconfig), "qps": 5000, "burst": 5000}
    path = cp.dir / f"{name}.yaml"
    path.write_text(Rendered(document).yaml)
    port = free_port()
    proc = cp.spawn(
        name,
        [
            str(cp.bin / "kube-scheduler"),
            f"--config={path}",
            f"--authentication-kubeconfig={cp.kubeconfig}",
            f"--authorization-kubeconfig={cp.kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--cert-dir={cp.dir / (name + '-certs')}",
            f"--v={verbosity}",
        ],
    )

    url, insecure = f"https://127.0.0.1:{port}/healthz", _insecure()
    wait_for(lambda: proc.answers(url, context=insecure), 60, f"{name} /healthz", interval=0.25)
    return RenderedScheduler(proc, port)


def verb_requests(metrics: str, verb: str) -> float:
    """How many requests of ``verb`` the extender has answered (its duration histogram)."""
    total = 0.0
    for line in metrics.splitlines():
        if line.startswith("queue_extender_request_duration_seconds_count{") and (
            f'verb="{verb}"' in line
        ):
            total += float(line.rsplit(" ", 1)[1])
    return total
