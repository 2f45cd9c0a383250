"""The queues the members of Kubernetes' own PodGroups name.

A native PodGroup carries no queue of its own unless labelled; its members may name one.
The store keeps here which queue each member names, so a group that names none resolves to
its members' queue whatever order they came in.
"""

from __future__ import annotations


class MemberQueues:
    """Native group job id -> pod key -> the queue that member names."""

    def __init__(self, named: dict[str, dict[str, str]] | None = None) -> None:
        self._named: dict[str, dict[str, str]] = named or {}

    def note(self, job_id: str, pod_key: str, queue: str) -> None:
        """Remember the queue ``pod_key`` names in ``job_id`` ("" when it names none)."""
        named = self._named.setdefault(job_id, {})
        if queue:
            named[pod_key] = queue
        else:
            named.pop(pod_key, None)
        if not named:
            del self._named[job_id]

    def resolved(self, job_id: str, default: str) -> str:
        """The queue of a group that names none: the one its members name (the member whose
        key sorts first when they disagree), else ``default``."""
        named = self._named.get(job_id)
        if not named:
            return default
        return named[min(named)]

    def fork(self) -> MemberQueues:
        """A copy a fork may change without touching this one."""
        return MemberQueues({j: dict(m) for j, m in self._named.items()})
