"""capacity: queues with a deserved share written in their spec (Volcano's ``capacity`` plugin).

Unlike proportion there is no water-filling: ``spec.deserved`` is what a queue may reclaim
up to, and ``realCapability`` (capability, less the others' guarantees) is the hard limit on
what it may hold. With ``enableHierarchy: true`` queues form a tree under ``root`` through
``spec.parent``; only leaves hold jobs, usage is added up to every ancestor, and a task is
allocatable only if the leaf and every ancestor stay within their real capability.

The DRA quota and the queue-allocation-gate reservation of Volcano's plugin are not built:
a task's request is checked against ``allocated + request`` without any reserved part.

The package: ``args`` (``ancestorReclaimLevel``), ``build`` (the queue records a session
opens with, flat or as a tree), ``reclaim`` (who may reclaim from whom) and ``plugin`` (the
session, queue order, allocate and admission).
"""

from scheduler_core.plugins.capacity.args import ANCESTOR_RECLAIM_LEVEL, CapacityArgs
from scheduler_core.plugins.capacity.plugin import CapacityPlugin

__all__ = ["ANCESTOR_RECLAIM_LEVEL", "CapacityArgs", "CapacityPlugin"]
