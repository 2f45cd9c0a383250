"""The benchmark harness behind ``make bench`` (``python -m bench``).

It measures the latency and throughput targets on a synthetic cluster at reference scale
(5,000 nodes, 50,000 pods, 200 queues, 2,000 pod groups): the verbs in-process and over
HTTP, the queue accounting, a full reclaim session, and the initial sync through the
informers. Numbers are printed beside their targets and never asserted anywhere: timing
belongs here, not in tests.

This module holds what every bench shares: a ``Measurement`` (samples or one value, and the
target it is judged against), and the bounded sampling loop.
"""

from __future__ import annotations

import gc
import math
import os
import platform
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(slots=True)
class Budget:
    """How many samples a bench takes: ``n`` after ``warmup``, but never longer than
    ``seconds`` (at least one sample is always taken), so a slow engine cannot hang the run."""

    n: int
    seconds: float
    warmup: int = 0


@dataclass
class Measurement:
    """One row of the table.

    Either ``samples`` (in ``unit``; statistics are computed from them) or a single
    ``value``. ``target`` applies to ``target_stat`` (``p99``, ``p50`` or ``value``) with
    ``target_op``; no target means the row is informative only.
    """

    name: str
    what: str
    unit: str = "ms"
    samples: list[float] = field(default_factory=list)
    value: float | None = None
    target: float | None = None
    target_stat: str = "p99"
    target_op: str = "<="
    extra: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    #: Resident memory of the process that did the work, right after the row (MiB).
    rss_mib: float | None = None

    def stats(self) -> dict[str, float]:
        if not self.samples:
            return {}
        ordered = sorted(self.samples)
        return {
            "n": len(ordered),
            "mean": sum(ordered) / len(ordered),
            "p50": percentile(ordered, 50),
            "p99": percentile(ordered, 99),
            "min": ordered[0],
            "max": ordered[-1],
        }

    def judged(self) -> float | None:
        """The number the target applies to."""
        if self.target_stat == "value":
            return self.value
        return self.stats().get(self.target_stat)

    def verdict(self) -> str:
        if self.error is not None:
            return "ERROR"
        if self.target is None:
            return "-"
        got = self.judged()
        if got is None:
            return "ERROR"
        ok = got <= self.target if self.target_op == "<=" else got >= self.target
        return "PASS" if ok else "MISS"

    def miss_factor(self) -> float | None:
        """How far off a MISS is: got/target (for <=) or target/got (for >=)."""
        got = self.judged()
        if self.verdict() != "MISS" or got is None or self.target is None:
            return None
        if self.target_op == "<=":
            return got / self.target if self.target else math.inf
        return self.target / got if got else math.inf

    def target_text(self) -> str:
        if self.target is None:
            return "-"
        op = "≤" if self.target_op == "<=" else "≥"
        stat = "" if self.target_stat == "value" else f"{self.target_stat} "
        return f"{stat}{op} {format_number(self.target)} {self.unit}".rstrip()

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "what": self.what,
            "unit": self.unit,
            **self.stats(),
            "value": self.value,
            "target": self.target,
            "target_stat": self.target_stat,
            "target_op": self.target_op,
            "verdict": self.verdict(),
            "miss_factor": self.miss_factor(),
            "extra": self.extra,
            "error": self.error,
            "rss_mib": self.rss_mib,
        }


def percentile(ordered: list[float], pct: float) -> float:
    """Nearest-rank percentile of an already sorted list (p99 of 50 samples is the max)."""
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def format_number(x: float) -> str:
    if x == 0 or abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    if abs(x) >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def sample(
    fn: Callable[[int], Any], budget: Budget, *, after: Callable[[int], Any] | None = None
) -> list[float]:
    """Time ``fn(i)`` in milliseconds, ``budget.n`` times after ``budget.warmup`` untimed
    calls; ``after(i)`` runs untimed after each call (to undo what the call changed).

    The garbage collector stays on: a service pays for its collections too, and they are
    part of a real p99.
    """
    out: list[float] = []
    deadline = time.monotonic() + budget.seconds
    for i in range(budget.warmup):
        fn(i)
        if after is not None:
            after(i)
        if time.monotonic() > deadline:
            break
    for i in range(budget.warmup, budget.warmup + budget.n):
        started = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - started) * 1e3)
        if after is not None:
            after(i)
        if time.monotonic() > deadline:
            break
    return out


def machine_facts() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cores": os.cpu_count(),
        "cpu_model": model or platform.processor(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "taskset": shutil.which("taskset") is not None,
        "gc_enabled": gc.isenabled(),
        "loadavg_1m": load_average(),
    }


def proc_status_kib(field: str, pid: int | str = "self") -> int | None:
    """A ``/proc/<pid>/status`` amount in KiB (``VmRSS``, ``VmHWM``); None without /proc."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def rss_mib(pid: int | str = "self") -> float | None:
    """Resident memory of a process now, in MiB."""
    kib = proc_status_kib("VmRSS", pid)
    return None if kib is None else round(kib / 1024, 1)


def load_average() -> float | None:
    """The 1-minute load average: other work on a 2-core machine moves every number here."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def pinned(core: int, argv: list[str]) -> list[str]:
    """``argv`` prefixed with ``taskset -c core`` when there are two cores to split."""
    if shutil.which("taskset") and (os.cpu_count() or 1) >= 2:
        return ["taskset", "-c", str(core), *argv]
    return argv


def subprocess_env() -> dict[str, str]:
    """The environment for bench child processes: the repository importable, as ``-m``
    from its root makes it."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    return env


def measured_or_failed(name: str, what: str, bench: Callable[[], Measurement]) -> Measurement:
    """``bench()``, or its row carrying the error: a broken engine is a result too, not the
    end of the run."""
    try:
        return bench()
    except Exception as exc:
        return Measurement(name, what, error=f"{type(exc).__name__}: {exc}")
