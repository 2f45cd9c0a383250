"""--conf followed as a mounted ConfigMap changes: a symlink swap of ``..data`` to a new
directory, as the kubelet does it. A file that loads takes effect at the next verb; one that
does not keeps the previous configuration serving, counted and named by /readyz."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.backend.build import Built, configuration_user, configuration_warnings
from app.backend.conf_reload import ConfigurationWatcher
from app.backend.engine import EngineBackend
from app.cli.main import build_parser
from app.cli.serve import DEMO_FILTER_BODY, backend_from_args, build_servers
from app.cli.serve_flags import listening_from_args
from scheduler_core.conf import DEFAULT_CONF, SchedulerConfiguration

from ..live import serve

CONF_NAME = "volcano-scheduler.conf"
CAPACITY_CONF = DEFAULT_CONF.replace("proportion", "capacity")
NO_BINPACK_CONF = DEFAULT_CONF.replace(
    "  - name: binpack\n    arguments:\n      binpack.weight: 10\n", ""
)
BROKEN_CONF = "actions: [enqueue\ntiers: {"
UNKNOWN_ACTION_CONF = DEFAULT_CONF.replace("reclaim", "reclaimm", 1)
MISSPELT_PLUGIN_CONF = DEFAULT_CONF.replace("name: proportion", "name: proportionn")
USAGE_NO_HALF_LIFE_CONF = DEFAULT_CONF.replace(
    "  - name: proportion\n", "  - name: usagehistory\n  - name: proportion\n"
)
USAGE_ZERO_HALF_LIFE_CONF = DEFAULT_CONF.replace(
    "  - name: proportion\n",
    "  - name: usagehistory\n    arguments:\n      usage.halfLife: 0s\n  - name: proportion\n",
)
DEMO = json.loads(DEMO_FILTER_BODY)


class ConfigMapVolume:
    """A directory laid out as the kubelet mounts a ConfigMap: ``NAME -> ..data/NAME``,
    ``..data -> ..<timestamp>``; ``update`` swaps ``..data`` atomically."""

    def __init__(self, root: Path, text: str) -> None:
        self.root = root
        self.generation = 0
        self._write(text)
        (root / CONF_NAME).symlink_to(Path("..data") / CONF_NAME)

    @property
    def path(self) -> str:
        return str(self.root / CONF_NAME)

    def _write(self, text: str) -> None:
        self.generation += 1
        data = self.root / f"..2026_11_24_00_00_{self.generation:02d}"
        data.mkdir()
        (data / CONF_NAME).write_text(text, encoding="utf-8")
        link = self.root / "..data_tmp"
        link.symlink_to(data.name)
        os.replace(link, self.root / "..data")

    def update(self, text: str) -> None:
        old = (self.root / "..data").resolve()
        self._write(text)
        (old / CONF_NAME).unlink()
        old.rmdir()


def backend(volume: ConfigMapVolume, *flags: str) -> Built[EngineBackend]:
    """The demo cluster with its configuration from ``volume``; the watcher's thread polls
    only once an hour, so each test drives ``check`` itself."""
    args = ["serve", "--demo", "--conf", volume.path, "--conf-reload-interval", "3600", *flags]
    return backend_from_args(build_parser().parse_args(args))


def watcher(engine: Built[EngineBackend]) -> ConfigurationWatcher:
    (found,) = [part for part in engine.parts if isinstance(part, ConfigurationWatcher)]
    return found


def deserved_cpu(engine: Built[EngineBackend]) -> dict[str, float]:
    return {q.name: float(q.deserved.get("cpu", 0.0)) for q in engine.backend.queues()}


def reloads(engine: Built[EngineBackend], result: str) -> float:
    assert engine.registry is not None
    value = engine.registry.get_sample_value(
        "queue_extender_config_reload_total", {"result": result}
    )
    return value or 0.0


def test_a_swapped_in_configuration_takes_effect_at_the_next_session(tmp_path: Path) -> None:
    volume = ConfigMapVolume(tmp_path, DEFAULT_CONF)
    engine = backend(volume)
    proportion = deserved_cpu(engine)
    volume.update(CAPACITY_CONF)
    assert watcher(engine).check() == "ok"
    session = engine.backend.accounting.session()
    assert "capacity" in session.plugins and "proportion" not in session.plugins
    assert engine.backend.conf.tiers == session.conf.tiers
    assert deserved_cpu(engine) != proportion
    assert reloads(engine, "ok") == 1 and reloads(engine, "error") == 0
    assert engine.warnings() == []


def test_a_swap_between_resolving_and_reading_is_read_from_the_new_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The kubelet swaps ..data and deletes the old directory right after the watcher has
    # resolved the path to it: the file is read again where the path now leads.
    volume = ConfigMapVolume(tmp_path, DEFAULT_CONF)
    engine = backend(volume)
    found = watcher(engine)
    volume.update(CAPACITY_CONF)
    read = ConfigurationWatcher._read
    swapped: list[str] = []

    def swap_first(stamp: tuple[str, int, int, int]) -> bytes:
        if not swapped:
            swapped.append(stamp[0])
            volume.update(NO_BINPACK_CONF)  # the directory just resolved is gone
        return read(stamp)

    monkeypatch.setattr(found, "_read", swap_first)
    assert found.check() == "ok"
    assert reloads(engine, "ok") == 1 and reloads(engine, "error") == 0
    assert "binpack" not in {p.name for t in engine.backend.conf.tiers for p in t.plugins}
    assert not Path(swapped[0]).exists()


def test_an_unchanged_file_is_not_reloaded(tmp_path: Path) -> None:
    volume = ConfigMapVolume(tmp_path, DEFAULT_CONF)
    engine = backend(volume)
    session = engine.backend.accounting.session()
    assert watcher(engine).check() is None
    volume.update(DEFAULT_CONF)  # a new directory, the same content
    assert watcher(engine).check() is None
    assert engine.backend.accounting.session() is session
    assert reloads(engine, "ok") == 0 and reloads(engine, "error") == 0


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (BROKEN_CONF, "malformed YAML"),
        (UNKNOWN_ACTION_CONF, "unknown action 'reclaimm'"),
        (USAGE_NO_HALF_LIFE_CONF, "(usagehistory): usage.halfLife is missing"),
        (USAGE_ZERO_HALF_LIFE_CONF, "(usagehistory): usage.halfLife is 0"),
    ],
)
def test_a_file_that_does_not_load_keeps_the_old_configuration_and_says_so(
    tmp_path: Path, text: str, error: str, caplog: pytest.LogCaptureFixture
) -> None:
    volume = ConfigMapVolume(tmp_path, DEFAULT_CONF)
    engine = backend(volume)
    before, deserved = engine.backend.conf, deserved_cpu(engine)
    volume.update(text)
    assert watcher(engine).check() == "error"
    assert engine.backend.conf is before and deserved_cpu(engine) == deserved
    assert "proportion" in engine.backend.accounting.session().plugins
    (warning,) = engine.warnings()
    assert "reload failed" in warning and volume.path in warning and error in warning
    assert any(volume.path in r.getMessage() and error in r.getMessage() for r in caplog.records)
    assert reloads(engine, "error") == 1
    assert watcher(engine).check() is None  # reported once, not at every poll
    assert reloads(engine, "error") == 1
    volume.update(CAPACITY_CONF)  # the next good file clears it
    assert watcher(engine).check() == "ok"
    assert engine.warnings() == []
    assert "capacity" in engine.backend.accounting.session().plugins


def test_going_back_to_the_serving_file_clears_the_failure_without_a_reload(
    tmp_path: Path,
) -> None:
    volume = ConfigMapVolume(tmp_path, DEFAULT_CONF)
    engine = backend(volume)
    volume.update(BROKEN_CONF)
    assert watcher(engine).check() == "error"
    volume.update(DEFAULT_CONF)
    assert watcher(engine).check() is None
    assert engine.warnings() == []
    assert reloads(engine, "ok") == 0


def test_a_vanished_file_is_reported_and_its_return_clears_it(tmp_path: Path) -> None:
    volume = ConfigMapVolume(tmp_path, DEFAULT_CONF)
    engine = backend(volume)
    before = engine.backend.conf
    hidden = tmp_path / "hidden"
    os.replace(tmp_path / "..data", hidden)
    assert watcher(engine).check() == "error"
    assert "cannot read" in engine.warnings()[0] and engine.backend.conf is before
    os.replace(hidden, tmp_path / "..data")  # the same file, the same inode, back again
    assert watcher(engine).check() is None
    assert engine.warnings() == [] and engine.backend.conf is before


def test_strict_conf_refuses_a_reloaded_configuration_with_a_warning(tmp_path: Path) -> None:
    volume = ConfigMapVolume(tmp_path, DEFAULT_CONF)
    strict = backend(volume, "--strict-conf")
    lenient = backend(volume)
    volume.update(MISSPELT_PLUGIN_CONF)
    assert watcher(strict).check() == "error"
    assert "--strict-conf" in strict.warnings()[0]
    assert watcher(lenient).check() == "ok"
    (warning,) = lenient.warnings()
    assert "'proportionn'" in warning and "reload failed" not in warning


class RefusingReclaimLoop:
    """A reclaim loop whose checks refuse every configuration (as bad reclaim arguments)."""

    def use_configuration(self, conf: SchedulerConfiguration) -> None:
        raise ValueError("reclaim.minRuntime: 'soon' is not a duration")


def test_a_configuration_the_reclaim_loop_refuses_is_not_swapped_in(tmp_path: Path) -> None:
    volume = ConfigMapVolume(tmp_path, DEFAULT_CONF)
    engine = backend(volume, "--conf-reload-interval", "0").backend
    use = configuration_user(engine, RefusingReclaimLoop())  # type: ignore[arg-type]
    follower = ConfigurationWatcher(volume.path, use, interval=3600)
    before = engine.conf
    volume.update(CAPACITY_CONF)
    assert follower.check() == "error"
    assert engine.conf is before and "proportion" in engine.accounting.session().plugins
    (warning,) = configuration_warnings(engine, follower)()
    assert volume.path in warning and "reclaim.minRuntime" in warning


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (USAGE_NO_HALF_LIFE_CONF, "usage.halfLife is missing"),
        (USAGE_ZERO_HALF_LIFE_CONF, "usage.halfLife is 0"),
    ],
)
def test_usage_history_without_a_half_life_is_refused_at_start(
    tmp_path: Path, text: str, error: str
) -> None:
    volume = ConfigMapVolume(tmp_path, text)
    with pytest.raises(ValueError, match=error):
        backend(volume)


def test_no_watcher_without_a_file_or_with_a_zero_interval(tmp_path: Path) -> None:
    volume = ConfigMapVolume(tmp_path, DEFAULT_CONF)
    assert backend_from_args(build_parser().parse_args(["serve", "--demo"])).parts == ()
    off = ["serve", "--demo", "--conf", volume.path, "--conf-reload-interval", "0"]
    assert backend_from_args(build_parser().parse_args(off)).parts == ()


def test_a_negative_reload_interval_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--demo", "--conf-reload-interval", "-1"])
    assert "--conf-reload-interval: must be 0 seconds or more" in capsys.readouterr().err


def _prioritize(client: httpx.Client) -> dict[str, int]:
    answer = client.post("/prioritize", json=DEMO).json()
    return {row["Host"]: row["Score"] for row in answer}


def _until(predicate: Any, what: str) -> None:
    deadline = time.monotonic() + 20
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_a_running_server_follows_its_rewritten_configuration(tmp_path: Path) -> None:
    """Removing binpack from the tiers changes prioritize's scores on the running server;
    a broken file afterwards changes nothing, and /readyz (still ready) names it."""
    (tmp_path / "running").mkdir()
    volume = ConfigMapVolume(tmp_path / "running", DEFAULT_CONF)
    expected_dir = tmp_path / "expected"
    expected_dir.mkdir()
    expected = _prioritize_offline(ConfigMapVolume(expected_dir, NO_BINPACK_CONF))
    args = build_parser().parse_args(
        ["serve", "--demo", "--conf", volume.path, "--conf-reload-interval", "0.05"]
    )
    server, _, _ = build_servers(args, listening_from_args(args), backend_from_args)
    with serve(server.config.app) as url, httpx.Client(base_url=url, timeout=10) as client:
        before = _prioritize(client)
        assert before != expected  # binpack weighs in at first
        volume.update(NO_BINPACK_CONF)
        _until(lambda: _prioritize(client) == expected, "the new tiers to score")
        volume.update(BROKEN_CONF)
        _until(lambda: "reload failed" in client.get("/readyz").text, "/readyz to name it")
        ready = client.get("/readyz")
        assert ready.status_code == 200 and volume.path in ready.text
        assert _prioritize(client) == expected
        metrics = client.get("/metrics").text
        assert 'queue_extender_config_reload_total{result="ok"} 1.0' in metrics
        assert 'queue_extender_config_reload_total{result="error"} 1.0' in metrics


def _prioritize_offline(volume: ConfigMapVolume) -> dict[str, int]:
    engine = backend(volume)
    return dict(engine.backend.prioritize(DEMO["Pod"], DEMO["NodeNames"]))
