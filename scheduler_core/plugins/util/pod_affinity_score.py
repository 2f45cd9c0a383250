"""kube-scheduler's InterPodAffinity score, which Volcano's nodeorder weighs with
``podaffinity.weight``: how much a node's topology domains hold the pods a pod prefers to be
near (minus those it prefers to avoid), and how much the placed pods' own terms want it there.

Per topology pair ``(key, value)`` the placed pods add, for the incoming pod:

- each of its preferred affinity terms a placed pod matches: +weight at that pod's domain,
  each preferred anti-affinity term: -weight;
- each placed pod's required affinity term the incoming pod matches: +``HARD_WEIGHT``, its
  preferred affinity terms: +weight, its preferred anti-affinity terms: -weight.

A node's raw score is the sum over its labels' pairs; the scores are normalised over the
scored nodes to ``0..100`` by ``100 * (s - min) / (max - min)`` (all 0 when equal). A pod with
no preferred terms, in a session where no placed pod has affinity terms, is not scored at all
(every node 0), which costs one look at a list kept while placements stand still.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.task import TaskInfo
from scheduler_core.plugins.predicates.inter_pod_affinity import NamespaceLabels, term_matches_pod
from scheduler_core.plugins.predicates.placed import placed_pods, staying_among

#: kube-scheduler's ``hardPodAffinityWeight`` default (Volcano passes the same).
HARD_WEIGHT = 1
MAX_SCORE = 100

Pair = tuple[str, str]


def affinity_pods(node: NodeInfo, judged_uid: str) -> Iterable[TaskInfo]:
    """The staying pods on ``node`` with affinity terms of any kind."""
    return staying_among(node, node.affinity_uids, judged_uid)


def scores_others(node: NodeInfo) -> bool:
    """Whether a pod on ``node`` has terms that score other pods (required affinity,
    preferred affinity or anti-affinity): a pod with required anti-affinity alone only
    filters, so nodes holding nothing else are skipped when scoring a pod without preferred
    terms of its own. Leaving pods count too (a superset; the walk skips them)."""
    tasks = node.tasks
    for uid in node.affinity_uids:
        task = tasks.get(uid)
        terms = task.pod_affinity if task is not None else None
        if terms is not None and (terms.required or terms.preferred or terms.preferred_anti):
            return True
    return False


def topology_scores(
    task: TaskInfo, nodes: Iterable[NodeInfo], namespaces: NamespaceLabels
) -> Counter[Pair]:
    """The weight per topology pair (kube-scheduler's PreScore)."""
    scores: Counter[Pair] = Counter()
    affinity = task.pod_affinity
    preferred = affinity.preferred if affinity is not None else ()
    preferred_anti = affinity.preferred_anti if affinity is not None else ()
    own = bool(preferred or preferred_anti)
    for node in nodes:
        if not own and not node.affinity_uids:
            continue
        labels = node.labels
        pods = placed_pods(node, task.uid) if own else affinity_pods(node, task.uid)
        for pod in pods:
            for sign, terms in ((1, preferred), (-1, preferred_anti)):
                for weighted in terms:
                    value = labels.get(weighted.term.topology_key)
                    if value is not None and term_matches_pod(weighted.term, pod, namespaces):
                        scores[(weighted.term.topology_key, value)] += sign * weighted.weight
            theirs = pod.pod_affinity
            if theirs is None:
                continue
            for term in theirs.required:
                value = labels.get(term.topology_key)
                if value is not None and term_matches_pod(term, task, namespaces):
                    scores[(term.topology_key, value)] += HARD_WEIGHT
            for sign, terms in ((1, theirs.preferred), (-1, theirs.preferred_anti)):
                for weighted in terms:
                    value = labels.get(weighted.term.topology_key)
                    if value is not None and term_matches_pod(weighted.term, task, namespaces):
                        scores[(weighted.term.topology_key, value)] += sign * weighted.weight
    return scores


def normalized_scores(pairs: Mapping[Pair, int], nodes: Sequence[NodeInfo]) -> dict[str, float]:
    """Each node's raw score from ``pairs``, normalised to ``0..MAX_SCORE`` over ``nodes``
    (kube-scheduler's Score and NormalizeScore; integer scores, as it truncates)."""
    keys = {key for key, _ in pairs}
    raw: dict[str, int] = {}
    for node in nodes:
        labels = node.labels
        raw[node.name] = sum(pairs.get((key, labels[key]), 0) for key in keys if key in labels)
    if not raw:
        return {}
    low, high = min(raw.values()), max(raw.values())
    spread = high - low
    if spread <= 0:
        return dict.fromkeys(raw, 0.0)
    return {name: float(int(MAX_SCORE * ((s - low) / spread))) for name, s in raw.items()}
