"""kube-scheduler's extender wire as pydantic models, for the OpenAPI schema only.

The verbs never parse or encode a request with these (``protocol.py`` does it by hand, about 15
times faster on a 5,000-name answer); they describe the same keys to people and to the
schema-driven tests, and are kept apart so the hot path does not carry them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from scheduler_core.extender.prioritize import MAX_EXTENDER_PRIORITY, MIN_EXTENDER_PRIORITY

_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


class _Wire(BaseModel):
    model_config = ConfigDict(extra="allow")


class NamedObjectMeta(_Wire):
    """Kubernetes `metadata` of a Node; the extender reads only the name."""

    name: str = Field(min_length=1)


class UIDObjectMeta(_Wire):
    """Kubernetes `metadata` of a victim Pod; the extender reads only the UID."""

    uid: str = Field(min_length=1)


class Node(_Wire):
    """A Kubernetes `v1.Node`, passed through untouched."""

    metadata: NamedObjectMeta


class NodeList(_Wire):
    """A Kubernetes `v1.NodeList` (`nodeCacheCapable: false`)."""

    metadata: Any = None
    items: list[Node] | None = None


class VictimPod(_Wire):
    """A Kubernetes `v1.Pod` proposed as a victim (`nodeCacheCapable: false`)."""

    metadata: UIDObjectMeta


class ExtenderArgs(_Wire):
    """`ExtenderArgs`: the filter and prioritize request. Keys match case-insensitively."""

    Pod: dict[str, Any] = Field(description="The v1.Pod being scheduled.")
    Nodes: NodeList | None = Field(None, description="Candidate nodes (nodeCacheCapable: false).")
    NodeNames: list[str] | None = Field(
        None, description="Candidate node names (nodeCacheCapable)."
    )


class ExtenderFilterResult(BaseModel):
    """`ExtenderFilterResult`; the unused form of the node list is null."""

    Nodes: NodeList | None
    NodeNames: list[str] | None
    FailedNodes: dict[str, str] = Field(description="Unschedulable: preemption may help.")
    FailedAndUnresolvableNodes: dict[str, str] = Field(description="Preemption cannot help.")
    Error: str


class HostPriority(BaseModel):
    Host: str
    Score: int = Field(ge=MIN_EXTENDER_PRIORITY, le=MAX_EXTENDER_PRIORITY)


class MetaPod(_Wire):
    UID: str = Field(min_length=1)


# Go's int64: larger numbers fail to decode there, and here too.
_INT64 = Field(0, ge=_I64_MIN, le=_I64_MAX)


class MetaVictims(_Wire):
    Pods: list[MetaPod] | None = None
    NumPDBViolations: int | None = _INT64


class Victims(_Wire):
    Pods: list[VictimPod] | None = None
    NumPDBViolations: int | None = _INT64


class ExtenderPreemptionArgs(_Wire):
    """`ExtenderPreemptionArgs`; one of the two victim maps is null."""

    Pod: dict[str, Any] = Field(description="The v1.Pod that wants to preempt.")
    NodeNameToVictims: dict[str, Victims | None] | None = None
    NodeNameToMetaVictims: dict[str, MetaVictims | None] | None = None


class MetaVictimsResult(BaseModel):
    Pods: list[MetaPod]
    NumPDBViolations: int


class ExtenderPreemptionResult(BaseModel):
    """`ExtenderPreemptionResult`: nodes with a valid victim set, victims by decreasing priority."""

    NodeNameToMetaVictims: dict[str, MetaVictimsResult]
