"""`queue-extender` as a user runs it: the entry point in a child process, its flags and help."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import httpx
import pytest

from app.cli.main import build_parser, main

REPO_ROOT = Path(__file__).resolve().parents[3]


def clean_env() -> dict[str, str]:
    """The environment without a cluster around."""
    return {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}


def run_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """`queue-extender ARGV`, run to its end."""
    return subprocess.run(
        [sys.executable, "-m", "app.cli.main", *argv],
        cwd=REPO_ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def assert_one_line_exit_2(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0]
    assert "serving on" not in result.stdout


def test_a_missing_kubeconfig_is_one_line_and_exit_2() -> None:
    result = run_cli("serve", "--kubeconfig", "/nonexistent/kubeconfig")
    assert_one_line_exit_2(result, "/nonexistent/kubeconfig", "No such file")


def test_an_invalid_kubeconfig_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "kubeconfig"
    bad.write_text("garbage: [\n")
    result = run_cli("serve", "--kubeconfig", str(bad))
    assert_one_line_exit_2(result, str(bad))


def test_an_unreadable_kubeconfig_is_one_line_and_exit_2(tmp_path: Path) -> None:
    # A directory cannot be read as a file, whoever runs the test (even root).
    result = run_cli("serve", "--kubeconfig", str(tmp_path))
    assert_one_line_exit_2(result, str(tmp_path))


def test_in_cluster_outside_a_cluster_is_one_line_and_exit_2() -> None:
    result = run_cli("serve", "--in-cluster")
    assert_one_line_exit_2(result, "in-cluster")


def test_serve_without_a_cluster_source_names_the_four_options() -> None:
    result = run_cli("serve")
    assert_one_line_exit_2(result, "--in-cluster", "--kubeconfig", "--cluster", "--demo")


def test_the_demo_and_a_real_source_are_exclusive() -> None:
    result = run_cli("serve", "--demo", "--in-cluster")
    assert result.returncode == 2 and "not allowed with argument" in result.stderr


def test_make_run_asks_for_the_demo() -> None:
    """`make run` is the README's first command: it must serve the demo on purpose."""
    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\nrun:", 1)[1].split("\n\n", 1)[0]
    command = next(line.split() for line in recipe.splitlines() if "queue-extender" in line)
    assert command[1:3] == ["serve", "--demo"]


def test_version_prints_the_installed_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    expected = metadata.version("kube-queue-extender")
    assert capsys.readouterr().out.strip() == f"queue-extender {expected}"


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += _parsers(sub)
    return found


def test_every_flag_has_help_text() -> None:
    missing = [
        f"{parser.prog} {'/'.join(action.option_strings)}"
        for parser in _parsers(build_parser())
        for action in parser._actions
        if action.option_strings and not (action.help or "").strip()
    ]
    assert missing == []


def test_strict_conf_turns_a_misspelt_plugin_into_exit_2(tmp_path: Path) -> None:
    conf = tmp_path / "volcano.conf"
    conf.write_text("actions: allocate\ntiers:\n- plugins:\n  - name: proportionn\n")
    result = run_cli("serve", "--demo", "--conf", str(conf), "--strict-conf")
    assert_one_line_exit_2(result, "--strict-conf", "'proportionn'", str(conf))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_with_a_metrics_listener_answers_on_both_and_stops_on_sigterm() -> None:
    port, metrics_port = free_port(), free_port()
    argv = ["serve", "--demo", "--port", str(port)]
    argv += ["--metrics-bind-address", f"127.0.0.1:{metrics_port}"]
    child = subprocess.Popen(
        [sys.executable, "-m", "app.cli.main", *argv],
        cwd=REPO_ROOT,
        env=clean_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        up: set[int] = set()
        while up != {port, metrics_port} and time.monotonic() < deadline:
            assert child.poll() is None, child.communicate()[1]
            for p in {port, metrics_port} - up:
                try:
                    if httpx.get(f"http://127.0.0.1:{p}/readyz").status_code == 200:
                        up.add(p)
                except httpx.TransportError:
                    time.sleep(0.05)
        assert up == {port, metrics_port}
        assert (
            httpx.post(f"http://127.0.0.1:{metrics_port}/filter", content=b"{}").status_code == 404
        )
        child.send_signal(signal.SIGTERM)
        _, stderr = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert "Traceback" not in stderr
    assert stderr.count("Finished server process") >= 1
