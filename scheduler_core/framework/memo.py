"""What plugins keep beyond one session, owned by whoever opens sessions one after another.

Sessions that follow each other over one cluster (the accounting's, one cycle of the reclaim
loop after another) mostly see what the last one saw: the same queue specs, the same deserved
shares, the same node rows. A plugin may remember such work in a ``SessionMemos`` and take it
up again in the next session, instead of a module global that every session of the process
(and every test) would share. The owner of the memos is the object whose sessions they serve
(``QueueAccounting``, the reclaim loop, a what-if against the accounting's cluster); a session
opened without one gets a fresh, empty ``SessionMemos`` and computes everything itself.

A memo's entries must always be right for what they name whoever reads them: the owner may
open sessions from more than one thread (the verbs on the event loop, the status writer).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar, cast

T = TypeVar("T")


class SessionMemos:
    """Named slots, one per plugin or helper that remembers something across sessions."""

    def __init__(self) -> None:
        self._slots: dict[str, object] = {}
        self._lock = threading.Lock()

    def slot(self, name: str, factory: Callable[[], T]) -> T:
        """The slot ``name``, made by ``factory`` on first use. One name, one type: the
        module that owns the name is the only one that reads it."""
        value = self._slots.get(name)
        if value is None:
            with self._lock:
                value = self._slots.get(name)
                if value is None:
                    value = self._slots[name] = factory()
        return cast(T, value)

    def first_time(self, what: str) -> bool:
        """True the first time ``what`` is asked of these memos (a line worth logging once
        per owner, not once per session)."""
        seen = self.slot("memo.seen", set[str])
        with self._lock:
            if what in seen:
                return False
            seen.add(what)
            return True
