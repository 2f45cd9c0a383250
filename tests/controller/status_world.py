"""A cluster kept as Kubernetes objects behind a stand-in API server, with the real status
writer over it: each cycle reads the objects (PodGroup phases as last written included),
decides and writes PodGroups and Queues back into them, as it does against kube-apiserver."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from prometheus_client import CollectorRegistry

from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.topology import NetworkTopologyRequest
from scheduler_core.conf import DEFAULT_CONF, load_configuration
from scheduler_core.controller.events import TokenBucket
from scheduler_core.controller.rest import ApiError
from scheduler_core.controller.runtime import Controller
from scheduler_core.controller.status_pass import DomainOf
from scheduler_core.controller.status_writer import StatusWriter
from tests.builders import Obj, snapshot

_PREFIX = "/apis/scheduling.volcano.sh/v1beta1/"


def _native(obj: Obj) -> bool:
    """A Kubernetes PodGroup (``scheduling.k8s.io``), which shares the kind's name."""
    return str(obj.get("apiVersion") or "").startswith("scheduling.k8s.io/")


class FakeRest:
    """GET, PUT and merge-PATCH of PodGroups and Queues on the world's own objects."""

    def __init__(self, world: StatusWorld) -> None:
        self.world = world

    def _find(self, path: str) -> Obj:
        parts = path.removeprefix(_PREFIX).removesuffix("/status").split("/")
        if parts[0] == "queues":
            wanted = ("Queue", "", parts[1])
        else:  # namespaces/<ns>/podgroups/<name>
            wanted = ("PodGroup", parts[1], parts[3])
        for obj in self.world.objects:
            meta = obj["metadata"]
            if _native(obj):
                continue  # a Kubernetes PodGroup: not at the Volcano path
            if (obj["kind"], meta.get("namespace", ""), meta["name"]) == wanted:
                return obj
        raise ApiError(404, "NotFound", path)

    def get(self, path: str) -> dict[str, Any]:
        obj = self._find(path)
        return {**obj, "status": dict(obj.get("status") or {})}

    def put(self, path: str, body: dict[str, Any], resource: str) -> dict[str, Any]:
        del resource
        obj = self._find(path)
        obj["status"] = dict(body.get("status") or {})
        annotations = (body.get("metadata") or {}).get("annotations")
        if annotations is not None:
            obj["metadata"] = {**obj["metadata"], "annotations": dict(annotations)}
        return body

    def merge_patch(self, path: str, body: dict[str, Any], resource: str) -> dict[str, Any]:
        del resource
        obj = self._find(path)
        status = dict(obj.get("status") or {})
        for key, value in (body.get("status") or {}).items():
            status[key] = value
        obj["status"] = status
        return obj


@dataclass
class _Script:
    """A token bucket that answers as told: which writes of a cycle go and which wait."""

    answers: list[bool]

    def delay(self) -> float:
        return 0.0 if (self.answers.pop(0) if self.answers else True) else 1.0


class _Recorder:
    """Keeps (regarding kind, name, apiVersion, type, reason) of every event recorded."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str, str]] = []

    def record(
        self, regarding: Any, event_type: str, reason: str, *args: Any, **kwargs: Any
    ) -> None:
        del args, kwargs
        self.events.append(
            (regarding.kind, regarding.name, regarding.api_version, event_type, reason)
        )


@dataclass
class _Controller:
    rest: FakeRest
    recorder: _Recorder = field(default_factory=_Recorder)
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def on_leading(self, start: Any = None, stop: Any = None) -> None:
        del start, stop

    def is_leader(self) -> bool:
        return True


@dataclass
class StatusWorld:
    objects: list[Obj]
    version: int = 0
    #: the write budget's answers, in order (True: a write may go); None: no limit
    tokens: list[bool] | None = None
    writer: StatusWriter = field(init=False)
    #: how deep the state's lock is held now (the writer takes it for its copy only)
    lock_depth: int = 0
    #: PodGroups (``ns/name``) asking for a network topology, as the cache would convert them
    requests: dict[str, NetworkTopologyRequest] = field(default_factory=dict)
    #: the network domain of a topology gang, as the verbs' kept choices give it
    domain_of: DomainOf | None = None

    def __post_init__(self) -> None:
        self.recorder = _Recorder()
        controller = cast(Controller, _Controller(FakeRest(self), self.recorder))
        conf = load_configuration(DEFAULT_CONF)
        self.writer = StatusWriter(
            controller,
            self.snapshot,
            lambda: conf,
            self.locked,
            self.version_now,
            lambda ssn, job, task: None,
            managed_schedulers=(),
            domain_of=self.domain_of,
            qps=1e6,
            burst=1_000_000,
        )

        if self.tokens is not None:
            self.writer._bucket = cast(TokenBucket, _Script(self.tokens))

    def snapshot(self) -> ClusterSnapshot:
        snap = snapshot(self.objects)
        for uid, request in self.requests.items():
            if uid in snap.jobs:
                snap.jobs[uid].network_topology = request
        return snap

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        self.lock_depth += 1
        try:
            yield
        finally:
            self.lock_depth -= 1

    def version_now(self) -> int:
        return self.version

    def changed(self) -> None:
        self.version += 1

    def cycle(self) -> None:
        self.writer.cycle()

    def of_kind(self, kind: str) -> list[Obj]:
        return [o for o in self.objects if o["kind"] == kind]

    def phase(self, name: str) -> str:
        for pg in self.of_kind("PodGroup"):
            if pg["metadata"]["name"] == name and not _native(pg):
                return str((pg.get("status") or {}).get("phase") or "Pending")
        raise KeyError(name)
