"""Plugin and action base classes and their registries.

Plugins and actions register themselves by name when their package is imported; the
framework only ever reaches them through these registries and the session's hooks, so
actions never import plugins (the layering of Volcano's scheduler).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar, TypeVar

from scheduler_core.framework.arguments import Arguments

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session


class Plugin(ABC):
    name: ClassVar[str]

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    @abstractmethod
    def on_session_open(self, ssn: Session) -> None:
        """Register hooks and build per-session state."""

    def on_session_close(self, ssn: Session) -> None:  # noqa: B027 - optional hook
        """Drop per-session state; most plugins have nothing to do."""


class Action(ABC):
    name: ClassVar[str]

    def initialize(self, arguments: Arguments) -> None:  # noqa: B027 - optional hook
        """Read the action's entry of ``configurations``."""

    @abstractmethod
    def execute(self, ssn: Session) -> None: ...


_PLUGINS: dict[str, Callable[[Arguments], Plugin]] = {}
_ACTIONS: dict[str, Callable[[], Action]] = {}

P = TypeVar("P", bound=type[Plugin])
A = TypeVar("A", bound=type[Action])


def register_plugin(cls: P) -> P:
    _PLUGINS[cls.name] = cls
    return cls


def register_action(cls: A) -> A:
    _ACTIONS[cls.name] = cls
    return cls


def plugin_builder(name: str) -> Callable[[Arguments], Plugin] | None:
    return _PLUGINS.get(name)


def action_builder(name: str) -> Callable[[], Action] | None:
    return _ACTIONS.get(name)


def plugin_names() -> frozenset[str]:
    return frozenset(_PLUGINS)
