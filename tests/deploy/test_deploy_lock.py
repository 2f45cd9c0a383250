"""requirements.lock and the image: the Dockerfile installs exactly the locked set, and the
locked set is exactly what pyproject.toml's runtime dependencies need.

The pip flags are read from where they are used (the Makefile's wheelhouse recipe downloads,
the Dockerfile's build stage installs) and pip resolves the same lock the same way
(`--dry-run --report`): what it would install is compared with the lock, and the report's
metadata is checked the way `pip check` would. The real-node suite builds the image itself.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from .deploy_manifests import DOCKERFILE, ROOT
from .test_deploy_dockerfile import parse_dockerfile

LOCK = ROOT / "requirements.lock"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)", re.MULTILINE)
#: Flags that only say where the files come from (the build stage's download directory).
SOURCE_FLAGS = {"--no-index", "--find-links", "--dest", "--python"}
#: Flags that only say which platform's files to download (the image's, whatever the host).
PLATFORM_FLAGS = {"--python-version", "--implementation", "--abi", "--platform"}


def locked() -> dict[str, str]:
    """Name -> pinned version, as the lock file says."""
    pins = {canonicalize_name(m.group(1)): m.group(2) for m in PIN.finditer(LOCK.read_text())}
    assert pins, "requirements.lock pins nothing"
    return pins


def _runtime_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(r) for r in project["dependencies"]]


def _pip_commands(stage_index: int) -> list[list[str]]:
    """Every `pip download|install|wheel …` of one stage, as argv after the subcommand."""
    stages = parse_dockerfile(DOCKERFILE.read_text())[1]
    commands = []
    for keyword, rest in stages[stage_index].instructions:
        if keyword != "RUN":
            continue
        for part in rest.split("&&"):
            words = shlex.split(part)
            if "pip" not in words:
                continue
            words = words[words.index("pip") + 1 :]
            if words[:1] == ["--python"]:
                words = words[2:]
            commands.append(words)
    return commands


def _options(argv: list[str]) -> dict[str, str | None]:
    options: dict[str, str | None] = {}
    index = 1
    while index < len(argv):
        word = argv[index]
        if word.startswith("-") and "=" in word:
            name, value = word.split("=", 1)
            options[name] = value
        elif word in {"-r", "--dest", "--find-links", "--wheel-dir", *PLATFORM_FLAGS}:
            options[word] = argv[index + 1]
            index += 1
        elif word.startswith("-"):
            options[word] = None
        index += 1
    return options


def _wheelhouse_commands() -> list[list[str]]:
    """The Makefile's `$(BIN)/pip ...` recipe lines that fill the wheelhouse (`make
    wheelhouse`), as argv after `pip`."""
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    commands = []
    for line in text.splitlines():
        words = shlex.split(line.strip()) if line.startswith("\t") else []
        if words[:1] == ["$(BIN)/pip"] and "$(WHEELS)" in line:
            commands.append(words[1:])
    return commands


def _locked_install() -> dict[str, str | None]:
    (install,) = [c for c in _pip_commands(0) if c[0] == "install" and "-r" in c]
    return _options(install)


def _download() -> dict[str, str | None]:
    (download,) = [c for c in _wheelhouse_commands() if c[0] == "download"]
    return _options(download)


def test_the_image_installs_the_lock_with_hashes_and_nothing_else() -> None:
    install = _locked_install()
    assert {"--require-hashes", "--no-deps", "--no-index"} <= set(install)
    download = _download()
    assert {"--require-hashes", "--no-deps"} <= set(download)
    assert download["--only-binary"] == ":all:"
    assert download["-r"] == "requirements.lock"
    # The build stage installs the same file, copied from the build context.
    build_copies = [
        rest.split()
        for kw, rest in parse_dockerfile(DOCKERFILE.read_text())[1][0].instructions
        if kw == "COPY"
    ]
    assert ["requirements.lock", install["-r"]] in build_copies
    # The project itself comes without dependencies: nothing outside the lock sneaks in.
    projects = [c for c in _pip_commands(0) if c[0] == "install" and "-r" not in c]
    assert projects and all("--no-deps" in c for c in projects)
    (wheel,) = [c for c in _wheelhouse_commands() if c[0] == "wheel"]
    assert "--no-deps" in wheel


def _pip_report(tmp: Path) -> dict[str, Any]:
    """What pip would install from the lock with the image's flags (sources aside)."""
    flags = {**_download(), **_locked_install()}
    argv = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet"]
    for name, value in flags.items():
        if name in SOURCE_FLAGS or name in PLATFORM_FLAGS or name == "-r":
            continue
        argv += [name] if value is None else [f"{name}={value}"]
    report = tmp / "report.json"
    argv += ["--report", str(report), "-r", str(LOCK)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    loaded: dict[str, Any] = json.loads(report.read_text())
    return loaded


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _pip_report(tmp_path_factory.mktemp("pip-report"))


def test_pip_installs_exactly_the_locked_set(report: dict[str, Any]) -> None:
    installed = {
        canonicalize_name(item["metadata"]["name"]): item["metadata"]["version"]
        for item in report["install"]
    }
    assert installed == locked()


def test_the_lock_satisfies_every_runtime_dependency() -> None:
    pins = locked()
    for requirement in _runtime_requirements():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} is not locked"
        assert requirement.specifier.contains(pins[name], prereleases=True), (requirement, pins)


def test_the_lock_is_closed_and_has_nothing_stale(report: dict[str, Any]) -> None:
    """`pip check` on the report: every locked package's requirements are locked in a
    matching version; and every locked package is needed by pyproject.toml's dependencies."""
    pins = locked()
    environment: dict[str, str] = {**default_environment(), **report["environment"]}
    needs: dict[str, list[Requirement]] = {}
    for item in report["install"]:
        metadata = item["metadata"]
        needs[canonicalize_name(metadata["name"])] = [
            Requirement(r) for r in metadata.get("requires_dist", [])
        ]

    def applies(requirement: Requirement, extras: set[str]) -> bool:
        if requirement.marker is None:
            return True
        return any(
            requirement.marker.evaluate({**environment, "extra": extra}) for extra in extras | {""}
        )

    reached: set[str] = set()
    pending = list(_runtime_requirements())
    while pending:
        requirement = pending.pop()
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} is needed but not locked"
        assert requirement.specifier.contains(pins[name], prereleases=True), requirement
        if name in reached:
            continue
        reached.add(name)
        pending += [r for r in needs[name] if applies(r, set(requirement.extras))]
    assert sorted(set(pins) - reached) == []


def test_only_the_uvicorn_servers_in_use_are_locked() -> None:
    """`serve` runs uvloop and httptools; uvicorn[standard]'s reloader, websockets and .env
    support are not part of the image."""
    pins = locked()
    assert {"uvicorn", "uvloop", "httptools"} <= set(pins)
    assert not {"watchfiles", "websockets", "python-dotenv"} & set(pins)
    assert all(not r.extras for r in _runtime_requirements() if r.name == "uvicorn")
