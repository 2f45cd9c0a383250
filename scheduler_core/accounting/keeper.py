"""Queue accounting for the extender: a read-only session kept current, plus assumptions.

kube-scheduler asks the extender about one pod at a time and binds it later; the informers
see the binding only afterwards. Between the two, the pod is *assumed*: added to its queue's
allocation through the plugins' own event handlers, so two quick filters cannot both spend
the same share. An assumption ends when the cluster shows the pod bound (its resources are
then counted for real), shows it deleted, or after a TTL.

Members of a Kubernetes PodGroup gang are filtered one by one within one group cycle of
kube-scheduler, which reverts them all when the group does not fit; their assumptions are
kept by group, and end together when the group fails: kube-scheduler reports a member
unschedulable after it was assumed, or no member is bound within the group window (a few
seconds, not the TTL) after the group's last assumption.

The session follows the cluster's events rather than being opened again for each one (at
most once per batch of changes, ``min_refresh_interval``, never per request). The cache
classifies every event (see ``cache/changes.py``): one that changes nothing a session
derives as it opens (a running pod's labels) leaves the session as it is; one that changes
only the usage of existing jobs (a pod bound or deleted, a PodGroup's phase) is followed in
place, re-deriving just the queues and nodes it touched (see ``following.py``); anything
else (a job, node or queue coming or going, a new configuration) opens a new session. A
session kept either way answers exactly as a new one would: resource amounts are whole
milli-units and bytes, so the sums do not depend on the order they were added in.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections import ChainMap
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

from scheduler_core.accounting.domains import DomainChoices
from scheduler_core.accounting.following import can_follow, follow
from scheduler_core.accounting.grants import PreemptionGrants
from scheduler_core.accounting.parked import ParkedPods
from scheduler_core.api.job import NATIVE_SOURCE, JobInfo
from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import TaskStatus
from scheduler_core.api.usage import JobUsage, swap_job_usage
from scheduler_core.cache.state import ClusterState
from scheduler_core.conf import SchedulerConfiguration
from scheduler_core.engine import close_session, open_session
from scheduler_core.framework.hooks import ADJUST_WEIGHTS
from scheduler_core.framework.memo import SessionMemos
from scheduler_core.framework.session import Session
from scheduler_core.framework.topology_fit import DomainChoice
from scheduler_core.logutil import v

log = logging.getLogger("scheduler_core.extender")
_V4, _V5 = v(4), v(5)

#: Assumptions of pods the cache has not shown, held at once in one queue. Such a pod is
#: judged on kube-scheduler's word alone (its watch may be ahead of ours), so anyone who can
#: reach the verbs could invent pods and hold a queue's share with them; past this many the
#: rest are answered without being assumed.
DEFAULT_MAX_UNSEEN_PER_QUEUE = 16

#: Seconds a native gang's assumptions wait for one member to be shown bound after the
#: group's last assumption: kube-scheduler binds a group it placed right after its cycle.
DEFAULT_GROUP_WINDOW = 10.0

# What the API server accepts: a namespace is a DNS label, a pod name a DNS subdomain, a UID
# a UUID-like token (letters, digits and dashes).
_DNS_LABEL = re.compile(r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?")
_UID = re.compile(r"[A-Za-z0-9][-A-Za-z0-9]{0,127}")


def implausible_pod(task: TaskInfo) -> str:
    """Why ``task`` cannot be a pod the API server holds ("" when it could be)."""
    namespace, _, name = task.key.partition("/")
    if not _DNS_LABEL.fullmatch(namespace):
        return f"namespace {namespace!r} is not a DNS label"
    if not _DNS_SUBDOMAIN.fullmatch(name) or ".." in name:
        return f"name {name!r} is not a DNS subdomain"
    if not _UID.fullmatch(task.uid):
        return f"uid {task.uid!r} is not a UID"
    return ""


@dataclass(slots=True)
class Assumption:
    task: TaskInfo
    queue: str
    expires: float
    seen_in_cluster: bool = False
    # The job as judged, kept while the cache has not shown the pod: sessions opened in the
    # meantime must still count it in its queue (see ``add_unseen_jobs``).
    job: JobInfo | None = None
    #: The native gang (job id) whose group cycle assumed the pod; "" for any other pod.
    group: str = ""
    #: The cache's task of the pod when it was assumed (the cache replaces a task on every
    #: update, never changes one): a different one later is news from the cluster.
    cached: TaskInfo | None = None
    #: The uid of the accounting session the assumption is charged to, -1 for none: it is
    #: not charged where the session counts the pod already (the cache shows it bound), so
    #: only a charge made is taken back (``_settle``).
    charged_in: int = -1


class QueueAccounting:
    def __init__(
        self,
        state: ClusterState,
        conf: SchedulerConfiguration,
        *,
        assume_ttl: float = 30.0,
        min_refresh_interval: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        max_unseen_per_queue: int = DEFAULT_MAX_UNSEEN_PER_QUEUE,
        group_window: float = DEFAULT_GROUP_WINDOW,
    ) -> None:
        self.state = state
        self.conf = conf
        self.assume_ttl = assume_ttl
        self.group_window = min(group_window, assume_ttl)
        #: Native gang (job id) -> when the window of its current group cycle closes; gone
        #: once a member is shown bound (the cycle placed the group).
        self._group_deadlines: dict[str, float] = {}
        #: Assumptions released because their native gang's group cycle failed.
        self.group_released = 0
        self.max_unseen_per_queue = max_unseen_per_queue
        #: Pods the cache had not shown that were answered without being assumed (implausible,
        #: or their queue held its cap of unseen assumptions), and unseen assumptions dropped
        #: because the API server said the pod does not exist.
        self.unseen_refused = 0
        self.unseen_dropped = 0
        self.min_refresh_interval = min_refresh_interval
        self.clock = clock
        self.assumed: dict[str, Assumption] = {}  # pod key -> assumption
        #: No assumption expires before this: the earliest expiry when they were last
        #: looked at, lowered as pods are assumed. Most verb calls then skip the look.
        self._expiry_floor = -math.inf
        self.grants = PreemptionGrants(ttl=assume_ttl, clock=clock)
        self.parked = ParkedPods()
        #: The network domain chosen for each topology gang, kept while its assumption lives.
        self.domains = DomainChoices(ttl=assume_ttl, clock=clock)
        #: What the plugins remember from one of this accounting's sessions to the next.
        self.memos = SessionMemos()
        self._session: Session | None = None
        #: Jobs of pods the cache has not shown yet, in the session in place of the cache's job
        #: of their uid (the value) or after the session's jobs (None), as a new session adds
        #: them for the assumptions of such pods (``add_unseen_jobs``); and the per-queue
        #: sums with them in place of the cache's. Put back and made again on every follow.
        self._overlays: dict[str, JobInfo | None] = {}
        self._overlay_usage: dict[str, JobUsage] = {}
        #: The jobs of unseen pods in the session are not those a new session would add now
        #: (one was assumed, judged or ended since): the next ``session()`` follows.
        self._overlays_stale = False
        #: A verb is judging a pod the cache has not shown in the session, its job taken in
        #: (``take_in_unseen``): until the next ``session()``, which puts it right.
        self._judging_unseen = False
        #: The session every plugin said it can follow (asked once a session, see
        #: ``_can_follow``); None until asked, and again once that session is replaced.
        self._follows_session: Session | None = None
        self._version = -1
        self._built_at = 0.0
        #: The usage history's epoch when the session opened (``_usage_moved``).
        self._usage_epoch = 0
        self._reconfigured = False
        #: Sessions opened over every job (the first, and each rebuild).
        self.refreshes = 0
        #: Cluster changes the session followed in place instead of being rebuilt.
        self.follows = 0
        #: Sessions opened for one pod the cache had not shown yet (``PodContext``).
        self.one_off_sessions = 0
        #: Pods the cache had not shown yet judged in the accounting session itself, their
        #: job taken into it in place (``take_in_unseen``).
        self.taken_in = 0
        # Assumptions that ran out their TTL without the cluster showing the pod bound or
        # deleted (kube-scheduler gave up on the cycle, or timed out waiting for the answer).
        self.expired = 0

    def use_configuration(self, conf: SchedulerConfiguration) -> None:
        """Decide by ``conf`` from the next verb on: the session is rebuilt then whatever the
        refresh interval, since a session opened with the old tiers would keep deciding by
        them until the cluster next changed. Call with the cluster state's lock held."""
        self.conf = conf
        self._reconfigured = True

    # --- the accounting session ---------------------------------------------------------

    def session(self) -> Session:
        """The current read-only session, kept current with the cluster's decisions-relevant
        changes (rate-limited): followed in place where it can be, else rebuilt. The jobs of
        pods the cache has not shown are brought right whatever the refresh interval."""
        now = self.clock()
        self._judging_unseen = False
        usage_moved = self._usage_moved() and now - self._built_at >= self.min_refresh_interval
        if self._session is None or self._reconfigured or usage_moved:
            self._rebuild(now)
        elif self._overlays_stale or (
            self.state.decision_version != self._version
            and now - self._built_at >= self.min_refresh_interval
        ):
            if not self._follow(now):
                self._rebuild(now)
        else:
            self._expire(now)
            if self._overlays_stale and not self._follow(now):
                self._rebuild(now)
        assert self._session is not None
        return self._session

    def _usage_moved(self) -> bool:
        """Whether the session's deserved shares weigh past usage that has moved on since
        it opened (usage fades with time, not with cluster events: only a new session
        reads it again)."""
        ssn = self._session
        history = self.state.usage_history
        if ssn is None or history is None or not ssn.hook_fns(ADJUST_WEIGHTS):
            return False
        return history.epoch() != self._usage_epoch

    def take_in_unseen(self, job: JobInfo, task: TaskInfo) -> tuple[Session, JobInfo] | None:
        """The accounting session with ``job`` as judged with ``task`` in it (a pod the
        cache has not shown yet), and that job; None when only a one-off session will do
        (the session is not current with the cache, or cannot follow in place).

        Opening a one-off session for such a pod walks every job (~6 ms at 50,000 pods);
        here the job is put where that session has it (in place of the session's job of its
        uid, or after the session's jobs and before the jobs added for other unseen pods)
        and its queue derived again with the job's sums in place of the one it replaces, as
        a session opened on the cache with that job would have it. The next ``session()``
        puts right the jobs of unseen pods (this one's stays if its pod was assumed). Call
        with the cluster state's lock held, for one verb's judgement (the verb charges its
        assumption to this session, ``assume``)."""
        ssn = self._session
        if (
            ssn is None
            or self._overlays_stale
            or self.state.decision_version != self._version
            or job.queue not in ssn.queues
            or not self._can_follow(ssn)
        ):
            return None
        with self.state.locked():
            uid, jobs = job.uid, ssn.jobs
            current = jobs.get(uid)
            if current is not None and current is not job:
                return None  # (not the session's job of that uid: judged elsewhere)
            own = job.clone()
            if task.uid not in own.tasks:
                own.add_task_info(task.clone())
            overlays, overlay_usage = dict(self._overlays), dict(self._overlay_usage)
            # After the session's jobs, before those of other unseen pods (a one-off session
            # puts this one first, then adds the others).
            after = [u for u, old in overlays.items() if old is None and u != uid]
            later = [jobs.pop(u) for u in after]
            sums: dict[str, JobUsage] = {}
            swap_job_usage(self._queue_usage(), current, own, sums)
            jobs[uid] = own
            for moved in later:
                jobs[moved.uid] = moved
            if uid not in self._overlays:
                self._overlays[uid] = current
            self._overlay_usage.update(sums)
            if not self._recount_in_place(ssn, set(sums), set(), {uid}):
                # (The follow changed nothing.)
                self._overlays, self._overlay_usage = overlays, overlay_usage
                for u in after:
                    del jobs[u]
                if current is not None:
                    jobs[uid] = current
                else:
                    del jobs[uid]
                for moved in later:
                    jobs[moved.uid] = moved
                return None
        self._overlays_stale = self._judging_unseen = True
        self.taken_in += 1
        return ssn, own

    def _queue_usage(self) -> Mapping[str, JobUsage]:
        """The per-queue sums the session is derived from: the cache's, but for the queues of
        jobs of pods the cache has not shown yet (``_overlays``)."""
        usage = self.state.queue_usage_view()
        if not self._overlay_usage:
            return usage
        return ChainMap(self._overlay_usage, dict(usage))

    def _rebuild(self, now: float) -> None:
        if self._session is not None:
            close_session(self._session, update_phases=False)
            self._session = None
        self._follows_session = None
        with self.state.locked():
            version = self.state.decision_version
            snapshot = self.state.shared_snapshot()
            live = dict(snapshot.queue_usage or {})  # (put_job replaces entries it touches)
            # Assumptions the cluster has caught up with go first: their pods' jobs must not
            # be added for them below.
            self._reconcile(now)
            self._overlays = self.add_unseen_jobs(snapshot)
            usage = snapshot.queue_usage or {}
            # (Sums the jobs added touched are the snapshot's own copies.)
            self._overlay_usage = {q: u for q, u in usage.items() if u is not live.get(q)}
            ssn = open_session(snapshot, self.conf, clone=False, read_only=True, memos=self.memos)
            self.replay_assumptions(ssn, accounting=True)
        self._session, self._version, self._built_at = ssn, version, now
        history = self.state.usage_history
        self._usage_epoch = history.epoch() if history is not None else 0
        self._reconfigured = self._overlays_stale = False
        self.refreshes += 1
        log.log(
            v(5),
            "Accounting session %d rebuilt at cluster version %d with %d assumed pods",
            ssn.uid,
            version,
            len(self.assumed),
        )

    def _follow(self, now: float) -> bool:
        """Bring the session up to date in place with the changes since it was last current:
        the plugins re-derive the queues of the jobs whose usage changed (and of assumptions
        that ended, and of the jobs of pods the cache has not shown), then those queues'
        assumptions are charged again, as replaying them in a new session would. False when
        only a new session will do (a structural change)."""
        ssn = self._session
        assert ssn is not None
        with self.state.locked():
            changes = self.state.changes.since(self._version)
            if changes is None or not self._can_follow(ssn):
                return False
            if changes.gone and changes.gone.keys() & changes.appeared.keys():
                return False  # came and went, or went and came back: where it is, unsaid
            # The cache's jobs back where jobs of unseen pods stood: the changes are its.
            put_back = self._put_back_cache_jobs(ssn)
            if put_back is None:
                return False
            gone = self._let_go(ssn, changes.gone) if changes.gone else []
            if changes.appeared and not self._take_in(ssn, changes.appeared):
                return False
            version = self.state.decision_version
            ended = self._reconcile(now)
            added = self._put_unseen_jobs(ssn)
            jobs = ssn.jobs
            queues = {jobs[uid].queue for uid in changes.jobs if uid in jobs}
            if gone:
                queues.update(job.queue for job in gone)
            queues |= _queues_of(ssn, ended)
            for touched in (put_back, added):
                for job_queues in touched.values():
                    queues |= job_queues
            moved = {*changes.jobs, *(a.task.job for a in ended), *put_back, *added}
            left = {job.uid for job in gone}
            left.update(uid for uid in put_back if uid not in jobs)
            # (Checked just above that the session can follow; ending assumptions does
            # not change that.)
            if not self._recount_in_place(ssn, queues, changes.nodes, moved, left):
                # Nothing was changed, but the ended assumptions are gone: only a new
                # session counts the rest right now.
                self._rebuild(now)
                return True
        self._version, self._built_at = version, now
        self._overlays_stale = False
        self.follows += 1
        if log.isEnabledFor(_V5):  # followed before most verb calls: no call below -v 5
            log.log(
                _V5,
                "Accounting session %d followed to decision version %d (%d queues, %d nodes)",
                ssn.uid,
                version,
                len(queues),
                len(changes.nodes),
            )
        return True

    def _put_back_cache_jobs(self, ssn: Session) -> dict[str, set[str]] | None:
        """The cache's jobs back in ``ssn`` where jobs of pods it had not shown stood (those
        added after them taken out), and the overlays forgotten; returns each such job's
        uid with the queues it touched. None when the cache no longer holds a job one stood
        in for as it did (only a new session will do)."""
        jobs = ssn.jobs
        put_back: dict[str, set[str]] = {}
        for uid, old in self._overlays.items():
            overlay = jobs.get(uid)
            touched = {overlay.queue} if overlay is not None else set()
            if old is not None:
                if self.state.job(uid) is not old:
                    return None
                touched.add(old.queue)
                jobs[uid] = old  # (in its place: an existing key keeps it)
            else:
                jobs.pop(uid, None)
            put_back[uid] = touched
        self._overlays, self._overlay_usage = {}, {}
        return put_back

    def _put_unseen_jobs(self, ssn: Session) -> dict[str, set[str]]:
        """Put into ``ssn``, holding the cache's jobs, the jobs a new session adds for the
        assumed pods the cache has not shown (``_unseen_jobs``), where it puts them, with
        their queues' sums as it makes them (``ClusterSnapshot.put_job``); returns each
        job's uid with the queues it touched."""
        jobs = ssn.jobs
        live = self.state.queue_usage_view()
        sums: dict[str, JobUsage] = {}
        added: dict[str, set[str]] = {}
        for uid, job in self._unseen_jobs(jobs.get, ssn.queues).items():
            old = jobs.get(uid)
            self._overlays[uid] = old
            jobs[uid] = job
            added[uid] = swap_job_usage(live, old, job, sums)
        self._overlay_usage = sums
        return added

    def _take_in(self, ssn: Session, appeared: Iterable[str]) -> bool:
        """Put the jobs that appeared since ``ssn`` was current (plain pods' groups of one,
        PodGroups' jobs) where a session opened now would have them: after the jobs it has,
        in the order they came, those of a queue it knows (the others it would leave out
        too). False, changing nothing, when one is not the cache's job or the session holds
        it already. Call with the cluster state's lock held."""
        jobs, queues = ssn.jobs, ssn.queues
        taken: list[JobInfo] = []
        for uid in appeared:
            job = self.state.job(uid)
            if job is None or uid in jobs:
                return False
            if job.queue in queues:
                taken.append(job)
        for job in taken:
            jobs[job.uid] = job
        return True

    def _let_go(self, ssn: Session, gone: Iterable[str]) -> list[JobInfo]:
        """Take the jobs that went since ``ssn`` was current (plain pods' groups of one,
        PodGroups' jobs) out of it, as a session opened now would not have them: the others
        keep their order. Returns those it held, whose queues must be derived again (one it
        did not hold was of a queue it leaves out). Call with the cluster state's lock
        held."""
        jobs = ssn.jobs
        let_go: list[JobInfo] = []
        for uid in gone:
            job = jobs.pop(uid, None)
            if job is not None:
                let_go.append(job)
        return let_go

    def _recount(self, ssn: Session, queues: set[str], nodes: set[str], jobs: set[str]) -> bool:
        """Re-derive ``queues``, ``jobs`` and ``nodes`` in ``ssn`` from the cache, as a
        session opened now would have them, and charge those queues' assumptions again.
        False, changing nothing, when the session cannot be brought up to date in place.
        Call with the cluster state's lock held."""
        if not self._can_follow(ssn):
            return False
        return self._recount_in_place(ssn, queues, nodes, jobs)

    def _can_follow(self, ssn: Session) -> bool:
        """``can_follow(ssn)``, asked of the plugins once a session: a plugin's answer
        holds for the session's life (``Plugin.can_follow``), and it is needed before
        most verb calls."""
        if ssn is self._follows_session:
            return True
        if not can_follow(ssn):
            return False
        self._follows_session = ssn
        return True

    def _recount_in_place(
        self,
        ssn: Session,
        queues: set[str],
        nodes: set[str],
        jobs: set[str],
        left: Collection[str] = (),
    ) -> bool:
        """``_recount`` of a session already known to be followable: following a bind
        asked every plugin twice whether it can follow, once is enough. ``left``: the uids
        of the jobs just taken out of it (``_let_go``, a job of an unseen pod put back)."""
        if not queues and not nodes:
            return True
        if not follow(ssn, self._queue_usage(), queues, nodes, jobs, left):
            return False
        session_jobs = ssn.jobs
        charged = []
        for assumption in self.assumed.values():
            job = session_jobs.get(assumption.task.job)
            if job is not None and job.queue in queues:
                if _uncounted(job, assumption):
                    charged.append(assumption)
                    assumption.charged_in = ssn.uid
                else:
                    assumption.charged_in = -1  # (its queue derived again, without it)
        self._fire_all(ssn, charged, charge_back=True)
        return True

    def _settle(self, ended: list[Assumption]) -> None:
        """Take assumptions that just ended out of the accounting session. While it is
        current with the cluster, their queues are counted again from the cache (exactly
        what a new session would hold); else each charged to it is uncharged through the
        plugins' deallocate events (a rate-limited session catches up at its next
        refresh). One of a pod the cache had not shown leaves its job to be put right at
        the next ``session()``."""
        ssn = self._session
        if ssn is None or not ended:
            return
        if any(a.job is not None for a in ended):
            self._overlays_stale = True
        with self.state.locked():
            if self.state.decision_version == self._version and self._recount(
                ssn, _queues_of(ssn, ended), set(), {a.task.job for a in ended}
            ):
                return
        for assumption in ended:
            if assumption.charged_in == ssn.uid:
                self._fire(ssn, assumption, allocate=False)
                assumption.charged_in = -1

    def _reconcile(self, now: float) -> list[Assumption]:
        """Drop assumptions the cluster has caught up with (bound, deleted) or that expired,
        and those of native gangs whose group cycle failed; returns them."""
        ended: list[Assumption] = self._failed_groups(now)
        for key, assumption in list(self.assumed.items()):
            task = self.state.task(key)
            if task is not None:
                assumption.seen_in_cluster = True
                if task.status != TaskStatus.PENDING:
                    if log.isEnabledFor(_V4):  # every bound pod's: no call below -v 4
                        log.log(
                            _V4,
                            "Assumed pod <%s> is now %s: assumption confirmed",
                            key,
                            task.status,
                        )
                    ended.append(self.assumed.pop(key))
                    continue
            elif assumption.seen_in_cluster:
                log.log(v(4), "Assumed pod <%s> was deleted: assumption released", key)
                ended.append(self.assumed.pop(key))
                continue
            if assumption.expires <= now:
                log.log(
                    v(3),
                    "Assumed pod <%s> was not bound within %.0fs: assumption expired",
                    key,
                    self.assume_ttl,
                )
                ended.append(self.assumed.pop(key))
                self.expired += 1
        return ended

    def _failed_groups(self, now: float) -> list[Assumption]:
        """Take out every assumption of each native gang whose group cycle failed: a member
        was reported unschedulable since it was assumed, or no member was shown bound within
        the group window. A gang one of whose members is shown bound was placed: its
        assumptions end one by one, as any other's."""
        if not self._group_deadlines:
            return []
        members: dict[str, list[str]] = {}
        for key, assumption in self.assumed.items():
            if assumption.group:
                members.setdefault(assumption.group, []).append(key)
        ended: list[Assumption] = []
        for group, deadline in list(self._group_deadlines.items()):
            keys = members.get(group, [])
            why = ""
            for key in keys:
                task = self.state.task(key)
                if task is None:
                    continue
                if task.status != TaskStatus.PENDING:
                    why = ""
                    break
                if not why and task.unschedulable and task is not self.assumed[key].cached:
                    why = f"kube-scheduler reported pod <{key}> unschedulable"
            else:
                if not why and deadline <= now:
                    why = f"no member was bound within {self.group_window:.0f}s"
                if not why:
                    continue
                for key in keys:
                    ended.append(self.assumed.pop(key))
                self.group_released += len(keys)
                log.log(
                    v(3),
                    "Group cycle of gang <%s> failed (%s): %d assumptions released",
                    group,
                    why,
                    len(keys),
                )
            del self._group_deadlines[group]
        return ended

    def _expire(self, now: float) -> None:
        if now < self._expiry_floor and not self._group_deadlines:
            return  # (what each verb call finds: no assumption can have run out)
        expired = [k for k, a in self.assumed.items() if a.expires <= now]
        self._expiry_floor = min(
            (a.expires for a in self.assumed.values() if a.expires > now), default=math.inf
        )
        if not expired and not self._group_deadlines:
            return  # (what each verb call finds: nothing below would end an assumption)
        ended: list[Assumption] = self._failed_groups(now)
        for key in expired:
            ended.append(self.assumed.pop(key))
            self.expired += 1
            log.log(
                v(3),
                "Assumed pod <%s> was not bound within %.0fs: assumption expired",
                key,
                self.assume_ttl,
            )
        self._settle(ended)

    def replay_assumptions(self, ssn: Session, *, accounting: bool = False) -> None:
        """Count every assumed pod in a freshly opened session, except those the session
        already counts: an assumed pod the cache has meanwhile shown bound is in its job's
        allocation already, and counting it twice would hold back the next pod of its queue.
        ``accounting``: ``ssn`` is to be the accounting session (each assumption records
        whether it is charged to it). Call with the cluster state's lock held.

        Assumptions that end here (a one-off session's replay) are taken out of the
        accounting session too: it keeps no charge for an assumption it no longer holds."""
        ended = self._reconcile(self.clock())
        if ssn is not self._session:
            self._settle(ended)
        jobs = ssn.jobs
        replayed = [
            assumption
            for assumption in self.assumed.values()
            if (job := jobs.get(assumption.task.job)) is None or _uncounted(job, assumption)
        ]
        self._fire_all(ssn, replayed)
        if accounting:
            for assumption in self.assumed.values():
                assumption.charged_in = -1
            for assumption in replayed:
                if assumption.task.job in jobs:
                    assumption.charged_in = ssn.uid

    def add_unseen_jobs(self, snapshot: ClusterSnapshot) -> dict[str, JobInfo | None]:
        """Adds to ``snapshot`` the assumed pods the cache has not shown yet, with their jobs.

        kube-scheduler may ask about pods the extender's watch has not delivered (by a
        moment, or by seconds after an API-server restart). A session opened on the cache
        alone would not know their jobs, so their assumptions could not be counted and every
        such pod would be judged against a queue without the others: a capped queue overrun.
        Jobs of the cache are cloned before a task is added; the cache is never touched.
        Returns the uid of each job added with the snapshot's job it replaced (None: added
        after the others). Call with the cluster state's lock held."""
        replaced: dict[str, JobInfo | None] = {}
        for uid, job in self._unseen_jobs(snapshot.jobs.get, snapshot.queues).items():
            replaced[uid] = snapshot.jobs.get(uid)
            snapshot.put_job(job)  # and into its queue's sum, which the cache's lacks
        return replaced

    def _unseen_jobs(
        self, lookup: Callable[[str], JobInfo | None], queues: Collection[str]
    ) -> dict[str, JobInfo]:
        """The jobs a session adds for the assumed pods the cache has not shown: each a copy
        of the job ``lookup`` finds for its uid (the cache's, as a session holds it), or of
        the job the pod was judged in, with those pods added; in the order of their first
        assumptions. Call with the cluster state's lock held."""
        added: dict[str, JobInfo] = {}
        for assumption in self.assumed.values():
            task = assumption.task
            if assumption.job is None or assumption.job.queue not in queues:
                continue
            job = added.get(task.job) or lookup(task.job)
            if job is not None and task.uid in job.tasks:
                continue
            if task.job not in added:
                job = (job or assumption.job).clone()
                added[task.job] = job
            assert job is not None
            if task.uid not in job.tasks:
                job.add_task_info(task.clone())
        return added

    @staticmethod
    def _fire(ssn: Session, assumption: Assumption, *, allocate: bool) -> None:
        """Tell the plugins the task holds (or no longer holds) resources in its queue."""
        task = assumption.task
        if task.job not in ssn.jobs:
            return
        status = task.status
        task.status = TaskStatus.ALLOCATED
        try:
            if allocate:
                ssn.fire_allocate(task)
            else:
                ssn.fire_deallocate(task)
        finally:
            task.status = status

    @staticmethod
    def _fire_all(
        ssn: Session, assumptions: list[Assumption], *, charge_back: bool = False
    ) -> None:
        """``_fire`` of each assumption in turn (allocate), the plugins told of them all at
        once: charging an open assumption back after each follow is per assumption, and a
        busy queue keeps tens open while kube-scheduler's binds reach the cache.
        ``charge_back``: right after a follow step, which each plugin may have left holding
        some of them (``Session.fire_charge_back``)."""
        tasks = [a.task for a in assumptions if a.task.job in ssn.jobs]
        statuses = [task.status for task in tasks]
        for task in tasks:
            task.status = TaskStatus.ALLOCATED
        try:
            if charge_back:
                ssn.fire_charge_back(tasks)
            else:
                ssn.fire_allocate_all(tasks)
        finally:
            for task, status in zip(tasks, statuses, strict=True):
                task.status = status

    # --- assumptions --------------------------------------------------------------------

    def assume(self, task: TaskInfo, job: JobInfo) -> bool:
        """Count ``task`` in its queue's allocation until the cluster shows its fate; returns
        whether it was assumed. A pod the cache has not shown is assumed only if it could be
        a real pod and its queue holds fewer than ``max_unseen_per_queue`` such assumptions."""
        # (A session holding the job of an unseen pod for the verb judging it is the one to
        # charge: asking for the session would put that job right first.)
        ssn = self._session if self._judging_unseen else None
        if ssn is None:
            ssn = self.session()
        key = task.key
        previous = self.assumed.pop(key, None)
        if previous is not None:
            self._settle([previous])
        cached = self.state.task(key)  # (nothing below changes the cache)
        if cached is None:
            refusal = implausible_pod(task) or self._unseen_cap_reached(job.queue)
            if refusal:
                self.unseen_refused += 1
                log.log(v(2), "Pod <%s> not assumed: unseen by the cache and %s", key, refusal)
                return False
        now = self.clock()
        assumption = Assumption(task=task, queue=job.queue, expires=now + self.assume_ttl)
        if job.source == NATIVE_SOURCE and job.min_available > 1:
            assumption.group = job.uid
            assumption.cached = cached
            self._group_deadlines[job.uid] = now + self.group_window
        self.assumed[key] = assumption
        self._expiry_floor = min(self._expiry_floor, assumption.expires)
        if job.network_topology is not None:
            self.domains.extend(task.job, assumption.expires)
        counted = ssn.jobs.get(task.job)
        if counted is None or task.uid not in counted.tasks:
            # Not in the cache yet: the next session() adds its job (``_put_unseen_jobs``).
            assumption.job = job.clone()
            self._overlays_stale = True
            return True
        if cached is None:
            # Judged again in a session that counts it only through the job added for it
            # (assumed before, still unseen): later sessions must add that job again too.
            assumption.job = job.clone()
        if _uncounted(counted, assumption):
            # (Else the cache shows it bound already, so counts it: a new session would not
            # charge it either, and the next reconciliation ends it.)
            self._fire(ssn, assumption, allocate=True)
            assumption.charged_in = ssn.uid
        if log.isEnabledFor(_V4):  # every passed pod's: no call below -v 4
            log.log(
                _V4,
                "Assumed pod <%s> into queue <%s> for %.0fs",
                key,
                job.queue,
                self.assume_ttl,
            )
        return True

    def _unseen_cap_reached(self, queue: str) -> str:
        held = sum(1 for a in self.assumed.values() if a.queue == queue and _unseen(a))
        if held < self.max_unseen_per_queue:
            return ""
        return f"queue {queue} already holds {held} assumptions of unseen pods"

    def unseen(self) -> list[tuple[str, str]]:
        """(key, uid) of every assumption of a pod the cache has not shown yet."""
        return [(k, a.task.uid) for k, a in self.assumed.items() if _unseen(a)]

    def drop_unseen(self, key: str, uid: str) -> bool:
        """Ends the assumption of ``key`` if it is still of an unseen pod with ``uid``: the
        API server said no such pod exists. Returns whether one ended."""
        assumption = self.assumed.get(key)
        if assumption is None or not _unseen(assumption) or assumption.task.uid != uid:
            return False
        if self.state.task(key) is not None:
            return False
        del self.assumed[key]
        self.unseen_dropped += 1
        log.log(v(2), "Assumed pod <%s> does not exist in the API server: assumption dropped", key)
        self._settle([assumption])
        return True

    def release(self, key: str) -> None:
        assumption = self.assumed.pop(key, None)
        if assumption is not None:
            self._settle([assumption])

    def domain_choice(self, ssn: Session, job: JobInfo) -> DomainChoice | None:
        """The network domain ``job``'s members go to (kept per gang, see ``domains.py``);
        None for a job that asks for none. Call with the cluster state's lock held."""
        return self.domains.choice_for(ssn, job, self.state.decision_version)

    def assumed_in_job(self, job_id: str) -> int:
        return sum(1 for a in self.assumed.values() if a.task.job == job_id)

    def promised_members(self, job: JobInfo, exclude: str = "") -> set[str]:
        """Pending members of ``job`` (pod keys) that already have a place without being
        bound yet: passed by filter (assumed), or promised a node by preemption (a grant we
        handed out, or the nominated node kube-scheduler set after evicting for them)."""
        status = {t.key: t.status for t in job.tasks.values()}
        promised = {a.task.key for a in self.assumed.values() if a.task.job == job.uid}
        promised |= self.grants.preemptors_in_job(job.uid)
        promised |= {t.key for t in job.tasks_with(TaskStatus.PENDING) if t.nominated_node_name}
        promised.discard(exclude)
        return {k for k in promised if status.get(k, TaskStatus.PENDING) == TaskStatus.PENDING}

    def placed_members(self, job: JobInfo, exclude: str = "") -> int:
        """Members that count towards minMember now: ready (bound, running), waiting
        (pipelined) and promised ones (see ``promised_members``)."""
        return (
            job.ready_task_num() + job.waiting_task_num() + len(self.promised_members(job, exclude))
        )


def _unseen(assumption: Assumption) -> bool:
    """Assumed while the cache had not shown the pod, and not shown since."""
    return assumption.job is not None and not assumption.seen_in_cluster


def _uncounted(job: JobInfo, assumption: Assumption) -> bool:
    """The assumed pod is not already counted in its job's sums (the cache has not shown it
    bound): an assumption is charged to a session only then."""
    live = job.tasks.get(assumption.task.uid)
    return live is None or live.status == TaskStatus.PENDING


def _queues_of(ssn: Session, assumptions: list[Assumption]) -> set[str]:
    """The queues, as ``ssn`` has their jobs, that ``assumptions`` were charged to."""
    return {ssn.jobs[a.task.job].queue for a in assumptions if a.task.job in ssn.jobs}
