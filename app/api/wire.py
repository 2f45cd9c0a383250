"""The read-only API's JSON: pydantic models over the engine's answers (``scheduler_core.
insight``), camelCase on the wire, published in the OpenAPI schema."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from scheduler_core.insight import whatif as engine_whatif

#: Kubernetes units (cores, bytes, scalar units); ``null`` means unlimited.
Amounts = dict[str, float | None]


class _Out(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, from_attributes=True, frozen=True
    )


class DerivationRound(_Out):
    round: int
    label: str
    deserved: Amounts | None
    clamped: dict[str, list[str]] = Field(
        default_factory=dict, description="clamp (capability, request, guarantee) -> dimensions"
    )
    remaining: Amounts | None = Field(None, description="left to hand out at the pass start")
    total_weight: int | None = None
    weight: int | None = None
    before: Amounts | None = None
    offered: Amounts | None = Field(None, description="before + weighted share of remaining")
    met: str = Field("", description='"request", "capability" or empty')


class Derivation(_Out):
    plugin: str
    rounds: list[DerivationRound]
    bound_by: dict[str, str] = Field(description="resource -> what held its deserved amount")
    summary: str


class UsageHistory(_Out):
    half_life: str = Field(description="how fast past usage fades (usage.halfLife)")
    usage: Amounts = Field(
        description="decayed usage in amount-hours (core-hours, byte-hours, device-hours)"
    )
    adjusted: bool = Field(
        description="whether its deserved share was moved for it (only where the queues "
        "ask for more than the cluster holds and usage was measured)"
    )
    usage_share: float | None = Field(None, description="its share of the competing usage")
    weight_share: float | None = Field(None, description="its share of the competing weights")
    factor: float | None = Field(None, description="what its weight was multiplied by")
    weighted_deserved: Amounts | None = Field(
        None, description="its deserved share on the unadjusted weights"
    )


class Queue(_Out):
    name: str
    parent: str | None
    children: list[str]
    state: str
    weight: int
    reclaimable: bool
    guarantee: Amounts | None
    capability: Amounts | None
    real_capability: Amounts | None
    request: Amounts | None
    allocated: Amounts | None = Field(description="includes the assumed pods")
    assumed: Amounts | None = Field(description="filtered, not bound yet")
    assumed_pods: int
    deserved: Amounts | None
    share: float
    overused: bool
    jobs: int
    pending_jobs: int
    devices: dict[str, int] = Field(
        default_factory=dict,
        description="DRA devices its placed pods' allocated ResourceClaims hold, by "
        "deviceclass.resource.kubernetes.io/<device class> (the shares count them under each "
        "class's quota name)",
    )
    history: UsageHistory | None = Field(
        None, description="its usage over time and its effect (usagehistory plugin on)"
    )
    derivation: Derivation | None = None


class QueueList(_Out):
    queues: list[Queue]


class TierTried(_Out):
    tier: int
    best: str | None
    holds: int


class DomainView(_Out):
    """A topology gang's network domain: ``state`` placed (a domain chosen), refused (hard,
    none holds the gang), anywhere (soft, none holds it) or ignored (requests turned off, or
    no topology described)."""

    job: str
    request: str
    mode: str
    state: str
    domain: str | None
    tier: int | None
    needed: int
    sentence: str
    tried: list[TierTried]
    pinned_by: list[str]


class PendingJob(_Out):
    position: int
    job: str
    priority: int
    min_available: int
    ready: int
    pending: int
    request: Amounts | None
    first_pod: str | None
    code: str
    reason: str
    source: str = Field(default="volcano", description="volcano or native (see Explanation)")
    topology: str = Field(
        default="",
        description="the gang's network domain and request (e.g. 's/b (hard, tier ≤ 1)'); "
        "empty for a job that asks for none",
    )


class PendingPage(_Out):
    queue: str
    total: int
    jobs: list[PendingJob]


class Step(_Out):
    name: str
    question: str
    verdict: Literal["pass", "fail", "skip", "info"]
    rule: str
    detail: str
    numbers: dict[str, Any] = Field(default_factory=dict)


class NodeVictims(_Out):
    node: str
    mode: str
    victims: list[str]
    pdb_violations: int


class Explanation(_Out):
    kind: str
    name: str
    pod: str | None
    job: str | None
    queue: str | None
    phase: str
    filter: Literal["pass", "reject", "n/a"]
    code: str | None
    reason: str | None = Field(description="filter's reason, as kube-scheduler prints it")
    preemption_may_help: bool | None
    summary: str
    steps: list[Step]
    victims: list[NodeVictims] = Field(default_factory=list)
    source: str | None = Field(
        default=None,
        description="where the gang is defined: volcano (a Volcano PodGroup or a lone pod's "
        "group of one) or native (a Kubernetes PodGroup, scheduling.k8s.io)",
    )


class QueueChangeIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=253)
    weight: int | None = Field(None, ge=1, le=1_000_000)
    capability: dict[str, str | int | float] | None = Field(None, max_length=32)


class WhatIfIn(BaseModel):
    """Objects to add (Pods, PodGroups, Queues as Kubernetes JSON), pods to remove
    (``namespace/name``) and queue changes to try together."""

    model_config = ConfigDict(extra="forbid")

    add: list[dict[str, Any]] = Field(default_factory=list, max_length=500)
    remove: list[str] = Field(default_factory=list, max_length=500)
    queues: list[QueueChangeIn] = Field(default_factory=list, max_length=100)
    scope: Literal["submitted", "all"] = Field(
        "submitted",
        description="submitted: schedule only the added jobs, every other pending job stays "
        "as it is; all: the whole scheduling session, every pending job included",
    )

    def request(self) -> engine_whatif.WhatIfRequest:
        return engine_whatif.WhatIfRequest(
            add=self.add,
            remove=self.remove,
            queues=[engine_whatif.QueueChange(q.name, q.weight, q.capability) for q in self.queues],
            scope=self.scope,
        )


class Placement(_Out):
    pod: str
    node: str
    added: bool
    pipelined: bool


class Eviction(_Out):
    pod: str
    node: str
    queue: str | None
    action: str
    preemptor: str | None
    reason: str


class QueueFigures(_Out):
    deserved: Amounts | None
    allocated: Amounts | None
    share: float
    overused: bool


class QueueChange(_Out):
    name: str
    before: QueueFigures | None
    after: QueueFigures | None


class WhatIfOut(_Out):
    actions: list[str]
    placed: list[Placement]
    evicted: list[Eviction]
    unplaced: list[str]
    queues: list[QueueChange]
    domains: list[DomainView] = Field(
        default_factory=list,
        description="the network domain of each submitted gang that asks for one",
    )


class RecentEviction(_Out):
    """One eviction the reclaim loop made (shown once that loop exists)."""

    pod: str
    queue: str | None
    reason: str
    at: str


class ApiError(BaseModel):
    """One sentence saying what is wrong."""

    Error: str


def dump(model: BaseModel) -> bytes:
    return model.model_dump_json(by_alias=True).encode()


class TopologyDomain(_Out):
    name: str
    tier: int
    tier_name: str = Field(description="the HyperNode's tierName, or the level's label key")
    node_count: int
    parent: str | None
    children: list[str]


class TopologyTier(_Out):
    tier: int = Field(description="1 is the narrowest, closest to the nodes")
    tier_name: str
    domains: list[TopologyDomain]


class TopologyRefusal(_Out):
    source: str
    problems: dict[str, str] = Field(description="offending object -> what is wrong with it")
    message: str


class Topology(_Out):
    enabled: bool = Field(description="whether PodGroups' networkTopology is honoured")
    source: str = Field(description='"hypernodes", "labels" or "none"')
    label_levels: list[str]
    hypernodes: int
    nodes_in_domains: int
    tiers: list[TopologyTier] = Field(description="the serving tree's domains, by tier")
    refusal: TopologyRefusal | None = Field(
        description="why the tree the cluster describes now is refused (null when it holds)"
    )
    notes: list[str]
