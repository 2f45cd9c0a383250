"""A pod's host ports, pod (anti-)affinity terms and topology spread constraints, from the
pod's spec into ``scheduler_core.api.pod_constraints``.

A spec the API server would have refused (an unknown operator, a required term without a
topology key, ``maxSkew`` 0) is a ``ValueError`` naming the field; the caller wraps it into
its conversion error naming the pod, so the pod is refused whole rather than judged on a
constraint read differently from kube-scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler_core.api.pod_constraints import (
    IN,
    NOT_IN,
    SELECTOR_OPERATORS,
    WILDCARD_IP,
    HostPort,
    LabelRequirement,
    LabelSelector,
    PodAffinity,
    PodAffinityTerm,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
    spread_constraint_from,
)

_PROTOCOLS = frozenset({"TCP", "UDP", "SCTP"})


def _int(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{where}: expected an integer, got {value!r}")
    return value


def label_selector(raw: Any, where: str) -> LabelSelector | None:
    """A ``metav1.LabelSelector``; None when absent (it then selects nothing)."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: expected a label selector")
    reqs: list[LabelRequirement] = []
    match_labels = raw.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise ValueError(f"{where}.matchLabels: expected a map")
    for key, value in sorted(match_labels.items()):
        reqs.append(LabelRequirement(str(key), IN, frozenset({str(value)})))
    expressions = raw.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise ValueError(f"{where}.matchExpressions: expected a list")
    for i, expr in enumerate(expressions):
        at = f"{where}.matchExpressions[{i}]"
        if not isinstance(expr, Mapping) or not isinstance(expr.get("key"), str):
            raise ValueError(f"{at}: expected a requirement with a key")
        op = expr.get("operator")
        if op not in SELECTOR_OPERATORS:
            raise ValueError(f"{at}.operator: {op!r} is not one of In, NotIn, Exists, DoesNotExist")
        values = expr.get("values") or []
        if not isinstance(values, list):
            raise ValueError(f"{at}.values: expected a list")
        if op in (IN, NOT_IN) and not values:
            raise ValueError(f"{at}.values: {op} needs at least one value")
        if op not in (IN, NOT_IN) and values:
            raise ValueError(f"{at}.values: {op} takes no values")
        reqs.append(LabelRequirement(expr["key"], str(op), frozenset(str(v) for v in values)))
    return LabelSelector(tuple(reqs))


def _label_keys(raw: Any, where: str) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(k, str) for k in raw):
        raise ValueError(f"{where}: expected a list of label keys")
    return list(raw)


def _key_requirements(
    keys: list[str], labels: Mapping[str, str], operator: str
) -> tuple[LabelRequirement, ...]:
    """``key <operator> (the pod's value)`` for each key the pod has (absent keys are
    ignored, as kube-scheduler does)."""
    return tuple(
        LabelRequirement(key, operator, frozenset({labels[key]})) for key in keys if key in labels
    )


def _affinity_term(
    raw: Any, where: str, namespace: str, labels: Mapping[str, str]
) -> PodAffinityTerm:
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: expected a pod affinity term")
    topology_key = raw.get("topologyKey")
    if not isinstance(topology_key, str) or not topology_key:
        raise ValueError(f"{where}.topologyKey: required, may not be empty")
    selector = label_selector(raw.get("labelSelector"), f"{where}.labelSelector")
    match_keys = _label_keys(raw.get("matchLabelKeys"), f"{where}.matchLabelKeys")
    mismatch_keys = _label_keys(raw.get("mismatchLabelKeys"), f"{where}.mismatchLabelKeys")
    if set(match_keys) & set(mismatch_keys):
        raise ValueError(f"{where}: a key may not be in both matchLabelKeys and mismatchLabelKeys")
    if (match_keys or mismatch_keys) and selector is None:
        raise ValueError(f"{where}: matchLabelKeys and mismatchLabelKeys need a labelSelector")
    if selector is not None:
        selector = selector.with_requirements(
            _key_requirements(match_keys, labels, IN)
            + _key_requirements(mismatch_keys, labels, NOT_IN)
        )
    namespaces = raw.get("namespaces") or []
    if not isinstance(namespaces, list) or not all(isinstance(n, str) for n in namespaces):
        raise ValueError(f"{where}.namespaces: expected a list of names")
    ns_selector = label_selector(raw.get("namespaceSelector"), f"{where}.namespaceSelector")
    chosen = frozenset(namespaces)
    if not chosen and ns_selector is None:
        chosen = frozenset({namespace})
    return PodAffinityTerm(topology_key, selector, chosen, ns_selector)


def _terms(
    raw: Any, where: str, namespace: str, labels: Mapping[str, str]
) -> tuple[PodAffinityTerm, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ValueError(f"{where}: expected a list")
    return tuple(
        _affinity_term(term, f"{where}[{i}]", namespace, labels) for i, term in enumerate(raw)
    )


def _weighted(
    raw: Any, where: str, namespace: str, labels: Mapping[str, str]
) -> tuple[WeightedPodAffinityTerm, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ValueError(f"{where}: expected a list")
    out = []
    for i, item in enumerate(raw):
        at = f"{where}[{i}]"
        if not isinstance(item, Mapping):
            raise ValueError(f"{at}: expected a weighted pod affinity term")
        weight = _int(item.get("weight"), f"{at}.weight")
        if not 1 <= weight <= 100:
            raise ValueError(f"{at}.weight: must be in 1..100, got {weight}")
        term = _affinity_term(
            item.get("podAffinityTerm"), f"{at}.podAffinityTerm", namespace, labels
        )
        out.append(WeightedPodAffinityTerm(weight, term))
    return tuple(out)


def pod_affinity(
    spec: Mapping[str, Any], namespace: str, labels: Mapping[str, str]
) -> PodAffinity | None:
    """``spec.affinity.podAffinity`` / ``podAntiAffinity``; None when the pod has no term."""
    affinity = spec.get("affinity")
    if not isinstance(affinity, Mapping):
        return None
    result: dict[str, Any] = {}
    for kind, prefix in (("podAffinity", ""), ("podAntiAffinity", "_anti")):
        block = affinity.get(kind)
        if block is None:
            continue
        where = f"spec.affinity.{kind}"
        if not isinstance(block, Mapping):
            raise ValueError(f"{where}: expected a map")
        required = "requiredDuringSchedulingIgnoredDuringExecution"
        preferred = "preferredDuringSchedulingIgnoredDuringExecution"
        result["required" + prefix] = _terms(
            block.get(required), f"{where}.{required}", namespace, labels
        )
        result["preferred" + prefix] = _weighted(
            block.get(preferred), f"{where}.{preferred}", namespace, labels
        )
    found = PodAffinity(**result)
    return found if found else None


def spread_constraints(
    spec: Mapping[str, Any], labels: Mapping[str, str]
) -> tuple[TopologySpreadConstraint, ...]:
    raw = spec.get("topologySpreadConstraints")
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ValueError("spec.topologySpreadConstraints: expected a list")
    out = []
    for i, item in enumerate(raw):
        at = f"spec.topologySpreadConstraints[{i}]"
        if not isinstance(item, Mapping):
            raise ValueError(f"{at}: expected a constraint")
        selector = label_selector(item.get("labelSelector"), f"{at}.labelSelector")
        keys = _label_keys(item.get("matchLabelKeys"), f"{at}.matchLabelKeys")
        if keys and selector is not None:
            selector = selector.with_requirements(_key_requirements(keys, labels, IN))
        out.append(spread_constraint_from(item, at, selector))
    return tuple(out)


def host_ports(spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
    """Every ``hostPort`` of the containers and of the restartable (sidecar) init
    containers, the ports kube-scheduler's NodePorts filter reads."""
    out: list[HostPort] = []
    groups = (("containers", False), ("initContainers", True))
    for field_name, sidecars_only in groups:
        containers = spec.get(field_name) or []
        if not isinstance(containers, list):
            continue
        for i, container in enumerate(containers):
            if not isinstance(container, Mapping):
                continue
            if sidecars_only and container.get("restartPolicy") != "Always":
                continue
            ports = container.get("ports") or []
            if not isinstance(ports, list):
                raise ValueError(f"spec.{field_name}[{i}].ports: expected a list")
            for j, port in enumerate(ports):
                at = f"spec.{field_name}[{i}].ports[{j}]"
                if not isinstance(port, Mapping):
                    raise ValueError(f"{at}: expected a port")
                number = port.get("hostPort")
                if number is None:
                    continue
                number = _int(number, f"{at}.hostPort")
                if number == 0:
                    continue
                if not 0 < number < 65536:
                    raise ValueError(f"{at}.hostPort: {number} is not a port number")
                protocol = port.get("protocol") or "TCP"
                if protocol not in _PROTOCOLS:
                    raise ValueError(f"{at}.protocol: {protocol!r} is not TCP, UDP or SCTP")
                ip = port.get("hostIP") or WILDCARD_IP
                if not isinstance(ip, str):
                    raise ValueError(f"{at}.hostIP: expected an address")
                out.append(HostPort(number, str(protocol), ip))
    return tuple(out)
