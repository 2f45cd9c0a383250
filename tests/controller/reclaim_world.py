"""A small cluster kept as Kubernetes objects, moved forward the way a live one moves: pods
arrive and finish, the scheduler places what the queues allow, the reclaim loop evicts."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.conf import SchedulerConfiguration
from scheduler_core.controller.decision import CycleDecision, decide
from scheduler_core.engine import run_session
from tests.builders import HELM_CONF, Obj, configuration, node, pod, queue, snapshot

#: The default tiers with enqueue + allocate: what kube-scheduler and the filter verb let in.
PLACEMENT_CONF = configuration(HELM_CONF, "enqueue, allocate")


def reclaim_conf(**arguments: Any) -> SchedulerConfiguration:
    return configuration(
        HELM_CONF, "enqueue, allocate, reclaim", {"reclaim": arguments} if arguments else None
    )


@dataclass
class World:
    nodes: int = 3
    node_cpu: int = 4
    weights: dict[str, int] = field(default_factory=lambda: {"q0": 1, "q1": 1, "q2": 1})
    pods: dict[str, Obj] = field(default_factory=dict)
    serial: int = 0

    def objects(self) -> list[Obj]:
        objs: list[Obj] = [
            node(f"n{i}", cpu=str(self.node_cpu), memory=f"{self.node_cpu}Gi")
            for i in range(self.nodes)
        ]
        objs += [queue(name, weight) for name, weight in self.weights.items()]
        return objs + list(self.pods.values())

    def snapshot(self) -> ClusterSnapshot:
        return snapshot(self.objects())

    def submit(self, queue_name: str, cpu: int = 1) -> str:
        self.serial += 1
        name = f"{queue_name}-p{self.serial}"
        self.pods[name] = pod(name, queue=queue_name, cpu=str(cpu), memory=f"{cpu}Gi")
        return name

    def bind(self, name: str, node_name: str) -> None:
        self.pods[name]["spec"]["nodeName"] = node_name
        self.pods[name]["status"] = {"phase": "Running", "startTime": "2024-01-01T00:00:00Z"}

    def queue_of(self, name: str) -> str:
        return str(self.pods[name]["metadata"]["annotations"]["scheduling.volcano.sh/queue-name"])

    def running(self) -> list[str]:
        return [n for n, p in self.pods.items() if p["spec"].get("nodeName")]

    def place(self) -> None:
        """What kube-scheduler does with the filter's answers: pods of queues within their
        share go where they fit."""
        ssn = run_session(self.snapshot(), PLACEMENT_CONF)
        for task in ssn.bound:
            self.bind(task.name, task.node_name)

    def reclaim(self, conf: SchedulerConfiguration) -> CycleDecision:
        """One loop cycle; a victim's controller makes it again (pending, same queue and
        size: demand unchanged) and every preemptor binds where it was pipelined."""
        decision = decide(self.snapshot(), conf)
        for planned in decision.evictions:
            victim = self.pods.pop(planned.victim.name)
            requests = victim["spec"]["containers"][0]["resources"]["requests"]
            self.submit(planned.victim_queue, int(requests["cpu"]))
            if planned.preemptor is not None and planned.preemptor.name in self.pods:
                self.bind(planned.preemptor.name, planned.preemptor.node_name)
        return decision

    def churn(self, rng: random.Random) -> bool:
        """One random change of demand; False when nothing changed."""
        roll = rng.random()
        if roll < 0.45:
            self.submit(rng.choice(list(self.weights)), rng.choice((1, 1, 2)))
            return True
        if roll < 0.85:
            running = self.running()
            if not running:
                return False
            del self.pods[rng.choice(running)]
            return True
        name = rng.choice(list(self.weights))
        self.weights[name] = rng.randint(1, 4)
        return True
