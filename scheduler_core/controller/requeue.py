"""Send parked pods back to kube-scheduler when their queue would now let them through.

A background thread looks at the pods filter rejected whenever the cluster changes (and at
least every few seconds, since assumptions also expire with time). Each one that would pass
now gets an annotation with the time: an update of the pod itself, which kube-scheduler's
queue treats as a reason to retry a pod an extender had turned away. At most one nudge per
pod every ``min_interval`` seconds, so a pod that keeps failing on a node-level reason (that
only kube-scheduler sees) is not updated in a loop.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from scheduler_core.accounting.keeper import QueueAccounting
from scheduler_core.controller.periodic import Periodic
from scheduler_core.extender.filter_verb import parked_pods_to_retry
from scheduler_core.logutil import v

log = logging.getLogger("scheduler_core.controller.requeue")

RETRY_ANNOTATION = "kube-queue-extender.io/retry-requested-at"

#: Unseen assumptions looked up in the API server in one pass, and how often each one is.
UNSEEN_CHECKS_PER_PASS = 32
UNSEEN_CHECK_INTERVAL = 1.0


class ParkedPodRequeuer:
    def __init__(
        self,
        acct: QueueAccounting,
        api_client: Any,
        *,
        registry: CollectorRegistry | None = None,
        ready: Callable[[], bool] = lambda: True,
        interval: float = 0.25,
        min_interval: float = 5.0,
    ) -> None:
        from kubernetes import client

        self.acct = acct
        self.core = client.CoreV1Api(api_client)
        self.ready = ready
        self.interval = interval
        self.min_interval = min_interval
        self._worker = Periodic(
            "parked-pod-requeuer", interval, self.run_once, what="parked-pod requeue pass"
        )
        self._seen_version = -1
        self._last_pass = 0.0
        self._unseen_checked: dict[str, float] = {}
        self.retried = Counter(
            "queue_extender_parked_pods_retried",
            "Pods filter had rejected that were sent back to kube-scheduler once their queue "
            "would let them through",
            registry=registry,
        )
        self.errors = Counter(
            "queue_extender_parked_pod_retry_errors",
            "Failed attempts to send a parked pod back to kube-scheduler",
            registry=registry,
        )
        self.parked = Gauge(
            "queue_extender_parked_pods",
            "Pods whose last filter answer was a queue or gang rejection",
            registry=registry,
        )
        self.parked.set_function(lambda: len(acct.parked))

    def start(self) -> ParkedPodRequeuer:
        self._worker.start()
        return self

    def stop(self) -> None:
        self._worker.stop()

    def run_once(self) -> list[str]:
        """One pass: unseen assumptions checked against the API server, then the keys of the
        pods nudged."""
        if self.ready():
            self.check_unseen()
        state = self.acct.state
        now = time.monotonic()
        changed = state.version != self._seen_version
        if not len(self.acct.parked) or not self.ready():
            return []
        if not changed and now - self._last_pass < self.min_interval:
            return []
        with state.locked():
            self._seen_version = state.version
            due = parked_pods_to_retry(self.acct, self.min_interval)
        self._last_pass = now
        for key in due:
            self._nudge(key)
        return due

    def check_unseen(self) -> list[str]:
        """Drops the assumptions of pods the cache has not shown once the API server says
        they do not exist (404, or a pod of that name with another UID): a filter request
        for an invented pod holds its queue's share only until this pass looks. Returns the
        keys dropped; a lookup that fails keeps its assumption (its TTL still ends it)."""
        from kubernetes.client import ApiException

        state = self.acct.state
        now = time.monotonic()
        with state.locked():
            unseen = self.acct.unseen()
        keys = {key for key, _ in unseen}
        for key in [k for k in self._unseen_checked if k not in keys]:
            del self._unseen_checked[key]
        due = [
            (key, uid)
            for key, uid in unseen
            if now - self._unseen_checked.get(key, -UNSEEN_CHECK_INTERVAL) >= UNSEEN_CHECK_INTERVAL
        ][:UNSEEN_CHECKS_PER_PASS]
        dropped: list[str] = []
        for key, uid in due:
            self._unseen_checked[key] = now
            namespace, name = key.split("/", 1)
            try:
                pod = self.core.read_namespaced_pod(name, namespace)
                exists = getattr(pod.metadata, "uid", None) == uid
            except ApiException as exc:
                if exc.status != 404:
                    log.log(v(3), "cannot look up assumed pod %s: %s", key, exc.reason)
                    continue
                exists = False
            except Exception as exc:  # connection trouble: the next pass looks again
                log.log(v(3), "cannot look up assumed pod %s: %s", key, exc)
                continue
            if not exists:
                with state.locked():
                    if self.acct.drop_unseen(key, uid):
                        dropped.append(key)
        return dropped

    def _nudge(self, key: str) -> None:
        from kubernetes.client import ApiException

        namespace, name = key.split("/", 1)
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        body = {"metadata": {"annotations": {RETRY_ANNOTATION: stamp}}}
        try:
            self.core.patch_namespaced_pod(name, namespace, body)
        except ApiException as exc:
            if exc.status == 404:
                self.acct.parked.unpark(key)
                return
            self.errors.inc()
            log.warning("cannot ask kube-scheduler to retry pod %s: %s", key, exc.reason)
            return
        except Exception as exc:  # connection trouble: the next pass tries again
            self.errors.inc()
            log.warning("cannot ask kube-scheduler to retry pod %s: %s", key, exc)
            return
        self.retried.inc()
        log.log(v(2), "Asked kube-scheduler to retry pod <%s>", key)
