"""Helpers shared by the predicate tests: a verdict of the predicates plugin for one pod on
one node of a small cluster, and small random clusters with a statement's operations run on
them (the property tests of what the plugin keeps across a session)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import yaml
from hypothesis import strategies as st

from scheduler_core.api.types import TaskStatus
from scheduler_core.framework.session import Session
from scheduler_core.framework.statement import Statement, StatementError
from scheduler_core.framework.status import Code
from tests.builders import Obj, node, pod, pod_affinity, pod_term, selector, session, task_of, tiers

U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"

Verdict = tuple[Code, list[str]] | None


def predicates_conf(arguments: Mapping[str, Any] | None = None) -> str:
    """The predicates plugin alone, with ``arguments``."""
    conf = tiers("predicates")
    if not arguments:
        return conf
    loaded = yaml.safe_load(conf)
    loaded["tiers"][0]["plugins"][0]["arguments"] = dict(arguments)
    return str(yaml.safe_dump(loaded))


def zoned(name: str, zone: str = "", **kwargs: Any) -> dict[str, Any]:
    """A node labelled with its hostname and, when given, its zone."""
    labels = {HOST: name, **({ZONE: zone} if zone else {})}
    labels.update(kwargs.pop("labels", {}))
    return node(name, cpu="16", memory="32Gi", labels=labels, **kwargs)


def verdict(
    objects: Iterable[Mapping[str, Any]],
    pod_name: str,
    node_name: str,
    arguments: Mapping[str, Any] | None = None,
) -> Verdict:
    ssn = session(list(objects), predicates_conf(arguments))
    err = ssn.predicate(task_of(ssn, f"ns/{pod_name}"), ssn.nodes[node_name])
    return None if err is None else (err.code, err.reasons)


# --- small random clusters and a statement's operations on them ---------------------------

#: Nodes n1 and n2 in zone a, n3 and n4 in zone b.
NODES = ["n1", "n2", "n3", "n4"]
X = selector({"app": "x"})

Operation = tuple[str, str, str]


@st.composite
def placed(
    draw: st.DrawFn,
    i: int,
    apps: Sequence[str] = ("x", "y"),
    anti: Sequence[Obj] = (X,),
    tiers: bool = False,
) -> Obj:
    """Pod ``r<i>``: an app label of ``apps`` (and a tier label, if ``tiers``), in one case of
    four a required anti-affinity to one of ``anti`` by host or zone, on a node or waiting."""
    labels = {"app": draw(st.sampled_from(list(apps)))}
    if tiers and draw(st.booleans()):
        labels["tier"] = draw(st.sampled_from(["web", "db"]))
    fields: dict[str, Any] = {"labels": labels}
    if draw(st.integers(0, 3)) == 0:
        term = pod_term(draw(st.sampled_from(list(anti))), draw(st.sampled_from([HOST, ZONE])))
        fields["affinity"] = pod_affinity(anti=[term])
    node_name = draw(st.sampled_from(["", *NODES]))
    return pod(f"r{i}", node_name=node_name, cpu="1", **fields)


@st.composite
def worlds(draw: st.DrawFn, probes: Sequence[Obj], most: int = 8, **pods: Any) -> list[Obj]:
    """The four zoned nodes, two to ``most`` pods drawn by ``placed(i, **pods)``, and
    ``probes``."""
    objs: list[Obj] = [zoned(n, "a" if n in ("n1", "n2") else "b") for n in NODES]
    objs += [draw(placed(i, **pods)) for i in range(draw(st.integers(2, most)))]
    return objs + list(probes)


def operations(names: Sequence[str]) -> st.SearchStrategy[list[Operation]]:
    """Up to twelve (operation, pod name, node) for ``apply_operations``."""
    return st.lists(
        st.tuples(
            st.sampled_from(["evict", "pipeline", "discard", "commit"]),
            st.sampled_from(list(names)),
            st.sampled_from(NODES),
        ),
        max_size=12,
    )


def apply_operations(
    ssn: Session, ops: Iterable[Operation], after: Callable[[Session], None]
) -> None:
    """Run ``ops`` through one statement (evict a running pod, pipeline a waiting one,
    discard, commit; an operation that does not apply is skipped), calling ``after`` once
    each has run."""
    stmt = Statement(ssn)
    known = {t.key for job in ssn.jobs.values() for t in job.tasks.values()}
    for op, name, node_name in ops:
        key = f"ns/{name}"
        if key not in known:
            continue
        task = task_of(ssn, key)
        if op == "evict" and task.status == TaskStatus.RUNNING:
            stmt.evict(task, "test")
        elif op == "pipeline" and task.status == TaskStatus.PENDING:
            with contextlib.suppress(StatementError):
                stmt.pipeline(task, node_name)
        elif op == "discard":
            stmt.discard()
        elif op == "commit":
            stmt.commit()
        after(ssn)
