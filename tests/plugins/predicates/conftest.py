"""Helpers shared by the predicate tests: a verdict of the predicates plugin for one pod on
one node of a small cluster."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from scheduler_core.framework.status import Code
from tests.builders import node, session, task_of, tiers

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
