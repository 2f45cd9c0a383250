"""Following asks each plugin of the session; it knows none of them by name."""

from __future__ import annotations

from scheduler_core.accounting.following import can_follow, follow
from scheduler_core.conf import load_configuration
from scheduler_core.framework.framework import open_session
from scheduler_core.framework.registry import FollowStep, Plugin, UsageChange
from scheduler_core.framework.session import Session
from tests.builders import node, pod, snapshot, tiers
from tests.conftest import RegisterPlugin

OBJECTS = [node("n1", cpu="4"), pod("p1", cpu="1", node_name="n1", phase="Running")]


class SilentPlugin(Plugin):
    """Keeps per-session state and says nothing of following: never followed."""

    name = "test-silent"

    def on_session_open(self, ssn: Session) -> None:
        pass


class CountingPlugin(Plugin):
    """Follows by counting the steps it was asked for and the ones that ran."""

    name = "test-counting"
    ran = 0

    def on_session_open(self, ssn: Session) -> None:
        pass

    def can_follow(self, ssn: Session) -> bool:
        return True

    def follow(self, ssn: Session, change: UsageChange) -> FollowStep | None:
        def step() -> None:
            CountingPlugin.ran += 1

        return step


class RefusingPlugin(CountingPlugin):
    """Says it can follow, then refuses the change (as proportion does for a queue that
    gained its first job)."""

    name = "test-refusing"

    def follow(self, ssn: Session, change: UsageChange) -> None:
        return None


def _read_only(*plugins: str) -> Session:
    conf = load_configuration(tiers(", ".join(plugins)))
    return open_session(snapshot(OBJECTS), conf, read_only=True)


def test_a_plugin_that_says_nothing_of_following_makes_the_session_unfollowable(
    register_plugin: RegisterPlugin,
) -> None:
    register_plugin(SilentPlugin)
    assert can_follow(_read_only("priority", "gang", "drf"))
    assert not can_follow(_read_only("priority", "gang", "drf", "test-silent"))


def test_a_refusal_runs_no_plugin_s_step(register_plugin: RegisterPlugin) -> None:
    register_plugin(CountingPlugin)
    register_plugin(RefusingPlugin)
    CountingPlugin.ran = 0
    ssn = _read_only("test-counting", "test-refusing")
    assert not follow(ssn, {}, {"default"}, {"n1"}, set())
    assert CountingPlugin.ran == 0


def test_every_step_runs_once_all_plugins_gave_one(register_plugin: RegisterPlugin) -> None:
    register_plugin(CountingPlugin)
    CountingPlugin.ran = 0
    ssn = _read_only("test-counting", "priority")
    assert follow(ssn, {}, {"default"}, {"n1"}, set())
    assert CountingPlugin.ran == 1


def test_a_session_that_may_change_is_never_followed() -> None:
    conf = load_configuration(tiers("priority"))
    assert not can_follow(open_session(snapshot(OBJECTS), conf))
