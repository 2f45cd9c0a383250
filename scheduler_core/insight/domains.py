"""A topology gang's network domain as people read it: which domain, and why (the tiers
tried and the most each could hold), for explain, the what-if, the pending list, the status
page and ``kubectl queue``. One wording for all of them, taken from the choice the verbs
follow."""

from __future__ import annotations

from dataclasses import dataclass

from scheduler_core.api.job import JobInfo
from scheduler_core.api.topology import NetworkTopologyRequest
from scheduler_core.framework.session import Session
from scheduler_core.framework.topology_fit import DomainChoice


@dataclass(slots=True)
class TierTried:
    tier: int
    best: str | None
    holds: int


@dataclass(slots=True)
class DomainView:
    """One gang's domain. ``state``: ``placed`` (a domain chosen), ``refused`` (hard, none
    holds the gang: no member starts), ``anywhere`` (soft, none holds it: the cluster),
    ``ignored`` (the configuration turns requests off, or the cluster describes no
    topology: placed as any other gang)."""

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


def request_numbers(request: NetworkTopologyRequest) -> dict[str, object]:
    return {
        "mode": request.mode.value,
        "highestTierAllowed": request.highest_tier_allowed,
        "highestTierName": request.highest_tier_name or None,
    }


def ignored_sentence(ssn: Session, job: JobInfo) -> str:
    """Why a job's request is not honoured ("" when it is, or the job asks nothing)."""
    request = job.network_topology
    if request is None:
        return ""
    if not ssn.conf.network_topology.enabled:
        return (
            f"the gang asks for one network domain ({request.describe()}), but "
            "networkTopology.enabled is false in the scheduler configuration: the request is "
            "not honoured and the gang is placed as any other"
        )
    if ssn.topology.empty:
        return (
            f"the gang asks for one network domain ({request.describe()}), but the cluster "
            "describes no network topology (no HyperNodes, no label levels): the gang is "
            "placed as any other"
        )
    return ""


def tried_sentence(choice: DomainChoice) -> str:
    """``tier 1: at most 3 of 4 (s/a)``, for every tier tried without success."""
    return "; ".join(
        f"tier {t.tier}: at most {t.holds} of {choice.needed}"
        + (f" ({t.best.name})" if t.best is not None else "")
        for t in choice.trials
    )


def choice_sentence(choice: DomainChoice) -> str:
    """The domain and why, or why none, in one sentence."""
    tried = tried_sentence(choice)
    pinned = (
        f"; pinned by members already on {', '.join(choice.pinned_by)}" if choice.pinned_by else ""
    )
    if choice.domain is not None:
        why = choice.reason or "the members already placed are all there"
        lower = f" (no lower tier holds the gang: {tried})" if tried else ""
        return f"domain {choice.domain.name} (tier {choice.domain.tier}): {why}{lower}{pinned}"
    if choice.hard:
        return f"no domain ({choice.request.describe()}): {choice.reason}{pinned}"
    return (
        f"no domain of an allowed tier holds the gang ({choice.reason}): the request is "
        "soft, so its members go anywhere in the cluster"
    )


def domain_view(ssn: Session, job: JobInfo, choice: DomainChoice | None) -> DomainView | None:
    """The view of ``job``'s domain (None for a job that asks for none)."""
    request = job.network_topology
    if request is None:
        return None
    if choice is None:
        return DomainView(
            job.uid,
            request.describe(),
            request.mode.value,
            "ignored",
            None,
            None,
            0,
            ignored_sentence(ssn, job),
            [],
            [],
        )
    state = "placed" if choice.domain is not None else "refused" if choice.hard else "anywhere"
    return DomainView(
        job.uid,
        request.describe(),
        request.mode.value,
        state,
        choice.domain.name if choice.domain is not None else None,
        choice.domain.tier if choice.domain is not None else None,
        choice.needed,
        choice_sentence(choice),
        [
            TierTried(t.tier, t.best.name if t.best is not None else None, t.holds)
            for t in choice.trials
        ],
        list(choice.pinned_by),
    )


def short(view: DomainView | None) -> str:
    """The one cell a table shows: ``s/b (hard, tier ≤ 1)``, ``none (hard, tier ≤ 1)``,
    ``anywhere (soft, tier ≤ 1)``, ``ignored (...)``; "" for a job that asks nothing."""
    if view is None:
        return ""
    where = {"placed": view.domain or "", "refused": "none", "anywhere": "anywhere"}.get(
        view.state, "ignored"
    )
    return f"{where} ({view.request})"
