"""The network domain chosen for each topology gang, kept between its members' filters.

kube-scheduler filters a gang's members one at a time. The first member's filter chooses
the domain (``framework/topology_fit.choose_domain``) for every member not placed yet; the
others must land in the same one, so the choice is kept per PodGroup rather than made
again for each member. Choosing again would also cost a trial over the tree on every
member's filter, where a kept choice costs one dictionary lookup.

How long a choice holds:

- a domain chosen lives as long as the gang's assumption: the choice expires with the
  last assumption of a member (each member assumed pushes it to that assumption's
  expiry), or one assumption TTL after it was made when no member was assumed. By then
  the members that were bound pin the domain anyway (``choose_domain`` keeps only domains
  holding them), and the ones kube-scheduler gave up on are chosen for afresh;
- a choice made in another tree (the HyperNodes, the labels or the configuration changed)
  no longer holds: it is made again at once;
- a refusal (hard request, no domain holds the gang) holds only while the cluster is as
  it was when it was judged: the next change may free a domain, and a refusal kept for
  a TTL would keep a gang out of a domain that has just emptied.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from scheduler_core.api.job import JobInfo
from scheduler_core.framework.session import Session
from scheduler_core.framework.status import Status
from scheduler_core.framework.topology_fit import DomainChoice, choose_domain, placed_nodes
from scheduler_core.logutil import v

log = logging.getLogger("scheduler_core.extender.topology")

#: Choices the read-only views looked at, remembered while the cluster stands still.
MAX_PEEKED = 10_000


@dataclass(slots=True)
class KeptChoice:
    """One gang's choice, until ``expires`` (a domain) or while the cluster stays at
    ``version`` (a refusal)."""

    choice: DomainChoice
    expires: float
    version: int


class DomainChoices:
    """The kept choices, by job id. Owned by the session keeper, which holds the lock the
    verbs decide under: no lock of its own."""

    def __init__(self, ttl: float, clock: Callable[[], float]) -> None:
        self.ttl = ttl
        self.clock = clock
        self._kept: dict[str, KeptChoice] = {}
        self._peeked: dict[str, KeptChoice] = {}
        #: The last filter answer per gang: (choice, names offered, the domain's names among
        #: them, every offered node refused as outside the domain). kube-scheduler offers
        #: every member the same list, so the next member's answer is a copy, not a rebuild.
        self._answers: dict[
            str, tuple[DomainChoice, Sequence[str], list[str], dict[str, Status]]
        ] = {}
        self._peeked_at = -1
        #: Choices made (not served from the kept ones): what the cache saves is visible.
        self.made = 0

    def __len__(self) -> int:
        return len(self._kept)

    def __iter__(self) -> Iterator[tuple[str, DomainChoice]]:
        now = self.clock()
        for job_id, kept in list(self._kept.items()):
            if kept.expires > now:
                yield job_id, kept.choice

    def get(self, job_id: str) -> DomainChoice | None:
        """The kept choice of ``job_id`` if it has not expired (whatever the tree)."""
        kept = self._kept.get(job_id)
        if kept is None or kept.expires <= self.clock():
            return None
        return kept.choice

    def choice_for(self, ssn: Session, job: JobInfo, version: int) -> DomainChoice | None:
        """The domain for ``job``'s members: the kept choice while it holds, else a new one
        (kept). None for a job without a request, or when the session has no tree."""
        if job.network_topology is None:
            return None
        now = self.clock()
        if (kept := self._kept_choice(ssn, job, now, version)) is not None:
            return kept
        self._sweep(now)
        choice = choose_domain(ssn, job)
        self.made += 1
        if choice is None:
            self._kept.pop(job.uid, None)
            return None
        self._kept[job.uid] = KeptChoice(choice, now + self.ttl, version)
        if choice.domain is not None:
            log.log(
                v(3),
                "Gang <%s> (%s) placed in domain %s: %s",
                job.uid,
                choice.request.describe(),
                choice.domain.name,
                choice.reason,
            )
        else:
            log.log(
                v(3),
                "Gang <%s> (%s) has no domain: %s",
                job.uid,
                choice.request.describe(),
                choice.reason,
            )
        return choice

    def _kept_choice(
        self, ssn: Session, job: JobInfo, now: float, version: int
    ) -> DomainChoice | None:
        """The choice kept for ``job`` while it still holds in ``ssn``, else None."""
        kept = self._kept.get(job.uid)
        if kept is not None and self._holds(kept, ssn, job, now, version):
            return kept.choice
        return None

    @staticmethod
    def _holds(kept: KeptChoice, ssn: Session, job: JobInfo, now: float, version: int) -> bool:
        choice = kept.choice
        if kept.expires <= now or choice.topology is not ssn.topology:
            return False
        if choice.request != job.network_topology:
            return False
        return choice.domain is not None or kept.version == version

    def peek(self, ssn: Session, job: JobInfo, version: int) -> DomainChoice | None:
        """The choice the next filter of ``job``'s member would follow, without keeping a
        new one: for the read-only views (explain, what-if), which must not steer the verbs."""
        if job.network_topology is None:
            return None
        now = self.clock()
        if (kept := self._kept_choice(ssn, job, now, version)) is not None:
            return kept
        # Looked at again by the next page view: remembered apart from the verbs' choices,
        # while the cluster stays as it is (a view of 100 pending gangs must not run 100
        # trials over the tree on every refresh).
        if self._peeked_at != version or len(self._peeked) > MAX_PEEKED:
            self._peeked.clear()
            self._peeked_at = version
        seen = self._peeked.get(job.uid)
        if seen is not None and self._holds(seen, ssn, job, now, version):
            return seen.choice
        choice = choose_domain(ssn, job)
        if choice is not None:
            self._peeked[job.uid] = KeptChoice(choice, now + self.ttl, version)
        return choice

    def domain_name(self, ssn: Session, job: JobInfo) -> str | None:
        """The domain a PodGroup carries (its annotation): the one kept for the gang while
        its members are being placed; after that, the narrowest domain of an allowed tier
        that holds every member placed (the one they pin). None for a job that asks for none,
        or when no domain is known (no member placed, or none holds them together)."""
        request = job.network_topology
        if request is None:
            return None
        topology = ssn.topology
        kept = self.get(job.uid)
        if kept is not None and kept.domain is not None and kept.topology is topology:
            return kept.domain.name
        max_tier = topology.highest_tier(request)
        pins = placed_nodes(job)
        if max_tier is None or not pins:
            return None
        domain = topology.common_domain(pins, max_tier)
        return domain.name if domain is not None else None

    def extend(self, job_id: str, until: float) -> None:
        """A member of ``job_id`` was assumed until ``until``: its gang's choice lives at
        least as long."""
        kept = self._kept.get(job_id)
        if kept is not None and kept.choice.domain is not None and kept.expires < until:
            kept.expires = until

    def forget(self, job_id: str) -> None:
        self._kept.pop(job_id, None)
        self._answers.pop(job_id, None)

    def answer(
        self, job_id: str, choice: DomainChoice, names: Sequence[str]
    ) -> tuple[list[str], dict[str, Status]] | None:
        """(the domain's names among ``names``, the refusal of every name) as kept for the
        same choice and the same offered names; None otherwise. The map is the kept one:
        copy it before changing it."""
        got = self._answers.get(job_id)
        # (The verbs hand a list offered again as the same tuple: found without a look.)
        if got is None or got[0] is not choice or not (got[1] is names or got[1] == names):
            return None
        return got[2], got[3]

    def keep_answer(
        self,
        job_id: str,
        choice: DomainChoice,
        names: Sequence[str],
        inside: list[str],
        refused: dict[str, Status],
    ) -> None:
        # A tuple is kept as it is (it cannot change); a list is copied, as it may.
        kept = names if isinstance(names, tuple) else list(names)
        self._answers[job_id] = (choice, kept, inside, dict(refused))

    def _sweep(self, now: float) -> None:
        """Drop expired choices (of gangs long placed or gone), so the map stays as small as
        the set of gangs being placed."""
        for job_id in [j for j, k in self._kept.items() if k.expires <= now]:
            del self._kept[job_id]
        for job_id in [j for j in self._answers if j not in self._kept]:
            del self._answers[job_id]
