"""Plugin and action base classes and their registries.

The plugins' and the actions' packages register each of theirs by name when imported (their
``__init__``, as Volcano's ``factory.go`` files); the framework only ever reaches them
through these registries and the session's hooks, so actions never import plugins (the
layering of Volcano's scheduler).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, cast

from scheduler_core.api.usage import JobUsage
from scheduler_core.conf import SchedulerConfiguration
from scheduler_core.framework.arguments import Arguments, NoArgs, PluginArgs

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session


@dataclass(frozen=True, slots=True)
class UsageChange:
    """Some existing jobs' usage changed behind a long-lived read-only session (a pod bound,
    added, finished or deleted in an existing group; a PodGroup's phase): ``usage`` is the
    live cache's per-queue sums, ``queues`` and ``nodes`` what the change touched, ``jobs``
    the jobs whose own sums moved or whose charged assumption ended (their queues are in
    ``queues``). After the step, the caller charges the open assumptions of ``queues``
    back (``Session.fire_charge_back``)."""

    usage: Mapping[str, JobUsage]
    queues: Collection[str]
    nodes: Collection[str]
    jobs: Collection[str]
    #: Jobs taken out of the session (a plain pod's group of one, its pod deleted; a
    #: PodGroup's job, the PodGroup deleted): their queues are in ``queues``, and a plugin
    #: that keeps its queues in the order of their first jobs must see whether that order
    #: moved.
    gone: Collection[str] = ()


#: What a plugin does to bring its per-session state up to date with a ``UsageChange``.
FollowStep = Callable[[], None]


def follows_nothing() -> None:
    """The step of a plugin that keeps nothing a change of usage makes stale."""


#: A plugin's arguments record (``Plugin.args``).
ArgsT = TypeVar("ArgsT", bound=PluginArgs)


class Plugin(ABC, Generic[ArgsT]):
    """A plugin reads its arguments through ``args``, its ``args_type`` record: parsed once
    when the configuration is loaded (a value it refuses refuses the configuration there)
    and handed to every session's instance, so no session reads the raw map again. A
    plugin that reads no arguments keeps the default, ``NoArgs``. ``arguments`` (the raw
    map) stays for a plugin not yet written with a record.

    The record's type is the class's parameter (``class BinpackPlugin(Plugin[BinpackArgs])``
    with ``args_type = BinpackArgs``): a subclass states it once in its bases instead of
    narrowing the attribute's type, which a compiled class may not do."""

    name: ClassVar[str]
    args_type: ClassVar[type[PluginArgs]] = NoArgs

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        # ``args_type`` is the class's ``ArgsT`` (a class variable cannot be typed by it).
        self.args: ArgsT = cast(ArgsT, arguments.typed(self.args_type))

    @classmethod
    def conf_problems(cls, arguments: Arguments, conf: SchedulerConfiguration) -> list[str]:
        """Why the configuration cannot run this plugin as it names it (its arguments, its
        place in the tiers); each a sentence a person can act on. Checked when a
        configuration is loaded, at start and on reload, so a bad one is refused there
        rather than failing, or silently doing nothing, in every session."""
        del arguments, conf
        return []

    @abstractmethod
    def on_session_open(self, ssn: Session) -> None:
        """Register hooks and build per-session state."""

    def on_session_close(self, ssn: Session) -> None:
        """Drop per-session state; most plugins have nothing to do."""

    def can_follow(self, ssn: Session) -> bool:
        """Whether ``follow`` can bring this plugin's state in ``ssn`` up to date in place.
        False by default: a plugin that keeps per-session state and says nothing of it is
        never followed, its session is opened again instead (always right, only slower).
        Asked once a session (the accounting keeps the answer): it must hold for the
        session's life."""
        return False

    def follow(self, ssn: Session, change: UsageChange) -> FollowStep | None:
        """How this plugin's per-session state in ``ssn`` is brought to what a session opened
        now would hold, after ``change``: a step that does it, or None when it cannot. It
        must change nothing itself: the caller runs the steps only once every plugin of the
        session has given one, so a refusal leaves the session exactly as it was."""
        return None


#: A plugin of any arguments record: what the registry, the session and the framework hold.
AnyPlugin = Plugin[Any]


class Action(ABC):
    name: ClassVar[str]

    def initialize(self, arguments: Arguments) -> None:  # noqa: B027 - optional hook
        """Read the action's entry of ``configurations``."""

    @abstractmethod
    def execute(self, ssn: Session) -> None: ...


_PLUGINS: dict[str, Callable[[Arguments], AnyPlugin]] = {}
_ACTIONS: dict[str, Callable[[], Action]] = {}


def register_plugin(cls: type[AnyPlugin]) -> None:
    _PLUGINS[cls.name] = cls


def register_action(cls: type[Action]) -> None:
    _ACTIONS[cls.name] = cls


def plugin_builder(name: str) -> Callable[[Arguments], AnyPlugin] | None:
    return _PLUGINS.get(name)


def action_builder(name: str) -> Callable[[], Action] | None:
    return _ACTIONS.get(name)


def plugin_names() -> frozenset[str]:
    return frozenset(_PLUGINS)


def plugin_conf_problems(conf: SchedulerConfiguration, source: str = "configuration") -> list[str]:
    """Every registered plugin's refusal of its arguments and its ``conf_problems`` for
    ``conf``, each saying where. Reads each plugin's arguments into its ``args_type`` record
    on the way and keeps the record on the plugin's option (``PluginOption.args``): the
    configuration is loaded once, sessions are opened many times."""
    problems: list[str] = []
    for i, tier in enumerate(conf.tiers):
        for j, option in enumerate(tier.plugins):
            cls = _PLUGINS.get(option.name)
            if not (isinstance(cls, type) and issubclass(cls, Plugin)):
                continue
            where = f"{source}: tiers[{i}].plugins[{j}] ({option.name})"
            arguments = Arguments(option.arguments)
            try:
                option.args = cls.args_type.parse(arguments)
            except ValueError as exc:
                problems.append(f"{where}: {exc}")
            problems.extend(f"{where}: {problem}" for problem in cls.conf_problems(arguments, conf))
    return problems
