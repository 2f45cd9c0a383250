"""Volcano's ``HyperNode`` objects and a PodGroup's ``spec.networkTopology``, into
``scheduler_core.api.topology``.

A HyperNode (``topology.volcano.sh/v1alpha1``, cluster-scoped) has ``spec.tier`` (an integer
≥ 0; older objects wrote it as a string of digits, read the same), an optional
``spec.tierName`` and ``spec.members``: each of ``type`` ``Node`` or ``HyperNode`` with a
``selector`` holding exactly one of ``exactMatch.name``, ``regexMatch.pattern`` or
``labelMatch`` (a label selector; as in Volcano, an empty one selects no node and one on a
HyperNode member selects nothing). A HyperNode the API server's schema would have refused is a
``ValueError`` naming the object and the field: the caller refuses the whole tree with that
sentence rather than build one without the object (half a tree places gangs across switches
without saying so). Whether a pattern compiles, a member exists or the tiers nest is the
tree's business (``build_from_hypernodes``), not the object's.

A PodGroup's request never makes the PodGroup unreadable: its gang, queue and minimum are
fine. A malformed request (an unknown mode, a negative or non-integer tier, both bound forms
at once, which Volcano's admission refuses) is kept as a hard request carrying the sentence
in ``problem``, so that no member is placed and each is told why, instead of the gang being
placed by count as if it had asked nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler_core.api.topology import (
    MEMBER_HYPERNODE,
    MEMBER_NODE,
    HyperNodeMember,
    HyperNodeSpec,
    MemberSelector,
    NetworkTopologyRequest,
    TopologyMode,
)
from scheduler_core.cache.convert_constraints import label_selector

#: Where HyperNodes are served: the group and version of Volcano's topology API.
HYPERNODE_API_VERSION = "topology.volcano.sh/v1alpha1"


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(name, str) or not name:
        raise ValueError("HyperNode: metadata.name is required")
    return name


def _tier(raw: Any, where: str) -> int:
    if isinstance(raw, bool):
        raise ValueError(f"{where}: spec.tier must be an integer ≥ 0, got {raw!r}")
    if isinstance(raw, str) and raw.isdigit():
        return int(raw)
    if not isinstance(raw, int) or raw < 0:
        raise ValueError(f"{where}: spec.tier must be an integer ≥ 0, got {raw!r}")
    return raw


def _selector(raw: Any, at: str, member_type: str) -> MemberSelector:
    if not isinstance(raw, Mapping):
        raise ValueError(f"{at}.selector is required (exactMatch, regexMatch or labelMatch)")
    given = [k for k in ("exactMatch", "regexMatch", "labelMatch") if raw.get(k) is not None]
    if len(given) != 1:
        raise ValueError(
            f"{at}.selector must hold exactly one of exactMatch, regexMatch, labelMatch"
            f" (has {', '.join(given) or 'none'})"
        )
    kind = given[0]
    body = raw[kind]
    if kind == "labelMatch":
        labels = label_selector(body, f"{at}.selector.labelMatch")
        if labels is None or not labels.requirements or member_type != MEMBER_NODE:
            # As in Volcano: an empty label selector selects no node (not every node), and
            # HyperNode members are chosen by name only.
            return MemberSelector()
        return MemberSelector(labels=labels)
    field = "name" if kind == "exactMatch" else "pattern"
    value = body.get(field) if isinstance(body, Mapping) else None
    if not isinstance(value, str) or not value:
        raise ValueError(f"{at}.selector.{kind}.{field} must be a non-empty string")
    return MemberSelector(exact=value) if kind == "exactMatch" else MemberSelector(regex=value)


def hypernode_to_spec(obj: Mapping[str, Any]) -> HyperNodeSpec:
    """One HyperNode object as specified (its members unresolved); ``ValueError`` naming the
    object and field for a shape the CRD's schema refuses."""
    name = _name(obj)
    where = f"HyperNode {name}"
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        raise ValueError(f"{where}: spec is required")
    tier = _tier(spec.get("tier"), where)
    tier_name = spec.get("tierName") or ""
    if not isinstance(tier_name, str):
        raise ValueError(f"{where}: spec.tierName must be a string")
    raw_members = spec.get("members") or []
    if not isinstance(raw_members, list):
        raise ValueError(f"{where}: spec.members must be a list")
    members: list[HyperNodeMember] = []
    for i, raw in enumerate(raw_members):
        at = f"{where}: spec.members[{i}]"
        if not isinstance(raw, Mapping):
            raise ValueError(f"{at} must be a mapping with type and selector")
        member_type = raw.get("type")
        if member_type not in (MEMBER_NODE, MEMBER_HYPERNODE):
            raise ValueError(f"{at}.type must be Node or HyperNode, got {member_type!r}")
        selector = _selector(raw.get("selector"), at, str(member_type))
        members.append(HyperNodeMember(type=str(member_type), selector=selector))
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return HyperNodeSpec(
        name=name,
        tier=tier,
        tier_name=tier_name,
        members=tuple(members),
        labels={str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {},
    )


def network_topology_request(raw: Any) -> NetworkTopologyRequest | None:
    """A PodGroup's ``spec.networkTopology``: None when absent; a malformed one as a hard
    request whose ``problem`` says what is wrong (see the module's docstring)."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        return _malformed(f"spec.networkTopology must be a mapping, got {raw!r}")
    mode_text = raw.get("mode") or TopologyMode.HARD.value
    try:
        mode = TopologyMode(mode_text)
    except ValueError:
        return _malformed(f"spec.networkTopology.mode {mode_text!r} is not hard or soft")
    allowed = raw.get("highestTierAllowed")
    if allowed is not None and (
        isinstance(allowed, bool) or not isinstance(allowed, int) or allowed < 0
    ):
        return _malformed(
            f"spec.networkTopology.highestTierAllowed must be an integer ≥ 0, got {allowed!r}"
        )
    name = raw.get("highestTierName") or ""
    if not isinstance(name, str):
        return _malformed(f"spec.networkTopology.highestTierName must be a string, got {name!r}")
    if allowed is not None and name:
        return _malformed(
            "spec.networkTopology sets both highestTierAllowed and highestTierName; set one of them"
        )
    return NetworkTopologyRequest(mode=mode, highest_tier_allowed=allowed, highest_tier_name=name)


def _malformed(problem: str) -> NetworkTopologyRequest:
    return NetworkTopologyRequest(mode=TopologyMode.HARD, problem=problem)
