"""Re-reading the scheduler configuration file when it changes, as Volcano's scheduler does.

A ConfigMap mounted as a volume is updated by the kubelet with a symlink swap: the file's
name points through ``..data`` to a timestamped directory, and ``..data`` is replaced
atomically by a link to a new one. An inotify watch on the file itself would follow the old
inode and never fire, so this polls the resolved path instead: its real path, mtime, size
and inode, then the content's hash (a swap to identical content reloads nothing).

A new file that does not parse, names an unknown action, has a warning under
``--strict-conf``, or that the running engine refuses, keeps the old configuration serving:
a failed reload is logged with the file and the error, counted, and named by /readyz until a
later file loads (or the file returns to the configuration that is running).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter

from scheduler_core.conf import SchedulerConfiguration, load_configuration
from scheduler_core.controller.periodic import Periodic
from scheduler_core.engine import check_configuration

log = logging.getLogger(__name__)

DEFAULT_INTERVAL = 2.0

Stamp = tuple[str, int, int, int]

OK = "ok"
ERROR = "error"


class ConfigurationWatcher:
    """Polls ``path`` every ``interval`` seconds on a daemon thread (``start``) and hands
    each new configuration that loads to ``apply``, which raises ``ValueError`` to refuse it
    (nothing changed). ``check`` is one poll, for callers that drive it themselves."""

    def __init__(
        self,
        path: str,
        apply: Callable[[SchedulerConfiguration], None],
        *,
        strict: bool = False,
        interval: float = DEFAULT_INTERVAL,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.path = path
        self.apply = apply
        self.strict = strict
        self.interval = interval
        self.reloads = Counter(
            "queue_extender_config_reload",
            "Attempts to reload the changed scheduler configuration file, by result (ok: "
            "serving the new one; error: refused, the previous one still serves).",
            ["result"],
            registry=registry,
        )
        for result in (OK, ERROR):
            self.reloads.labels(result)
        #: The stamp and content hash of the file the running configuration came from.
        self._stamp: Stamp | None = None
        self._digest = ""
        try:
            self._stamp = self._stat()
            self._digest = _digest(self._read(self._stamp))
        except OSError as exc:  # already read once by the caller: a race, reported at check
            log.warning("cannot read the configuration %s to watch it: %s", path, exc)
        #: What the last refused file was (its hash, or the read error), so that it is
        #: reported once rather than at every poll.
        self._failed_key = ""
        self._failure = ""
        self._lock = threading.Lock()
        self._worker = Periodic(
            "conf-reload", interval, self.check, what=f"checking the configuration {path}"
        )

    @property
    def failure(self) -> str:
        """Why the file on disk is not the configuration serving ("" when it is)."""
        return self._failure

    # --- thread -------------------------------------------------------------------------

    def start(self) -> ConfigurationWatcher:
        if self.interval > 0:
            self._worker.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._worker.stop(timeout)

    # --- one poll -----------------------------------------------------------------------

    def check(self) -> str | None:
        """One poll: ``"ok"`` when a changed file was taken, ``"error"`` when it was refused
        (the previous configuration still serves), None when there was nothing new."""
        with self._lock:
            try:
                taken = self._take()
                if taken is None:
                    return None
                stamp, content = taken
            except OSError as exc:
                self._stamp = None  # whatever comes back is read and compared again
                reason = f"cannot read: {exc.strerror or exc}"
                return self._refuse(reason, reason)
            self._stamp = stamp
            digest = _digest(content)
            if digest == self._digest:
                if self._failure:
                    log.info("configuration %s is back to the one serving", self.path)
                self._failed_key = self._failure = ""
                return None
            if digest == self._failed_key:
                return None
            try:
                conf = self._load(content)
                self.apply(conf)
            except ValueError as exc:
                return self._refuse(digest, str(exc))
            self._digest, self._failed_key, self._failure = digest, "", ""
            self.reloads.labels(OK).inc()
            log.info(
                "reloaded the scheduler configuration from %s: actions %s, tiers %s",
                self.path,
                ", ".join(conf.actions),
                " | ".join(", ".join(p.name for p in tier.plugins) for tier in conf.tiers),
            )
            for warning in conf.warnings:
                log.warning("configuration warning: %s", warning)
            return OK

    def _load(self, content: bytes) -> SchedulerConfiguration:
        """The configuration the bytes hold; ``ValueError`` (``ConfigError``) when they do not
        parse, name an unknown action, or have a warning under strict mode."""
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"not UTF-8: {exc}") from exc
        conf = check_configuration(load_configuration(text, self.path), self.path)
        if conf.warnings and self.strict:
            raise ValueError(
                f"--strict-conf: {len(conf.warnings)} configuration warning(s): "
                + "; ".join(conf.warnings)
            )
        return conf

    def _refuse(self, key: str, reason: str) -> str | None:
        if key == self._failed_key:
            return None
        if not reason.startswith(self.path):
            reason = f"{self.path}: {reason}"
        reason = " ".join(reason.split())
        self._failed_key = key
        self._failure = (
            f"configuration reload failed, the previous configuration still serves: {reason}"
        )
        self.reloads.labels(ERROR).inc()
        log.error("%s", self._failure)
        return ERROR

    def _take(self) -> tuple[Stamp, bytes] | None:
        """The file's stamp and bytes, or None when its stamp has not changed. A ConfigMap
        volume swaps a symlink to a new data directory and then deletes the old one: when
        that happens between resolving the path and opening it, the file is read again from
        where the path now leads (once: a path that keeps vanishing is an error)."""
        for retry in (False, True):
            stamp = self._stat()
            if stamp == self._stamp:
                return None
            try:
                return stamp, self._read(stamp)
            except FileNotFoundError:
                if retry or os.path.realpath(self.path) == stamp[0]:
                    raise
        return None  # not reached: the second attempt returns or raises

    def _stat(self) -> Stamp:
        real = os.path.realpath(self.path)
        st = os.stat(real)
        return (real, st.st_mtime_ns, st.st_size, st.st_ino)

    @staticmethod
    def _read(stamp: Stamp) -> bytes:
        with open(stamp[0], "rb") as f:
            return f.read()


def _digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()
