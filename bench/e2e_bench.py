"""``make bench-e2e``: throughput of the real kube-scheduler, alone and with an extender.

One control plane (etcd + kube-apiserver from ``tests/e2e/controlplane.py``) and no kubelet.
Each round: a fresh namespace; the extender of the round started (and, for ours, waited until
``/readyz``); N pods of 100m created while no scheduler runs; then a kube-scheduler started
with one profile (``queue-scheduler``) and, except for ``plain``, the extender configured
exactly as the chart configures ours. A watch on the namespace notes when each pod is first
seen with ``spec.nodeName`` set (local receipt time); the round's rate is
``(N - 1) / (last bind - first bind)``, so the scheduler's start-up is not in it. The
scheduler and the extender are stopped by their PIDs and the pods deleted (grace 0) before
the next round. With ``--live`` the pods are created after kube-scheduler has started, as on
a live cluster, where pods arrive while it runs: each reaches kube-scheduler and the
extender's cache at about the same moment, and the rate is bounded by how fast the harness
creates them as well (compare only ratios within one run, as always).

The configurations run alternately, each round in another order (the rows of a balanced
Latin square: ``round_order``), so that drift in the machine's load spreads over all of them
and no configuration always runs right after the same other one (a round measured slower
after some configurations than after others was seen); only ratios taken within one run mean
anything. ``noop`` answers filter, prioritize and preempt, as the extender was deployed
until scoring moved into kube-scheduler; ``noop-filter`` answers filter and preempt only,
one HTTP call per pod, the yardstick of ``ours`` as deployed now; ``ours-exact`` adds
prioritize (exact Volcano scoring). ``--baseline EXE`` runs another checkout's extender as
``base`` / ``base-exact`` in the same rotation: a change is compared with the commit before
it on the same machine in one run.
``watch`` is the no-op extender keeping our cache of the cluster (our informers, our
``ClusterState``) while deciding nothing: what watching alone costs kube-scheduler on this
machine (the API server sends every bind to one more watcher, and the extender's process
decodes and applies it), the part of ours/noop no faster decision can win back.

Besides the rate, each round reads figures that say why a rate moved: kube-scheduler's
own mean time a pod in its scheduling algorithm (``SchedulePod``: its filters, the
extender's call, its scores; ``scheduler_scheduling_algorithm_duration_seconds`` from its
``/metrics`` before it stops), the serial part of its loop an extender lengthens; and the
extender's CPU while kube-scheduler ran, from its start to the last bind, per thread (the
event loop that answers the verbs, and every other thread: the informers), the part of the
extender's CPU that competes with kube-scheduler for the cores; and, for ours, its own mean
time a filter call (its request-duration histogram), the share of the algorithm time that
is our handler's.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import ssl
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines

from app.schedconfig.render import Rendered, Scoring, render_scheduler_config
from bench import load_average, machine_facts, subprocess_env
from scheduler_core.conf import default_configuration
from tests.e2e.controlplane import ADMIN_TOKEN, ControlPlane, Extender, Process, find_binaries
from tests.e2e.controlplane import wait_for as wait_until
from tests.e2e.kube import QUEUE_SCHEDULER, Kube
from tests.e2e.rendered import start_rendered_scheduler
from tests.ports import free_port


@dataclass(frozen=True)
class Config:
    """One way kube-scheduler is run in a round: which extender, and which of its verbs the
    scheduler's configuration names."""

    name: str
    #: ``None`` (kube-scheduler alone), ``noop``, ``watch`` (the no-op keeping our cache),
    #: ``ours`` or ``baseline`` (ours from another checkout, ``--baseline``).
    extender: str | None
    prioritize: bool = True
    what: str = ""
    #: kube-scheduler runs the configuration ``queue-extender scheduler-config`` renders for
    #: the default conf with this scoring (``native``: the deployed default, scores in
    #: kube-scheduler, the extender asked filter and preempt; ``extender``: prioritize too,
    #: the score plugins off); None: the harness's own configuration (the default plugins,
    #: and the extender's verbs as ``prioritize`` says).
    scoring: Scoring | None = None


#: Every configuration a round can run, in the order a round runs them.
ALL_CONFIGS: dict[str, Config] = {
    c.name: c
    for c in (
        Config("plain", None, what="kube-scheduler v1.36 alone"),
        Config("noop", "noop", what="the stdlib no-op extender, filter + prioritize + preempt"),
        Config(
            "noop-filter",
            "noop",
            prioritize=False,
            what="the no-op answering filter and preempt only (one call per pod)",
        ),
        Config("watch", "watch", what="the no-op keeping our cache of the cluster"),
        Config(
            "ours",
            "ours",
            prioritize=False,
            scoring="native",
            what="ours as deployed: the rendered configuration, filter and preempt; "
            "kube-scheduler scores natively",
        ),
        Config(
            "ours-exact",
            "ours",
            scoring="extender",
            what="ours with prioritize too (the rendered configuration with scoring: extender)",
        ),
        Config(
            "base",
            "baseline",
            prioritize=False,
            scoring="native",
            what="--baseline, configured as ours",
        ),
        Config("base-exact", "baseline", scoring="extender", what="--baseline, as ours-exact"),
    )
}
#: What a run measures unless ``--configs`` says otherwise (the baselines join with
#: ``--baseline``).
DEFAULT_CONFIGS = ("plain", "noop", "noop-filter", "watch", "ours", "ours-exact")
#: What our extender is started with: decisions on the latest event (the issue's target
#: behaviour), the chart's default verbosity, so logging costs what it costs in production,
#: and the reclaim loop, as deployed (the chart and deploy/ run it): the leader's passes
#: share the process and the machine with what is measured.
OURS_ARGS = ("--refresh-interval", "0", "-v", "2", "--reclaim")
CREATE_THREADS = 4


@dataclass(frozen=True)
class Scale:
    name: str
    nodes: int
    pods: int
    node_cpu: str = "8"
    pod_cpu: str = "100m"

    def describe(self) -> str:
        return (
            f"{self.nodes} nodes × {self.pods} pods ({self.pod_cpu} CPU each, "
            f"nodes {self.node_cpu} CPU)"
        )


SCALES = {
    "small": Scale("small", 200, 1000),
    "large": Scale("large", 1000, 5000),
    # kube-scheduler's own scalability envelope; run it with --configs plain,noop-filter,ours.
    "huge": Scale("huge", 5000, 10000),
}


@dataclass
class Round:
    """One configuration's measurement: bind times and what went wrong, if anything."""

    config: str
    index: int
    pods: int
    binds: list[float] = field(default_factory=list)
    failed_scheduling: int = 0
    failed_sample: str = ""
    extender_counts: dict[str, float] = field(default_factory=dict)
    #: Bound pods deleted while the round ran (``--churn``).
    deleted: int = 0
    #: The serving process's peak resident memory (``VmHWM``, MiB), for ours and the baseline.
    peak_rss_mib: float | None = None
    #: kube-scheduler's mean seconds a pod in its scheduling algorithm (its filters, the
    #: extender's call, its scores), None when its metrics could not be read.
    algorithm_s: float | None = None
    #: The extender's CPU seconds while kube-scheduler ran (its start to the last bind):
    #: the event loop's thread (the process's main thread) and all its other threads.
    window_cpu_main: float | None = None
    window_cpu_other: float | None = None
    #: Ours' own mean seconds a filter call, from the first body byte to the answer (its
    #: ``queue_extender_request_duration_seconds``): the part of the algorithm time above
    #: that is our handler's; the rest is the call's transport and kube-scheduler's side.
    filter_answer_s: float | None = None
    #: CPU seconds the extender process spent from the pods' creation to the round's end:
    #: on a machine kube-scheduler and the API server share, it is taken from them.
    extender_cpu: float | None = None

    @property
    def cpu_ms_per_pod(self) -> float | None:
        return None if self.extender_cpu is None else 1000 * self.extender_cpu / self.pods

    @property
    def window_ms_per_pod(self) -> tuple[float, float] | None:
        """The extender's CPU per pod while kube-scheduler ran: (main thread, the others)."""
        if self.window_cpu_main is None or self.window_cpu_other is None:
            return None
        return 1000 * self.window_cpu_main / self.pods, 1000 * self.window_cpu_other / self.pods

    @property
    def complete(self) -> bool:
        return len(self.binds) == self.pods

    @property
    def rate(self) -> float | None:
        """Pods per second from the first bind to the last; None with fewer than two binds."""
        if len(self.binds) < 2:
            return None
        span = max(self.binds) - min(self.binds)
        return (len(self.binds) - 1) / span if span > 0 else None

    def notes(self) -> str:
        parts = []
        if not self.complete:
            parts.append(f"only {len(self.binds)}/{self.pods} bound")
        if self.failed_scheduling:
            parts.append(f"{self.failed_scheduling} FailedScheduling, e.g. {self.failed_sample!r}")
        rejected = {
            k: v
            for k, v in self.extender_counts.items()
            if v
            and not k.endswith(("/passed", "/scored", "/no_victims", "/unmanaged"))
            and not k.startswith("sessions/")  # how, not what: in the report's totals
        }
        if rejected:
            parts.append("extender " + ", ".join(f"{k}={v:g}" for k, v in sorted(rejected.items())))
        return "; ".join(parts)


# --- watching binds ---------------------------------------------------------------------------


class BindWatch:
    """Notes the local receipt time of the first event showing each pod bound.

    Raw watch lines parsed with orjson, not the client's model objects: the watcher shares the
    two cores with kube-scheduler and must cost as little as possible.
    """

    def __init__(self, core: Any, namespace: str, resource_version: str, expected: int) -> None:
        self.core = core
        self.namespace = namespace
        self.resource_version = resource_version
        self.expected = expected
        self.bound: dict[str, float] = {}
        self.error: str | None = None
        self.done = threading.Event()
        self._stop = threading.Event()
        self._response: Any = None
        self._thread = threading.Thread(target=self._run, name="bind-watch", daemon=True)

    def start(self) -> BindWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        with contextlib.suppress(Exception):
            if self._response is not None:
                self._response.close()
        self._thread.join(10)

    def _run(self) -> None:
        try:
            while not self._stop.is_set() and not self.done.is_set():
                self._watch_once()
        except Exception as exc:  # reported with the round's result
            if not self._stop.is_set():
                self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.done.set()

    def _watch_once(self) -> None:
        self._response = self.core.list_namespaced_pod(
            self.namespace,
            watch=True,
            resource_version=self.resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=600,
            _preload_content=False,
        )
        lines: Iterator[str] = iter_resp_lines(self._response)  # type: ignore[no-untyped-call]
        for line in lines:
            received = time.monotonic()
            event = orjson.loads(line)
            obj = event["object"]
            if event["type"] == "ERROR":
                raise RuntimeError(f"watch error: {obj.get('message')}")
            self.resource_version = obj["metadata"]["resourceVersion"]
            if event["type"] == "BOOKMARK":
                continue
            name = obj["metadata"]["name"]
            if obj["spec"].get("nodeName") and name not in self.bound:
                self.bound[name] = received
                if len(self.bound) >= self.expected:
                    self.done.set()
                    return


# --- the cluster ------------------------------------------------------------------------------


def pod_body(name: str, cpu: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "schedulerName": QUEUE_SCHEDULER,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
                }
            ],
        },
    }


def in_parallel(items: Sequence[Any], work: Callable[[Any], None]) -> None:
    with ThreadPoolExecutor(CREATE_THREADS) as pool:
        for _ in pool.map(work, items):
            pass


class FinishedPods:
    """Deletes bound pods while the round runs, as a busy cluster deletes pods that ran and
    finished: each pod once ``keep`` pods were bound after it (``--churn``), in the order
    they were bound, with grace 0. Four threads, so the deletions keep up with the binds."""

    def __init__(self, core: Any, namespace: str, watch: BindWatch, keep: int) -> None:
        self.core = core
        self.namespace = namespace
        self.watch = watch
        self.keep = keep
        self.deleted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="finished-pods", daemon=True)

    def start(self) -> FinishedPods:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def due(self, bound_in_order: list[str]) -> list[str]:
        """The pods to delete now: all but the ``keep`` bound last, after those deleted."""
        return bound_in_order[self.deleted : max(self.deleted, len(bound_in_order) - self.keep)]

    def _delete(self, name: str) -> None:
        with contextlib.suppress(Exception):  # gone already: the round's end deletes the rest
            response = self.core.delete_namespaced_pod(
                name, self.namespace, grace_period_seconds=0, _preload_content=False
            )
            response.read()
            response.release_conn()

    def _run(self) -> None:
        with ThreadPoolExecutor(4) as pool:
            while not self._stop.is_set() and not self.watch.done.is_set():
                due = self.due(list(self.watch.bound))
                self.deleted += len(due)
                for _ in pool.map(self._delete, due):
                    pass
                self._stop.wait(0.05)


def create_pods(core: Any, namespace: str, count: int, cpu: str) -> None:
    def create(index: int) -> None:
        response = core.create_namespaced_pod(
            namespace, pod_body(f"p-{index:05d}", cpu), _preload_content=False
        )
        response.read()
        response.release_conn()

    in_parallel(range(count), create)


def delete_pods(core: Any, namespace: str) -> None:
    response = core.delete_collection_namespaced_pod(
        namespace, grace_period_seconds=0, _preload_content=False
    )
    response.read()
    response.release_conn()
    wait_until(
        lambda: not core.list_namespaced_pod(namespace, limit=1).items,
        120,
        f"the pods of {namespace} to be deleted",
        interval=0.5,
    )


def add_nodes(kube: Kube, scale: Scale) -> None:
    def add(name: str) -> None:
        kube.node(name, cpu=scale.node_cpu, memory="32Gi", pods=110)

    in_parallel([f"{scale.name}-n{i:04d}" for i in range(scale.nodes)], add)


def failed_scheduling(core: Any, namespace: str) -> tuple[int, str]:
    events = core.list_namespaced_event(namespace, field_selector="reason=FailedScheduling").items
    sample = events[0].message if events else ""
    return sum(e.count or 1 for e in events), sample


METRIC_LINE = re.compile(
    r"^queue_extender_(decisions|errors|filter_rejections|accounting_sessions)_total"
    r"\{([^}]*)\}\s+(\S+)$",
    re.M,
)


def histogram_mean(metrics_text: str | None, metric: str, labels: str = "") -> float | None:
    """A Prometheus histogram's mean from a ``/metrics`` text: the sum over the count of its
    series whose labels are ``labels`` exactly (``{verb="filter"}``), or of all its series
    when ``labels`` is empty; None without samples."""
    total = count = 0.0
    for line in (metrics_text or "").splitlines():
        if line.startswith(f"{metric}_sum{labels}"):
            total += float(line.rsplit(" ", 1)[1])
        elif line.startswith(f"{metric}_count{labels}"):
            count += float(line.rsplit(" ", 1)[1])
    return total / count if count else None


def filter_answer_seconds(metrics_text: str) -> float | None:
    """Ours' mean time a filter call (its request-duration histogram for
    ``verb="filter"``), or None without calls."""
    return histogram_mean(
        metrics_text, "queue_extender_request_duration_seconds", '{verb="filter"}'
    )


def extender_counts(metrics_text: str) -> dict[str, float]:
    """Our extender's answers by verb and outcome, its errors and its filter rejections, from
    its /metrics (``--on-error pass`` turns a backend error into a pass: only this shows it);
    and how its accounting session was kept current (``sessions/opened`` rising with the
    pods is a new session over every job, again and again)."""
    counts: dict[str, float] = {}
    for kind, labels, value in METRIC_LINE.findall(metrics_text):
        fields = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        key = {
            "decisions": f"{fields.get('verb')}/{fields.get('outcome')}",
            "errors": f"errors/{fields.get('verb')}",
            "filter_rejections": f"filter_rejected/{fields.get('reason')}",
            "accounting_sessions": f"sessions/{fields.get('way')}",
        }[kind]
        counts[key] = counts.get(key, 0.0) + float(value)
    return counts


# --- one round --------------------------------------------------------------------------------


class Bench:
    def __init__(
        self,
        cp: ControlPlane,
        log: Callable[[str], None],
        baseline: str | None = None,
        live: bool = False,
        churn: int = 0,
    ) -> None:
        self.cp = cp
        self.log = log
        self.api = cp.api_client()
        self.core = client.CoreV1Api(self.api)
        self.kube = Kube(self.api)
        #: ``queue-extender`` of another checkout, for the ``base`` configurations.
        self.baseline = baseline
        #: Pods created while kube-scheduler runs (``--live``), not a backlog before it starts.
        self.live = live
        #: With ``--churn K``, the bound pods beyond the K bound last are deleted while the
        #: round runs (they ran and finished); 0: none is.
        self.churn = churn

    def warm_up(self, scale: Scale) -> None:
        """A burst of creations and deletions, so the API server's watch cache has grown before
        anything is measured (a fresh one force-closes slow watchers on the first burst)."""
        namespace = self.kube.namespace("bench-warmup")
        create_pods(self.core, namespace, scale.pods, scale.pod_cpu)
        delete_pods(self.core, namespace)

    @contextlib.contextmanager
    def extender(self, config: Config) -> Iterator[tuple[str | None, Extender | None, int | None]]:
        """The extender of ``config`` (URL, for ours the handle, and its process id), stopped
        afterwards."""
        if config.extender is None:
            yield None, None, None
            return
        if config.extender in ("noop", "watch"):
            port = free_port()
            argv = [sys.executable, "-m", "bench.noop_extender", "--port", str(port)]
            if config.extender == "watch":
                argv += ["--kubeconfig", str(self.cp.kubeconfig)]
            process = self.cp.spawn(f"{config.name}-extender", argv, env=subprocess_env())
            url = f"http://127.0.0.1:{port}"
            try:
                Extender(process, url).wait_ready(120)
                yield url + "/", None, process.pid
            finally:
                process.stop()
            return
        if config.extender == "baseline":
            if self.baseline is None:
                raise ValueError(f"{config.name} needs --baseline")
            port = free_port()
            argv = [self.baseline, "serve", "--kubeconfig", str(self.cp.kubeconfig)]
            argv += ["--port", str(port), *OURS_ARGS]
            ours = Extender(
                self.cp.spawn(f"{config.name}-extender", argv), f"http://127.0.0.1:{port}"
            )
        else:
            ours = self.cp.start_extender(f"{config.name}-extender", args=OURS_ARGS)
        try:
            ours.wait_ready(120)
            yield ours.url + "/", ours, ours.process.pid
        finally:
            ours.process.stop()

    def scheduler(self, config: Config, url: str | None) -> Process:
        """kube-scheduler for ``config``: on the rendered configuration, or the harness's."""
        name = f"kube-scheduler-{config.name}"
        if config.scoring is not None:
            rendered = rendered_configuration(config, url)
            return start_rendered_scheduler(self.cp, name, rendered).process
        return self.cp.start_scheduler(
            name,
            (QUEUE_SCHEDULER,),
            url,
            extender=None if config.prioritize else {"prioritizeVerb": ""},
        )

    def round(self, scale: Scale, config: Config, index: int, timeout: float) -> Round:
        result = Round(config.name, index, scale.pods)
        namespace = self.kube.namespace(f"bench-{config.name}")
        with self.extender(config) as (url, ours, pid):
            cpu_before = cpu_seconds(pid)
            if not self.live:
                create_pods(self.core, namespace, scale.pods, scale.pod_cpu)
            listed: Any = self.core.list_namespaced_pod(namespace, limit=1)
            watch = BindWatch(
                self.core, namespace, listed.metadata.resource_version, scale.pods
            ).start()
            scheduler: Process | None = None
            deleter = FinishedPods(self.core, namespace, watch, self.churn) if self.churn else None
            threads_before = thread_cpu_seconds(pid)
            try:
                scheduler = self.scheduler(config, url)
                if deleter is not None:
                    deleter.start()
                if self.live:
                    create_pods(self.core, namespace, scale.pods, scale.pod_cpu)
                watch.done.wait(timeout)
                threads_after = thread_cpu_seconds(pid)
                result.algorithm_s = algorithm_seconds(scrape_scheduler(scheduler))
            finally:
                if scheduler is not None:
                    scheduler.stop()
                if deleter is not None:
                    deleter.stop()
                    result.deleted = deleter.deleted
                watch.stop()
            if pid is not None and threads_before is not None and threads_after is not None:
                main, other = split_main_thread(pid, threads_before, threads_after)
                result.window_cpu_main, result.window_cpu_other = main, other
            result.binds = sorted(watch.bound.values())
            if watch.error:
                self.log(f"{config.name} round {index}: the bind watch failed: {watch.error}")
            cpu_after = cpu_seconds(pid)
            if cpu_before is not None and cpu_after is not None:
                result.extender_cpu = cpu_after - cpu_before
            if ours is not None:
                metrics = ours.metrics()
                result.extender_counts = extender_counts(metrics)
                result.filter_answer_s = filter_answer_seconds(metrics)
                result.peak_rss_mib = peak_rss_mib(ours.process.pid)
        result.failed_scheduling, result.failed_sample = failed_scheduling(self.core, namespace)
        delete_pods(self.core, namespace)
        return result


def rendered_configuration(config: Config, url: str | None) -> Rendered:
    """What ``queue-extender scheduler-config`` prints for the default conf with the
    configuration's scoring, pointed at ``url``."""
    assert config.scoring is not None and url is not None
    return render_scheduler_config(
        default_configuration(),
        extender_url=url,
        scheduler_names=[QUEUE_SCHEDULER],
        scoring=config.scoring,
    )


def stat_cpu_seconds(stat_path: str) -> float | None:
    """User and system CPU seconds from a ``/proc`` ``stat`` file (a process's or one of its
    threads'); None if unreadable."""
    try:
        fields = Path(stat_path).read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def cpu_seconds(pid: int | None) -> float | None:
    """User and system CPU seconds the process has used so far; None if unreadable."""
    return None if pid is None else stat_cpu_seconds(f"/proc/{pid}/stat")


def thread_cpu_seconds(pid: int | None) -> dict[int, float] | None:
    """User and system CPU seconds of each of the process's threads so far, by thread id;
    None if unreadable. A thread that ended in between is left out of a difference."""
    if pid is None:
        return None
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    out: dict[int, float] = {}
    for tid in tids:
        seconds = stat_cpu_seconds(f"/proc/{pid}/task/{tid}/stat")
        if seconds is not None:
            out[int(tid)] = seconds
    return out


def split_main_thread(
    pid: int, before: dict[int, float], after: dict[int, float]
) -> tuple[float, float]:
    """The CPU seconds spent between two readings by the main thread (its id is the
    process's: the extender's event loop) and by every other thread together (a thread
    started in between counts from zero)."""
    spent = {tid: after[tid] - before.get(tid, 0.0) for tid in after}
    main = spent.pop(pid, 0.0)
    return main, sum(spent.values())


#: kube-scheduler's histogram of a pod's time in its scheduling algorithm.
ALGORITHM_METRIC = "scheduler_scheduling_algorithm_duration_seconds"


def algorithm_seconds(metrics_text: str | None) -> float | None:
    """The mean of kube-scheduler's algorithm-duration histogram, or None without samples."""
    return histogram_mean(metrics_text, ALGORITHM_METRIC)


def scrape_scheduler(scheduler: Process) -> str | None:
    """kube-scheduler's ``/metrics`` on its secure port, read as the admin (it delegates
    authentication and authorization to the API server); None if unreachable."""
    flag = "--secure-port="
    port = next((a[len(flag) :] for a in scheduler.argv if a.startswith(flag)), None)
    if port is None:
        return None
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # its serving certificate is self-signed
    request = urllib.request.Request(
        f"https://127.0.0.1:{port}/metrics", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    )
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            text: str = response.read().decode()
            return text
    except OSError:
        return None


def peak_rss_mib(pid: int) -> float | None:
    """The process's peak resident memory so far (``VmHWM``), in MiB; None if unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


# --- the report -------------------------------------------------------------------------------


def per_config(
    rounds: Sequence[Round], configs: Sequence[str], value: Callable[[Round], float | None]
) -> dict[str, list[float]]:
    """Each configuration's non-empty values over its rounds (none measured: left out)."""
    out: dict[str, list[float]] = {}
    for config in configs:
        values = [v for r in rounds if r.config == config and (v := value(r)) is not None]
        if values:
            out[config] = values
    return out


def medians_line(
    label: str, values: dict[str, list[float]], shown: Callable[[float], str]
) -> list[str]:
    """One report line, ``label`` then each configuration's median as ``shown`` (no line
    when nothing was measured)."""
    if not values:
        return []
    medians = {c: statistics.median(v) for c, v in values.items()}
    return [label + ", ".join(f"{c} {shown(m)}" for c, m in medians.items())]


def fmt(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def run_configs(rounds: Sequence[Round]) -> list[str]:
    """The configurations of ``rounds``, in the order they ran."""
    return list(dict.fromkeys(r.config for r in rounds))


def summary(
    rounds: Sequence[Round], configs: Sequence[str] | None = None
) -> dict[str, dict[str, float | None]]:
    """min and median pods/s per configuration (``configs``, default those that ran), over
    the rounds that had a rate."""
    out: dict[str, dict[str, float | None]] = {}
    for config in configs if configs is not None else run_configs(rounds):
        rates = [r.rate for r in rounds if r.config == config and r.rate is not None]
        out[config] = {
            "min": min(rates) if rates else None,
            "median": statistics.median(rates) if rates else None,
        }
    return out


def ratio(top: float | None, bottom: float | None) -> float | None:
    return top / bottom if top is not None and bottom else None


#: The ratios the report gives (top, bottom), when both configurations ran; the first three
#: carry the targets: ours/plain >= 0.6, ours/noop-filter >= 0.9, ours-exact/noop >= 0.9.
RATIOS: tuple[tuple[str, str], ...] = (
    ("ours", "plain"),
    ("ours", "noop-filter"),
    ("ours-exact", "noop"),
    ("noop", "plain"),
    ("noop-filter", "plain"),
    ("watch", "noop"),
    ("ours-exact", "watch"),
    ("ours", "base"),
    ("ours-exact", "base-exact"),
)


#: The issue's targets on the first three ratios of medians: the least each must reach.
TARGETS: dict[tuple[str, str], float] = {
    ("ours", "plain"): 0.6,
    ("ours", "noop-filter"): 0.9,
    ("ours-exact", "noop"): 0.9,
}


def paired_ratios(rounds: Sequence[Round], top: str, bottom: str) -> list[float]:
    """``top``'s rate over ``bottom``'s, round by round (the same round index, where both
    had a rate): the configurations of one round run minutes apart at most, so each pair
    shares the machine's phase that the ratio of medians mixes."""
    rates = {(r.config, r.index): r.rate for r in rounds}
    indexes = sorted({r.index for r in rounds})
    pairs = [(rates.get((top, i)), rates.get((bottom, i))) for i in indexes]
    return [t / b for t, b in pairs if t is not None and b]


def target_lines(rounds: Sequence[Round], medians: Mapping[str, float | None]) -> list[str]:
    """Each target whose two configurations ran: the ratio of medians against it, and how
    many rounds met it on their own (a target the medians meet in one run and most rounds
    miss is met by chance)."""
    lines = []
    for (top, bottom), least in TARGETS.items():
        if top not in medians or bottom not in medians:
            continue
        value = ratio(medians[top], medians[bottom])
        verdict = "met" if value is not None and value >= least else "MISSED"
        paired = paired_ratios(rounds, top, bottom)
        met = sum(1 for x in paired if x >= least)
        each = ", ".join(f"{x:.2f}" for x in paired)
        lines.append(
            f"  {top}/{bottom} >= {least}: {fmt(value, 2)} {verdict}; round by round {each} "
            f"({met} of {len(paired)} at or above)"
        )
    return ["", "targets:", *lines] if lines else []


def render(scale: Scale, rounds: Sequence[Round]) -> str:
    lines = [f"{scale.describe()}:", ""]
    configs = run_configs(rounds)
    width = max([len("config"), *(len(c) for c in configs)])
    header = f"{'config':<{width}} {'pods/s per round':<26} {'min':>6} {'median':>7}"
    lines += [header, "-" * len(header)]
    stats = summary(rounds, configs)
    for config in configs:
        rates = ", ".join(fmt(r.rate) for r in rounds if r.config == config)
        s = stats[config]
        lines.append(f"{config:<{width}} {rates:<26} {fmt(s['min']):>6} {fmt(s['median']):>7}")
    medians = {c: stats[c]["median"] for c in configs}
    shown = [
        f"{top}/{bottom} {fmt(ratio(medians[top], medians[bottom]), 2)}"
        for top, bottom in RATIOS
        if top in medians and bottom in medians
    ]
    if shown:
        lines += ["", "ratios of medians: " + ", ".join(shown)]
    peaks = {
        c: max(v) for c, v in per_config(rounds, configs, lambda r: r.peak_rss_mib or None).items()
    }
    if peaks:
        lines.append(
            "serve's peak RSS: " + ", ".join(f"{c} {v:,.0f} MiB" for c, v in peaks.items())
        )
    lines += medians_line(
        "extender CPU per pod (median of rounds): ",
        per_config(rounds, configs, lambda r: r.cpu_ms_per_pod),
        lambda ms: f"{ms:.2f} ms",
    )
    lines += medians_line(
        "kube-scheduler's algorithm a pod, mean (median of rounds): ",
        per_config(rounds, configs, lambda r: r.algorithm_s),
        lambda seconds: f"{1000 * seconds:.2f} ms",
    )
    lines += medians_line(
        "bound pods deleted while the round ran, --churn (median of rounds): ",
        per_config(rounds, configs, lambda r: r.deleted or None),
        lambda deleted: f"{deleted:,.0f}",
    )
    lines += medians_line(
        "our handler's own time a filter call, mean (median of rounds): ",
        per_config(rounds, configs, lambda r: r.filter_answer_s),
        lambda seconds: f"{1000 * seconds:.2f} ms",
    )
    mains = per_config(rounds, configs, lambda r: (w := r.window_ms_per_pod) and w[0])
    others = per_config(rounds, configs, lambda r: (w := r.window_ms_per_pod) and w[1])
    window = {c: (statistics.median(mains[c]), statistics.median(others[c])) for c in mains}
    if window:
        lines.append(
            "extender CPU per pod while kube-scheduler ran (median of rounds; main thread, "
            "ours' event loop, + other threads): "
            + ", ".join(f"{c} {m:.2f} + {o:.2f} ms" for c, (m, o) in window.items())
        )
    for config in configs:
        totals: dict[str, float] = {}
        for r in rounds:
            if r.config == config:
                for key, value in r.extender_counts.items():
                    totals[key] = totals.get(key, 0.0) + value
        if totals:
            answers = ", ".join(f"{k}={v:g}" for k, v in sorted(totals.items()))
            lines.append(f"{config} answered, over all rounds: {answers}")
    lines += target_lines(rounds, medians)
    notes = [f"  {r.config} round {r.index}: {r.notes()}" for r in rounds if r.notes()]
    if notes:
        lines += ["", "notes:", *notes]
    return "\n".join(lines)


# --- main -------------------------------------------------------------------------------------


def log(message: str) -> None:
    print(f"[bench-e2e {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def round_order(configs: Sequence[str], index: int) -> list[str]:
    """The order of round ``index`` (from 0): row ``index`` of a balanced Latin square
    (Williams' design: 0, 1, n-1, 2, n-2, ... shifted by the row; with an odd count every
    other row reversed). Each configuration runs in every position, and over as many rounds
    as configurations (twice as many when their count is odd) right after each other one
    equally often: a round that runs slower for what ran before it is spread over all."""
    n = len(configs)
    if n == 0:
        return []
    base = [0]
    low, high = 1, n - 1
    while len(base) < n:
        base.append(low)
        low += 1
        if len(base) < n:
            base.append(high)
            high -= 1
    row = [configs[(i + index) % n] for i in base]
    if n % 2 and index % 2:
        row.reverse()
    return row


def run_scale(bench: Bench, scale: Scale, rounds: int, configs: Sequence[str]) -> list[Round]:
    log(f"{scale.name}: adding {scale.nodes} nodes, warming up with {scale.pods} pods")
    add_nodes(bench.kube, scale)
    bench.warm_up(scale)
    timeout = 120 + scale.pods / 10
    results = []
    for index in range(1, rounds + 1):
        for config in round_order(configs, index - 1):
            result = bench.round(scale, ALL_CONFIGS[config], index, timeout)
            log(
                f"{scale.name} {config} round {index}: {fmt(result.rate)} pods/s, "
                f"{len(result.binds)}/{scale.pods} bound {result.notes()}".rstrip()
            )
            results.append(result)
    for node in list(bench.kube.nodes):
        with contextlib.suppress(client.ApiException):
            bench.core.delete_node(node)
    bench.kube.nodes.clear()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.e2e", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="the small scale, one round each")
    parser.add_argument("--rounds", type=int, help="rounds per configuration (default 3)")
    parser.add_argument(
        "--scales", default="small,large", help=f"comma-separated, of {', '.join(SCALES)}"
    )
    parser.add_argument("--workdir", help="keep the control plane's files and logs here")
    parser.add_argument(
        "--live",
        action="store_true",
        help="create each round's pods while kube-scheduler runs, as on a live cluster, "
        "instead of a backlog before it starts",
    )
    parser.add_argument(
        "--churn",
        type=int,
        default=0,
        metavar="K",
        help="delete each bound pod once K more were bound after it, while the round runs, "
        "as a busy cluster deletes pods that finished (default 0: none)",
    )
    parser.add_argument(
        "--configs",
        help=f"comma-separated, of {', '.join(ALL_CONFIGS)} (default: {','.join(DEFAULT_CONFIGS)}"
        ", plus base and base-exact with --baseline)",
    )
    parser.add_argument(
        "--baseline",
        metavar="EXE",
        help="another checkout's queue-extender (e.g. the commit before a change, in its own "
        "venv): run as base / base-exact, alternating with ours in the same run",
    )
    args = parser.parse_args(argv)
    chosen = [c.strip() for c in (args.configs or "").split(",") if c.strip()]
    if not chosen:
        chosen = list(DEFAULT_CONFIGS)
        if args.baseline:
            chosen += ["base", "base-exact"]
    wrong = [c for c in chosen if c not in ALL_CONFIGS]
    if wrong:
        parser.error(f"unknown configuration {', '.join(wrong)}; known: {', '.join(ALL_CONFIGS)}")
    if any(ALL_CONFIGS[c].extender == "baseline" for c in chosen) and not args.baseline:
        parser.error("base and base-exact need --baseline EXE")
    configs = [c for c in ALL_CONFIGS if c in chosen]
    names = ["small"] if args.quick else [s.strip() for s in args.scales.split(",") if s.strip()]
    unknown = [n for n in names if n not in SCALES]
    if unknown or not names:
        parser.error(f"unknown scale {', '.join(unknown) or '(none)'}; known: {', '.join(SCALES)}")
    rounds = args.rounds or (1 if args.quick else 3)
    if rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.churn < 0:
        parser.error("--churn must be at least 0")

    facts = machine_facts()
    with contextlib.ExitStack() as stack:
        workdir = Path(args.workdir or stack.enter_context(tempfile.TemporaryDirectory()))
        cp = ControlPlane(find_binaries(), workdir / "control-plane")
        reports = []
        try:
            log(f"starting etcd and kube-apiserver under {workdir}")
            cp.start()
            bench = Bench(cp, log, args.baseline, live=args.live, churn=args.churn)
            for name in names:
                reports.append(
                    render(SCALES[name], run_scale(bench, SCALES[name], rounds, configs))
                )
        except BaseException:
            print(cp.log_tails(40), file=sys.stderr)
            raise
        finally:
            cp.stop()
    print(
        f"machine: {facts['cores']} cores, {facts['cpu_model']}, Python {facts['python']}, "
        f"load average (1 min) {facts['loadavg_1m']} at start, {load_average()} at end; "
        f"{time.strftime('%Y-%m-%d')}"
    )
    serve = " ".join(OURS_ARGS)
    print(
        f"{rounds} round(s) each, alternating, each round in another order; "
        + ("pods created while kube-scheduler runs (--live); " if args.live else "")
        + (
            f"each bound pod deleted once {args.churn} more were bound (--churn); "
            if args.churn
            else ""
        )
        + f"ours runs `queue-extender serve {serve}`:"
    )
    for name in configs:
        print(f"  {name}: {ALL_CONFIGS[name].what}")
    for report in reports:
        print()
        print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
