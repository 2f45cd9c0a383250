"""The engine's side of the fit differential test, and the comparison.

The engine is fed exactly what its informers would get: every kind it watches
(``scheduler_core.cache.kinds.ALL_KINDS``, so kinds added there are fed too), listed raw from
the API server and handed to a ``ClusterState`` one object at a time, as the reflector does.
A node is feasible for a pending pod when the default configuration's predicates pass (the
pre-predicate and the predicate hooks) and the pod's request fits the node's idle resources
(what kube-scheduler's NodeResourcesFit checks, which the engine leaves to its actions).
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import scheduler_core.actions
import scheduler_core.plugins  # noqa: F401 - registers every plugin and action
from scheduler_core.api.task import TaskInfo
from scheduler_core.cache.kinds import ALL_KINDS
from scheduler_core.cache.state import ClusterState
from scheduler_core.conf import default_configuration
from scheduler_core.framework.framework import close_session, open_session
from scheduler_core.framework.session import Session
from scheduler_core.framework.status import Code, Status
from scheduler_core.plugins.predicates import resource_fit_error
from tests.e2e.controlplane import ADMIN_TOKEN, ControlPlane

#: The verdict a predicate gives when it cannot judge a pod (data the engine does not
#: model): such a pod is left out of the comparison (the loop never evicts for it).
NOT_EVALUABLE_CODES = frozenset({Code.NOT_EVALUABLE})


@dataclass
class Verdict:
    """The engine's judgement of one pending pod over the test's nodes."""

    feasible: frozenset[str]
    not_evaluable: bool
    #: node -> why the engine rejected it (for the report of a difference)
    reasons: dict[str, str] = field(default_factory=dict)


@dataclass
class Difference:
    """One pod whose feasible set differs between kube-scheduler and the engine."""

    pod: str
    seed: int
    kube: frozenset[str]
    engine: frozenset[str]
    engine_reasons: dict[str, str]
    spec: str

    @property
    def only_kube(self) -> frozenset[str]:
        return self.kube - self.engine

    @property
    def only_engine(self) -> frozenset[str]:
        return self.engine - self.kube

    def __str__(self) -> str:
        why = {n: self.engine_reasons.get(n, "") for n in sorted(self.only_kube)}
        refused = f"; the engine refused {why}" if why else ""
        return (
            f"seed {self.seed} pod {self.pod}: feasible for kube-scheduler {sorted(self.kube)},"
            f" for the engine {sorted(self.engine)}{refused}\n    {self.spec}"
        )


def list_raw(cp: ControlPlane, path: str) -> list[dict[str, object]]:
    """Every object at a collection path, as the API server serves it (what the reflector
    reads)."""
    request = urllib.request.Request(f"https://127.0.0.1:{cp.api_port}{path}")
    request.add_header("Authorization", f"Bearer {ADMIN_TOKEN}")
    with urllib.request.urlopen(request, timeout=30, context=cp.pki.ssl_context()) as response:
        items: list[dict[str, object]] = json.loads(response.read())["items"]
        return items


def engine_state(cp: ControlPlane) -> ClusterState:
    """A ClusterState holding every object of every kind the engine watches."""
    state = ClusterState()
    # Nodes before the pods on them, as a settled cache has them (no placeholder node).
    for spec in sorted(ALL_KINDS, key=lambda s: s.kind == "Pod"):
        for obj in list_raw(cp, spec.list_path()):
            state.upsert(spec.kind, obj)
        state.synced(spec.kind)
    return state


def _tasks(ssn: Session, keys: Iterable[str]) -> dict[str, TaskInfo]:
    wanted = set(keys)
    found = {}
    for job in ssn.jobs.values():
        for task in job.tasks.values():
            if task.key in wanted:
                found[task.key] = task
    return found


def engine_verdicts(
    cp: ControlPlane, pending: Iterable[str], nodes: Iterable[str]
) -> dict[str, Verdict]:
    """pod key (``ns/name``) -> the engine's verdict over ``nodes``."""
    node_names = list(nodes)
    ssn = open_session(engine_state(cp).snapshot(), default_configuration())
    try:
        verdicts = {}
        for key, task in _tasks(ssn, pending).items():
            verdicts[key] = judge(ssn, task, node_names)
        return verdicts
    finally:
        close_session(ssn)


def judge(ssn: Session, task: TaskInfo, node_names: Iterable[str]) -> Verdict:
    feasible: set[str] = set()
    reasons: dict[str, str] = {}
    not_evaluable = False
    refused = ssn.pre_predicate(task)
    # A pre-predicate that cannot judge the pod says so in the session (and with a
    # NotEvaluable verdict): the pod is then out of the comparison.
    if task.key in getattr(ssn, "not_evaluable", {}):
        not_evaluable = True
    for name in node_names:
        node = ssn.nodes.get(name)
        if node is None:
            reasons[name] = "node not in the engine's snapshot"
            continue
        if refused:
            reasons[name] = f"pre-predicate: {refused}"
            continue
        err: Status | None = ssn.predicate(task, node)
        if err is None:
            err = resource_fit_error(task, node, node.idle)
        if err is None:
            feasible.add(name)
            continue
        if err.code in NOT_EVALUABLE_CODES:
            not_evaluable = True
        reasons[name] = f"{err.code.value}: {', '.join(err.reasons)}"
    return Verdict(frozenset(feasible), not_evaluable, reasons)


def compare(
    seed: int,
    kube: Mapping[str, frozenset[str]],
    engine: Mapping[str, Verdict],
    specs: Mapping[str, str],
) -> tuple[list[Difference], list[str]]:
    """(differences, pods the engine named not evaluable); a pod the engine did not see at
    all is a difference too (every node kube-scheduler found is then "kube-scheduler's
    alone")."""
    differences: list[Difference] = []
    not_evaluable: list[str] = []
    for key, feasible in sorted(kube.items()):
        verdict = engine.get(key) or Verdict(frozenset(), False, {"*": "pod not in the engine"})
        if verdict.not_evaluable:
            not_evaluable.append(key)
            continue
        if verdict.feasible != feasible:
            differences.append(
                Difference(
                    key, seed, feasible, verdict.feasible, verdict.reasons, specs.get(key, "")
                )
            )
    return differences, not_evaluable
