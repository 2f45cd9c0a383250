"""prioritize: the configured node order (binpack, nodeorder) on kube-scheduler's 0..10 scale,
and for a member of a topology gang placed in a domain wider than one leaf, Volcano's
hypernode binpack: the nodes of the fuller narrowest domains first, so that the gang packs
into as few leaves as it can and whole leaves stay free."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import repeat
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from scheduler_core.accounting.keeper import QueueAccounting
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.task import TaskInfo
from scheduler_core.cache.convert import pod_job_id
from scheduler_core.extender.context import request_task
from scheduler_core.framework.node_scores import FloatArray
from scheduler_core.framework.session import Session
from scheduler_core.framework.topology_fit import domain_fullness

IntArray = npt.NDArray[np.int64]

#: kube-scheduler's ``MaxExtenderPriority``: an extender's scores run from 0 to this.
MAX_EXTENDER_PRIORITY = 10
MIN_EXTENDER_PRIORITY = 0


class HostScores(Sequence[tuple[str, int]]):
    """prioritize's answer: the input names beside one int array, clipped here to 0..10.

    The HTTP layer encodes the answer straight from the array when the names are the
    request's (no per-node dict, one range check over the array); read as a sequence it is
    the (node, score) pairs, for callers that want them one by one.
    """

    __slots__ = ("names", "scores")

    def __init__(self, names: list[str], scores: IntArray) -> None:
        if len(names) != len(scores):
            raise ValueError(f"{len(names)} node names but {len(scores)} scores")
        self.names = names
        self.scores: IntArray = np.clip(scores, MIN_EXTENDER_PRIORITY, MAX_EXTENDER_PRIORITY)

    @classmethod
    def neutral(cls, names: list[str]) -> HostScores:
        """0 for every node: no preference among them."""
        return cls(names, np.zeros(len(names), dtype=np.int64))

    def __len__(self) -> int:
        return len(self.names)

    @overload
    def __getitem__(self, i: int) -> tuple[str, int]: ...
    @overload
    def __getitem__(self, i: slice) -> list[tuple[str, int]]: ...
    def __getitem__(self, i: int | slice) -> tuple[str, int] | list[tuple[str, int]]:
        if isinstance(i, slice):
            return list(zip(self.names[i], self.scores[i].tolist(), strict=True))
        return self.names[i], int(self.scores[i])

    def __iter__(self) -> Iterator[tuple[str, int]]:
        return zip(self.names, self.scores.tolist(), strict=True)


def prioritize_pod(acct: QueueAccounting, pod: dict[str, Any], node_names: list[str]) -> HostScores:
    """Scores in input order; a node the cache does not know yet scores 0 (neutral).

    Node order needs only the pod and the nodes, never the pod's job, so the shared
    accounting session serves every request (no per-pod session even for a pod the cache
    has not seen yet). The pod is kube-scheduler's, as stored: see ``request_task``.
    """
    ssn = acct.session()
    task = request_task(acct, pod, as_stored=True)
    scores = host_scores(ssn, task, node_names)
    if len(acct.domains):  # only while some topology gang is being placed
        return with_domain_binpack(acct, ssn, pod, task, scores)
    return scores


def with_domain_binpack(
    acct: QueueAccounting, ssn: Session, pod: dict[str, Any], task: TaskInfo, scores: HostScores
) -> HostScores:
    """``scores`` averaged with the fullness of each node's narrowest domain (scaled to
    0..10), for a member of a gang whose chosen domain spans several of them; unchanged
    otherwise."""
    choice = acct.domains.get(pod_job_id(pod)[0])
    topology = ssn.topology
    if choice is None or choice.domain is None or choice.topology is not topology:
        return scores
    narrowest = topology.tiers[0]
    if choice.domain.tier <= narrowest:
        return scores  # one leaf: within it, the node order alone
    wanted = task.init_resreq
    fullness: dict[str, float] = {}
    leaves: list[str | None] = []
    for name in scores.names:
        leaf = topology.domain_of(name, narrowest)
        leaves.append(leaf.name if leaf is not None else None)
        if leaf is not None and leaf.name not in fullness:
            fullness[leaf.name] = domain_fullness(ssn, leaf, wanted)
    # On the extender's scale as node scores are: the fullest leaf offered 10, the others
    # in proportion, an empty one 0.
    full = np.array([fullness[leaf] if leaf is not None else 0.0 for leaf in leaves])
    bonus = extender_scale_array(full)
    return HostScores(scores.names, (scores.scores + bonus) // 2)


class _Offered:
    """The nodes of the last list of names prioritize was offered in a session, found once:
    kube-scheduler offers the same nodes call after call, and finding 5,000 names three
    ways (the session's nodes, their names, the table's rows) cost a third of an answer.
    Replaced whole (one assignment), so a reader on another thread sees one list or the
    other, never a mix."""

    last: tuple[list[str], list[NodeInfo | None], list[NodeInfo], list[str] | None] | None = None

    def of(
        self, ssn: Session, node_names: list[str]
    ) -> tuple[list[NodeInfo | None], list[NodeInfo], list[str] | None]:
        """(each name's node or None, the known nodes, their names when no name repeats)."""
        last = self.last
        if last is not None and last[0] == node_names:
            return last[1], last[2], last[3]
        found = list(map(ssn.nodes.get, node_names))
        nodes = list(filter(None, found))  # NodeInfo is always truthy
        listed = [node.name for node in nodes]
        names = listed if len(set(listed)) == len(listed) else None
        self.last = (list(node_names), found, nodes, names)
        return found, nodes, names


def host_scores(ssn: Session, task: TaskInfo, node_names: list[str]) -> HostScores:
    """``task``'s extender scores for ``node_names`` in input order, unknown nodes 0.

    A session's nodes never change under it (a cluster change that adds, removes or
    replaces a node opens a new session), so what a list of names resolves to is kept for
    the session (``ssn.shared``) and reused while the next request offers the same names."""
    found, nodes, names = ssn.shared.slot("prioritize.offered", _Offered).of(ssn, node_names)
    raw = ssn.node_score_array(task, nodes, names) if nodes and names is not None else None
    if raw is None:  # no node known, or a name listed twice: the per-name dict path
        scores = extender_scores(ssn, task, nodes) if nodes else {}
        ints = np.fromiter(map(scores.get, node_names, repeat(0)), np.int64, len(node_names))
        return HostScores(node_names, ints)
    scaled = extender_scale_array(raw)
    if len(nodes) == len(node_names):
        return HostScores(node_names, scaled)
    ints = np.zeros(len(node_names), dtype=np.int64)
    ints[np.fromiter(map(_is_known, found), np.bool_, len(found))] = scaled
    return HostScores(node_names, ints)


def _is_known(node: NodeInfo | None) -> bool:
    return node is not None


def extender_scores(ssn: Session, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, int]:
    """The session's node scores on the extender's 0..10 scale (``MaxExtenderPriority``)."""
    return extender_scale(ssn.node_scores(task, nodes))


def extender_scale(raw: Mapping[str, float]) -> dict[str, int]:
    """``extender_scale_array`` by node name."""
    scores = np.fromiter(raw.values(), np.float64, len(raw))
    return dict(zip(raw, extender_scale_array(scores).tolist(), strict=True))


def extender_scale_array(scores: FloatArray) -> IntArray:
    """Linear in the score, anchored at 0: the best node gets 10, a node scoring 0 (or less)
    gets 0, others ``floor(10 * score / best)``. Anchoring at 0 rather than at the worst
    node keeps the ratio between nodes, so a nearly-as-good node is not pushed to 0 when
    all candidates are close; when no node scores above 0 every node gets 0.

    On arrays (thousands of nodes a request), the same float operations as
    ``math.floor(10 * score / best + 1e-9)`` per node.
    """
    best = float(scores.max()) if len(scores) else 0.0
    if best <= 0:
        return np.zeros(len(scores), dtype=np.int64)
    scaled = np.floor(MAX_EXTENDER_PRIORITY * scores / best + 1e-9)
    scaled = np.where(scores >= best, MAX_EXTENDER_PRIORITY, scaled)
    scaled = np.where(scores <= 0, 0, scaled)
    return scaled.astype(np.int64)
