"""A pod's placement constraints that depend on other pods: host ports, inter-pod affinity and
anti-affinity, and topology spread constraints, as kube-scheduler's NodePorts,
InterPodAffinity and PodTopologySpread plugins read them.

Selectors are kept already merged with ``matchLabelKeys`` / ``mismatchLabelKeys`` (each key
the pod carries becomes an ``In`` / ``NotIn`` requirement on the pod's own value), which is
what the API server does to affinity terms on admission and what kube-scheduler does to
spread constraints: the predicates then compare plain selectors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: Label-selector operators (``metav1.LabelSelectorOperator``).
IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
SELECTOR_OPERATORS = frozenset({IN, NOT_IN, EXISTS, DOES_NOT_EXIST})

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"

#: The address a host port binds to when the pod names none: every address of the node.
WILDCARD_IP = "0.0.0.0"


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == IN:
            value = labels.get(self.key)
            return value is not None and value in self.values
        if op == NOT_IN:
            value = labels.get(self.key)
            return value is None or value not in self.values
        if op == EXISTS:
            return self.key in labels
        return self.key not in labels


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A ``metav1.LabelSelector`` as requirements ANDed (``matchLabels`` are ``In`` with one
    value). An empty selector matches every set of labels; a selector the object did not
    have at all is ``None`` where it is used, and matches nothing."""

    requirements: tuple[LabelRequirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(req.matches(labels) for req in self.requirements)

    def with_requirements(self, extra: tuple[LabelRequirement, ...]) -> LabelSelector:
        return LabelSelector(self.requirements + extra) if extra else self


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """One required (or, with a weight, preferred) pod affinity or anti-affinity term.

    ``namespaces`` is what the term selects pods in besides ``namespace_selector``: the
    conversion fills it with the pod's own namespace when the term names neither, as
    kube-scheduler does. ``selector`` None (no ``labelSelector``) selects no pod.
    """

    topology_key: str
    selector: LabelSelector | None
    namespaces: frozenset[str] = frozenset()
    namespace_selector: LabelSelector | None = None

    def selects_namespace(self, namespace: str, namespace_labels: Mapping[str, str]) -> bool:
        if namespace in self.namespaces:
            return True
        selector = self.namespace_selector
        return selector is not None and selector.matches(namespace_labels)

    def matches(
        self, namespace: str, labels: Mapping[str, str], namespace_labels: Mapping[str, str]
    ) -> bool:
        """Whether a pod of ``namespace`` with ``labels`` is one this term is about."""
        selector = self.selector
        if selector is None or not selector.matches(labels):
            return False
        return self.selects_namespace(namespace, namespace_labels)


@dataclass(frozen=True, slots=True)
class WeightedPodAffinityTerm:
    weight: int
    term: PodAffinityTerm


@dataclass(frozen=True, slots=True)
class PodAffinity:
    """``spec.affinity.podAffinity`` and ``podAntiAffinity``, both kinds of term."""

    required: tuple[PodAffinityTerm, ...] = ()
    required_anti: tuple[PodAffinityTerm, ...] = ()
    preferred: tuple[WeightedPodAffinityTerm, ...] = ()
    preferred_anti: tuple[WeightedPodAffinityTerm, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.required or self.required_anti or self.preferred or self.preferred_anti)


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: LabelSelector | None
    min_domains: int | None = None
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE

    @property
    def hard(self) -> bool:
        return self.when_unsatisfiable == DO_NOT_SCHEDULE


def spread_constraint_from(
    item: Mapping[str, Any], at: str, selector: LabelSelector | None
) -> TopologySpreadConstraint:
    """One ``topologySpreadConstraints`` entry's own fields, checked as the API server checks
    them (a ValueError naming the field under ``at``): a pod's constraint and the cluster's
    default constraints share this, each with its own selector (a pod's, or none: the
    defaults select by the pod's labels)."""
    max_skew = item.get("maxSkew")
    if not isinstance(max_skew, int) or isinstance(max_skew, bool) or max_skew <= 0:
        raise ValueError(f"{at}.maxSkew: must be an integer greater than zero, got {max_skew!r}")
    topology_key = item.get("topologyKey")
    if not isinstance(topology_key, str) or not topology_key:
        raise ValueError(f"{at}.topologyKey: required, may not be empty")
    when = item.get("whenUnsatisfiable")
    if when not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
        raise ValueError(f"{at}.whenUnsatisfiable: {when!r} is not DoNotSchedule or ScheduleAnyway")
    min_domains = item.get("minDomains")
    if min_domains is not None:
        if not isinstance(min_domains, int) or isinstance(min_domains, bool) or min_domains <= 0:
            raise ValueError(
                f"{at}.minDomains: must be an integer greater than zero, got {min_domains!r}"
            )
        if when != DO_NOT_SCHEDULE:
            raise ValueError(f"{at}.minDomains: only allowed with DoNotSchedule")
    policies = []
    for name, default in (("nodeAffinityPolicy", HONOR), ("nodeTaintsPolicy", IGNORE)):
        value = item.get(name) or default
        if value not in (HONOR, IGNORE):
            raise ValueError(f"{at}.{name}: {value!r} is not Honor or Ignore")
        policies.append(str(value))
    return TopologySpreadConstraint(
        max_skew=max_skew,
        topology_key=topology_key,
        when_unsatisfiable=str(when),
        selector=selector,
        min_domains=min_domains,
        node_affinity_policy=policies[0],
        node_taints_policy=policies[1],
    )


@dataclass(frozen=True, slots=True)
class HostPort:
    """A container port bound on the node: ``(ip, protocol, port)``."""

    port: int
    protocol: str = "TCP"
    ip: str = WILDCARD_IP
