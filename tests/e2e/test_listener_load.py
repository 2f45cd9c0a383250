"""The side listeners under a connection flood while the real kube-scheduler schedules.

An extender of its own serves the verbs on its main listener and ``/metrics`` and the status
page on two more (``--metrics-bind-address``, ``--status-address``), with the shipped
connection caps; a kube-scheduler of its own (a profile no other scheduler serves) calls it.
This process then holds 2,000 idle connections (connected, never a byte) and 200 slow ones
(a request head trickled a byte every ``TRICKLE_INTERVAL``, far slower than the read
deadline) spread over those two listeners, each reconnecting when the server closes it, and
creates ``PODS`` queue pods. Held: every pod binds, the extender answered every filter
kube-scheduler sent without an error (its own counters, and no scheduling event about the
extender), its resident memory grew by at most ``MAX_RSS_GROWTH``, and the verbs' listener
still answers ``/healthz`` at once. The figures are printed on one ``FIGURES`` line.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import resource
import statistics
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from tests.e2e.churn import rss_bytes, scrape
from tests.e2e.controlplane import ControlPlane, Extender, Process, wait_for
from tests.e2e.kube import Kube
from tests.ports import free_port

PROFILE = "listener-scheduler"
PODS = 50
IDLE = 2000
SLOW = 200
READ_TIMEOUT = 3.0  # the extender's --request-read-timeout, seconds
TRICKLE_INTERVAL = 1.0  # seconds between two bytes of a slow connection's head
RECONNECT_PAUSE = 0.5  # seconds a closed attacking connection waits before it connects again
ATTACK_LIMIT = 80.0  # seconds: the attack stops by itself by then whatever the test does
BIND_TIMEOUT = 60.0
MAX_RSS_GROWTH = 50 * 2**20
SHED_WITHIN = 1.0  # seconds: a connection closed sooner was shed at accept, not held
HEALTHZ_WITHIN = 1.0  # seconds the verbs' /healthz may take once the flood is over


@dataclass
class Flood:
    """Idle and slow connections against some loopback ports, on an event loop of its own in a
    thread of this process; it stops when ``stop`` is called or after ``ATTACK_LIMIT``."""

    ports: tuple[int, ...]
    idle: int
    slow: int
    opened: int = 0
    closed_by_server: int = 0
    refused: int = 0
    open_now: int = 0
    open_peak: int = 0
    # Lifetimes of the connections the server held (longer than SHED_WITHIN: not closed as
    # they were accepted because the listener was full), idle and slow apart.
    held: dict[str, list[float]] = field(default_factory=lambda: {"idle": [], "slow": []})
    _loop: asyncio.AbstractEventLoop | None = None
    _stop: asyncio.Event | None = None
    _thread: threading.Thread | None = None
    _started: threading.Event = field(default_factory=threading.Event)

    def start(self) -> Flood:
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)
        self._thread.start()
        self._started.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(30)
            assert not self._thread.is_alive(), "the flood did not stop"

    async def _run(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._started.set()
        # Slow and idle ones interleaved (a slow one after every tenth idle one for 2,000 and
        # 200), so both kinds are among the first to take the listeners' slots.
        kinds = sorted(
            [(i / self.idle, False) for i in range(self.idle)]
            + [(i / self.slow, True) for i in range(self.slow)]
        )
        tasks = [
            asyncio.create_task(self._hold(self.ports[i % len(self.ports)], slow=slow))
            for i, (_, slow) in enumerate(kinds)
        ]
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), ATTACK_LIMIT)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _hold(self, port: int, *, slow: bool) -> None:
        assert self._stop is not None
        head = b"GET /metrics HTTP/1.1\r\nHost: flood\r\nX-Slow: " + b"a" * 4096
        while not self._stop.is_set():
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                self.refused += 1
                await asyncio.sleep(RECONNECT_PAUSE)
                continue
            self.opened += 1
            self.open_now += 1
            self.open_peak = max(self.open_peak, self.open_now)
            began = time.monotonic()
            try:
                if slow:
                    for i in itertools.count():
                        writer.write(head[i % len(head) : i % len(head) + 1])
                        # A closed connection reads EOF at once; an open one times out.
                        with contextlib.suppress(TimeoutError):
                            if not await asyncio.wait_for(reader.read(4096), TRICKLE_INTERVAL):
                                break
                else:
                    while await reader.read(4096):
                        pass
                self.closed_by_server += 1
            except OSError:  # a reset: the server aborted it, or closed it mid-trickle
                self.closed_by_server += 1
            finally:
                self.open_now -= 1
                writer.close()
            if (lifetime := time.monotonic() - began) > SHED_WITHIN:
                self.held["slow" if slow else "idle"].append(lifetime)
            await asyncio.sleep(RECONNECT_PAUSE)


@dataclass
class Listeners:
    extender: Extender
    scheduler: Process
    metrics_port: int
    status_port: int


@pytest.fixture
def listeners(control_plane: ControlPlane) -> Iterator[Listeners]:
    """An extender with both side listeners and the shipped caps, and a kube-scheduler of a
    profile only it manages (so the session's scheduler and extender stay out of it)."""
    metrics_port, status_port = free_port(), free_port()
    extender = control_plane.start_extender(
        "listener-extender",
        args=[
            "--write-status=false",
            "--scheduler-names",
            PROFILE,
            "--metrics-bind-address",
            f"127.0.0.1:{metrics_port}",
            "--status-address",
            f"127.0.0.1:{status_port}",
            "--request-read-timeout",
            str(READ_TIMEOUT),
        ],
    ).wait_ready()
    try:
        scheduler = control_plane.start_scheduler(
            "listener-kube-scheduler", [PROFILE], extender.url + "/"
        )
        try:
            yield Listeners(extender, scheduler, metrics_port, status_port)
        finally:
            scheduler.stop()
    finally:
        extender.process.stop()


def raise_open_files(wanted: int) -> None:
    """The flood needs one descriptor per connection; the soft limit is raised to cover it
    (never past the hard limit, which this process cannot raise)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def text(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return str(response.read().decode())


def get_seconds(url: str) -> tuple[int, float]:
    began = time.monotonic()
    with urllib.request.urlopen(url, timeout=10) as response:
        response.read()
        return response.status, time.monotonic() - began


def counter(samples: dict[str, float], name: str, **labels: str) -> float:
    key = name + ("{" + ",".join(f"{k}={v}" for k, v in sorted(labels.items())) + "}")
    return samples.get(key, 0.0)


def test_kube_scheduler_binds_every_pod_while_the_side_listeners_are_flooded(
    kube: Kube, listeners: Listeners
) -> None:
    raise_open_files(IDLE + SLOW + 1024)
    ns = kube.namespace("listeners")
    for i in range(2):
        kube.node(f"listeners-n{i}", cpu="32", memory="128Gi", pods=200)
    queues = [kube.queue("listeners-a"), kube.queue("listeners-b", weight=2)]
    extender = listeners.extender
    pid = extender.process.pid
    # The extender must have seen the nodes and queues before kube-scheduler asks about them.
    wait_for(lambda: all(q in text(extender.url + "/debug/queues") for q in queues), 30, "queues")
    baseline = statistics.median(rss_bytes(pid) for _ in range(3))
    before = scrape(extender)

    flood = Flood((listeners.metrics_port, listeners.status_port), IDLE, SLOW).start()
    rss: list[int] = []
    try:
        wait_for(lambda: flood.opened >= IDLE + SLOW, 30, "the flood to connect")
        began = time.monotonic()
        for i in range(PODS):
            kube.pod(ns, f"p{i}", cpu="100m", memory="64Mi", queue=queues[i % 2], scheduler=PROFILE)

        def all_bound() -> bool:
            rss.append(rss_bytes(pid))
            return len(kube.bound(ns)) == PODS

        wait_for(all_bound, BIND_TIMEOUT, f"all {PODS} pods to bind", interval=0.5)
        bound_after = time.monotonic() - began
        # A few more read deadlines under the flood, so slow connections are cut meanwhile.
        deadline = time.monotonic() + 3 * READ_TIMEOUT
        while time.monotonic() < deadline:
            rss.append(rss_bytes(pid))
            time.sleep(0.5)
    finally:
        flood.stop()
    rss.append(rss_bytes(pid))

    status, healthz_seconds = get_seconds(extender.url + "/healthz")
    after = scrape(extender)
    filters = counter(after, "queue_extender_request_duration_seconds_count", verb="filter") - (
        counter(before, "queue_extender_request_duration_seconds_count", verb="filter")
    )
    # Every answer the extender gave kube-scheduler, filter and prioritize alike: no backend
    # failure, no request it could not read, no error outcome.
    errors = {
        f"{name}{{verb={verb}}}": counter(after, name, verb=verb) - counter(before, name, verb=verb)
        for verb in ("filter", "prioritize")
        for name in ("queue_extender_errors_total", "queue_extender_bad_requests_total")
    } | {
        f"decisions{{verb={verb},outcome=error}}": counter(
            after, "queue_extender_decisions_total", outcome="error", verb=verb
        )
        - counter(before, "queue_extender_decisions_total", outcome="error", verb=verb)
        for verb in ("filter", "prioritize")
    }
    extender_events = [
        message
        for name in kube.pods(ns)
        for message in kube.scheduling_messages(ns, name)
        if "extender" in message.lower() or message.startswith("FailedScheduling")
    ]
    growth = max(rss) - baseline
    held = flood.held["idle"] + flood.held["slow"]
    print(
        f"\nFIGURES listener-load: pods={PODS} bound-in={bound_after:.1f}s filters={filters:.0f} "
        f"filter-errors={sum(errors.values()):.0f} idle={IDLE} slow={SLOW} "
        f"opened={flood.opened} closed-by-server={flood.closed_by_server} "
        f"refused={flood.refused} open-peak={flood.open_peak} "
        f"held-idle={len(flood.held['idle'])} held-slow={len(flood.held['slow'])} "
        f"held-lifetime-median={statistics.median(held or [0]):.1f}s "
        f"held-lifetime-max={max(held or [0]):.1f}s "
        f"rss-before={baseline / 2**20:.1f}MiB rss-peak={max(rss) / 2**20:.1f}MiB "
        f"growth={growth / 2**20:+.1f}MiB healthz={healthz_seconds * 1000:.0f}ms"
    )

    assert len(kube.bound(ns)) == PODS
    assert filters >= PODS, "kube-scheduler asked the extender about every pod"
    assert errors == dict.fromkeys(errors, 0.0), errors
    assert extender_events == [], extender_events
    assert growth <= MAX_RSS_GROWTH, [r // 2**20 for r in rss]
    assert (status, healthz_seconds < HEALTHZ_WITHIN) == (200, True), healthz_seconds
    # The flood was real (every connection opened, and reopened as the server closed it), and
    # the connections that got a slot, idle and trickling alike, were cut by the read
    # deadline rather than held for the whole run.
    assert flood.opened > IDLE + SLOW
    assert flood.held["idle"] and flood.held["slow"], flood.held
    assert max(held) < 3 * READ_TIMEOUT, sorted(held)[-10:]
    # The extender's own account agrees: both side listeners shed connections at their cap
    # and closed ones that sent no whole request in time (each logged once per thousand).
    log = listeners.extender.process.log_path.read_text(errors="replace").splitlines()
    for name in ("metrics listener", "status listener"):
        for said in ("the cap: closing new ones", f"no whole request within {READ_TIMEOUT:g}s"):
            assert any(f"{name}: " in line and said in line for line in log), (name, said)
    # Once the flood is over the side listeners serve people and Prometheus again.
    for port, path in ((listeners.metrics_port, "/metrics"), (listeners.status_port, "/healthz")):
        assert get_seconds(f"http://127.0.0.1:{port}{path}")[0] == 200
