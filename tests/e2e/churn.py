"""Pod loads that survive an API-server outage, and the extender's view of the cluster set
against a fresh list, for the fault-injection and soak tests.

"The cache equals a fresh list" is checked on what the extender's decisions rest on and
what ``/debug/queues`` shows: the number of objects of each kind it holds, and each queue's
allocated CPU (the sum of the requests of its bound, unfinished pods).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import urllib3
from kubernetes import client

from tests.e2e.controlplane import Extender
from tests.e2e.kube import GROUP, VERSION, Kube

log = logging.getLogger("tests.e2e.churn")

QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
COMPARED_KINDS = ("pods", "nodes", "queues", "podgroups")


def retrying(
    call: Callable[[], Any],
    *,
    deadline: float,
    what: str,
    stop: threading.Event | None = None,
) -> None:
    """Runs ``call`` until the API server takes it: connection failures and 5xx are retried
    (the server may be down), AlreadyExists means an earlier try got through."""
    while stop is None or not stop.is_set():
        try:
            call()
            return
        except client.ApiException as exc:
            if exc.status == 409:
                return
            if exc.status not in (0, 429, 500, 502, 503, 504):
                raise
        except (urllib3.exceptions.HTTPError, OSError):
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"the API server never took {what}")
        time.sleep(0.3)


class PodLoad:
    """Creates pods from a few threads, retrying through outages; ``created`` counts them."""

    def __init__(self, kube: Kube, workers: int = 4, timeout: float = 300) -> None:
        self.kube = kube
        self.workers = workers
        self.timeout = timeout
        self.created = 0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.error: BaseException | None = None

    def stop(self) -> None:
        """Gives up on the pods not created yet (a failed test must not wait for them)."""
        self._stop.set()

    def start(self, pods: Iterable[tuple[str, str, str, str]]) -> PodLoad:
        """``pods``: (namespace, name, queue, cpu) tuples, created in that order."""
        batch = list(pods)
        self._thread = threading.Thread(target=self._run, args=(batch,), daemon=True)
        self._thread.start()
        return self

    def _run(self, batch: list[tuple[str, str, str, str]]) -> None:
        deadline = time.monotonic() + self.timeout
        try:
            with ThreadPoolExecutor(self.workers) as pool:
                list(pool.map(lambda spec: self._create(spec, deadline), batch))
        except BaseException as exc:
            self.error = exc

    def _create(self, spec: tuple[str, str, str, str], deadline: float) -> None:
        ns, name, queue, cpu = spec
        retrying(
            lambda: self.kube.pod(ns, name, cpu=cpu, memory="64Mi", queue=queue),
            deadline=deadline,
            what=f"pod {ns}/{name}",
            stop=self._stop,
        )
        with self._lock:
            self.created += 1

    def wait(self, timeout: float) -> None:
        assert self._thread is not None
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError("the pod load did not finish")
        if self.error is not None:
            raise self.error


def debug_queues(extender: Extender) -> dict[str, Any]:
    with urllib.request.urlopen(extender.url + "/debug/queues", timeout=10) as response:
        answer: dict[str, Any] = json.loads(response.read())
        return answer


def extender_view(extender: Extender, queues: Iterable[str]) -> dict[str, Any]:
    state = debug_queues(extender)
    wanted = set(queues)
    allocated = {
        q["name"]: round(float((q.get("allocated") or {}).get("cpu", 0.0)) * 1000)
        for q in state["queues"]
        if q["name"] in wanted
    }
    return {
        "objects": {k: state["objects"][k] for k in COMPARED_KINDS},
        "allocated_mcpu": {q: allocated.get(q, 0) for q in sorted(wanted)},
    }


def _milli(cpu: str) -> int:
    return int(cpu[:-1]) if cpu.endswith("m") else round(float(cpu) * 1000)


def cluster_view(kube: Kube, queues: Iterable[str]) -> dict[str, Any]:
    """The same figures from fresh lists of the API server."""
    pods = kube.core.list_pod_for_all_namespaces().items
    allocated = dict.fromkeys(sorted(set(queues)), 0)
    for pod in pods:
        queue = (pod.metadata.annotations or {}).get(QUEUE_ANNOTATION)
        finished = pod.status.phase in ("Succeeded", "Failed")
        if queue in allocated and pod.spec.node_name and not finished:
            for container in pod.spec.containers:
                allocated[queue] += _milli((container.resources.requests or {}).get("cpu", "0"))
    queue_list = kube.custom.list_cluster_custom_object(GROUP, VERSION, "queues")["items"]
    groups = kube.custom.list_custom_object_for_all_namespaces(GROUP, VERSION, "podgroups")
    return {
        "objects": {
            "pods": len(pods),
            "nodes": len(kube.core.list_node().items),
            "queues": len(queue_list),
            "podgroups": len(groups["items"]),
        },
        "allocated_mcpu": allocated,
    }


def views_agree(extender: Extender, kube: Kube, queues: Iterable[str]) -> bool:
    """True when the extender's view equals a fresh list taken just before and just after it
    (the two lists being equal too, so nothing was changing in between)."""
    names = list(queues)
    before = cluster_view(kube, names)
    seen = extender_view(extender, names)
    after = cluster_view(kube, names)
    if before != after:
        return False
    if seen != before:
        log.info("extender view %s differs from the cluster's %s", seen, before)
        return False
    return True


def scrape(extender: Extender) -> dict[str, float]:
    """Every sample of the extender's /metrics, by name and labels."""
    from prometheus_client.parser import text_string_to_metric_families

    samples: dict[str, float] = {}
    for family in text_string_to_metric_families(extender.metrics()):
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            samples[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
    return samples


def relists(extender: Extender) -> int:
    return int(
        sum(
            value
            for key, value in scrape(extender).items()
            if key.startswith("queue_extender_informer_relists")
        )
    )


def rss_bytes(pid: int) -> int:
    """Resident set size of a process, from /proc (Linux)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def long_run() -> bool:
    return os.environ.get("E2E_LONG") == "1"
