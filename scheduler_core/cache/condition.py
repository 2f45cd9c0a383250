"""Where a reflector is and why, for readiness and the log: its phase, the reason it is not
watching, and its failures logged without flooding."""

from __future__ import annotations

import enum
import logging
import time

from .kinds import KindSpec
from .transport import brief, refused
from .watch_protocol import ApiStatus

log = logging.getLogger("scheduler_core.cache.reflector")


class Phase(enum.Enum):
    """Where a reflector is; readiness explains a non-synced informer with it."""

    STARTING = "starting"
    LISTING = "listing"
    WATCHING = "watching"
    NOT_INSTALLED = "not_installed"
    FAILING = "failing"
    STOPPED = "stopped"


class FailureLog:
    """A reflector's failures in the log: WARNING when the failure is new, then at most
    once per interval (no log floods), DEBUG in between."""

    def __init__(self, name: str, interval: float) -> None:
        self._name = name
        self._interval = interval
        self._logged_reason = ""
        self._logged_at = 0.0

    def log(self, message: str) -> None:
        now = time.monotonic()
        if message != self._logged_reason or now - self._logged_at >= self._interval:
            log.warning("%s: %s", self._name, message)
            self._logged_reason = message
            self._logged_at = now
        else:
            log.debug("%s: %s", self._name, message)


class Condition:
    """A reflector's phase and the reason it gives, as its list and watch find them."""

    def __init__(self, spec: KindSpec, name: str, path: str, failure_log_interval: float) -> None:
        self.phase = Phase.STARTING
        self.reason = ""
        #: The last failure was a connection nobody accepted (retried on the short backoff).
        self.unreachable = False
        self._spec = spec
        self._path = path
        self._failures = FailureLog(name, failure_log_interval)

    def watching(self) -> None:
        self.phase = Phase.WATCHING
        self.reason = ""

    def not_installed(self, api_status: ApiStatus) -> None:
        self.phase = Phase.NOT_INSTALLED
        if self._spec.custom:
            reason = f"CRD {self._spec.crd_name} not installed"
        else:
            reason = f"resource {self._spec.resource}/{self._spec.version} not found"
        self.reason = reason
        self._failures.log(f"{reason} ({api_status.text()} on GET {self._path}); retrying")

    def fail(self, reason: str) -> None:
        self.phase = Phase.FAILING
        self.reason = reason
        self._failures.log(f"{reason}; retrying with backoff")

    def transport_failed(self, what: str, exc: BaseException) -> None:
        """A request that got no answer: refused connections are retried sooner."""
        self.unreachable = refused(exc)
        self.fail(f"{what} failed: {brief(exc)}")
