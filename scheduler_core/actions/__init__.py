"""Volcano's actions, one module each. Importing this package registers every action by its
name, here and nowhere else (as Volcano's ``actions/factory.go`` does)."""

from __future__ import annotations

from scheduler_core.actions.allocate import Allocate
from scheduler_core.actions.enqueue import Enqueue
from scheduler_core.actions.preempt import PreemptAction
from scheduler_core.actions.reclaim import ReclaimAction
from scheduler_core.framework.registry import register_action

for _action in (Allocate, Enqueue, PreemptAction, ReclaimAction):
    register_action(_action)
