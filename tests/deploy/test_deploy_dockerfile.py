"""The Dockerfile, linted by reading it (Docker cannot run here): multi-stage, pinned bases,
non-root, no build tools in the final stage, and the entry point the project declares."""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from .deploy_manifests import DOCKERFILE, DOCKERIGNORE, PROBE_SCRIPT, ROOT, containers
from .layouts import CHART_LAYOUTS, layout_documents

GLOB_CHARS = re.compile(r"[*?\[]")
BUILD_TOOLS = re.compile(r"\b(gcc|g\+\+|make|build-essential|clang|cargo|rustc|apt-get|apk)\b")


@dataclass
class Stage:
    image: str
    alias: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)


def _logical_lines(text: str) -> list[str]:
    """Instructions with their continuation lines joined, comments and blanks dropped."""
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        lines.append(pending + stripped)
        pending = ""
    assert not pending, "Dockerfile ends inside a continued instruction"
    return lines


def parse_dockerfile(text: str) -> tuple[dict[str, str], list[Stage]]:
    """(ARG defaults declared before the first FROM, the stages in order)."""
    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in _logical_lines(text):
        keyword, _, rest = line.partition(" ")
        keyword = keyword.upper()
        rest = rest.strip()
        if keyword == "FROM":
            parts = [p for p in rest.split() if not p.startswith("--")]
            image = re.sub(
                r"\$\{(\w+)\}|\$(\w+)",
                lambda m: global_args[m.group(1) or m.group(2)],
                parts[0],
            )
            alias = parts[2] if len(parts) >= 3 and parts[1].upper() == "AS" else None
            stages.append(Stage(image, alias))
        elif not stages:
            assert keyword == "ARG", f"{keyword} before the first FROM"
            name, _, default = rest.partition("=")
            global_args[name] = default
        else:
            stages[-1].instructions.append((keyword, rest))
    return global_args, stages


def _stages() -> list[Stage]:
    return parse_dockerfile(DOCKERFILE.read_text())[1]


def _final() -> Stage:
    return _stages()[-1]


def _exec_form(stage: Stage, keyword: str) -> list[str]:
    values = [rest for kw, rest in stage.instructions if kw == keyword]
    assert values, f"no {keyword} in the final stage"
    parsed = json.loads(values[-1])  # exec form: a JSON array, no shell in between
    assert isinstance(parsed, list)
    return [str(p) for p in parsed]


def test_multi_stage_on_pinned_python_slim() -> None:
    stages = _stages()
    assert len(stages) >= 2
    for stage in stages:
        repository, _, tag = stage.image.partition(":")
        assert repository == "python", stage.image
        assert tag.startswith("3.11-slim"), stage.image
        assert "latest" not in tag


def test_build_stage_makes_a_wheel_of_the_project() -> None:
    build = _stages()[0]
    runs = " ".join(rest for kw, rest in build.instructions if kw == "RUN")
    assert re.search(r"pip wheel .*\s\.(\s|$)", runs)


def test_final_stage_installs_wheels_only_and_no_build_tools() -> None:
    final = _final()
    runs = " ".join(rest for kw, rest in final.instructions if kw == "RUN")
    assert "--no-index" in runs
    assert "venv" in runs
    assert not BUILD_TOOLS.search(runs)
    build_alias = _stages()[0].alias
    assert build_alias and f"from={build_alias}" in runs
    for keyword, rest in final.instructions:
        # Only the probe comes in by COPY; the wheels arrive through a bind mount.
        if keyword in {"COPY", "ADD"}:
            assert "--from" not in rest
        assert keyword != "ADD"


def test_runs_as_the_non_root_uid_of_the_manifests() -> None:
    users = [rest for kw, rest in _final().instructions if kw == "USER"]
    assert users, "the final stage sets no USER: it would run as root"
    uid, _, gid = users[-1].partition(":")
    assert uid.isdigit() and int(uid) == 65532  # numeric: runAsNonRoot can verify it
    assert not gid or (gid.isdigit() and int(gid) != 0)
    for layout in ["deploy", *CHART_LAYOUTS]:
        pod = layout_documents(layout)
        assert containers(pod)["queue-extender"]["securityContext"]["runAsUser"] == int(uid)


def test_entrypoint_is_the_projects_console_script() -> None:
    final = _final()
    entrypoint = _exec_form(final, "ENTRYPOINT")
    assert entrypoint == ["queue-extender"]
    assert _exec_form(final, "CMD") == ["serve"]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert entrypoint[0] in scripts
    # The manifests pass arguments only, so they run the image's ENTRYPOINT.
    for layout in ["deploy", *CHART_LAYOUTS]:
        extender = containers(layout_documents(layout))["queue-extender"]
        assert "command" not in extender
        assert extender["args"][0] == "serve"


def test_probe_script_is_where_the_manifests_run_it() -> None:
    copies = [rest for kw, rest in _final().instructions if kw == "COPY"]
    targets = {}
    for rest in copies:
        parts = [p for p in rest.split() if not p.startswith("--")]
        *sources, target = parts
        for source in sources:
            targets[source] = target
    installed = targets[str(PROBE_SCRIPT.relative_to(ROOT))]
    for layout in ["deploy", *CHART_LAYOUTS]:
        extender = containers(layout_documents(layout))["queue-extender"]
        for probe in ("livenessProbe", "readinessProbe"):
            command = extender[probe]["exec"]["command"]
            assert installed in command
            # The base image's interpreter, isolated: the probe needs nothing from the venv.
            assert command[:3] == ["/usr/local/bin/python3", "-I", "-S"]


def _dockerignore_rules() -> list[tuple[bool, re.Pattern[str]]]:
    """(is_exception, regex) per .dockerignore line, Docker's semantics for what we use."""
    rules = []
    for raw in DOCKERIGNORE.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        exception = line.startswith("!")
        pattern = str(PurePosixPath(line.lstrip("!")))
        regex = ""
        i = 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                regex += "(.*/)?"
                i += 3
            elif pattern.startswith("**", i):
                regex += ".*"
                i += 2
            elif pattern[i] == "*":
                regex += "[^/]*"
                i += 1
            elif pattern[i] == "?":
                regex += "[^/]"
                i += 1
            else:
                regex += re.escape(pattern[i])
                i += 1
        rules.append((exception, re.compile(regex + "$")))
    return rules


def _sent_to_docker(path: str) -> bool:
    """Whether the build context includes ``path``: the last rule matching it or a parent wins."""
    parts = PurePosixPath(path).parts
    candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    included = True
    for exception, regex in _dockerignore_rules():
        if any(regex.match(c) for c in candidates):
            included = exception
    return included


def _context_sources() -> list[str]:
    """The COPY sources taken from the build context (not from another stage)."""
    sources = []
    for stage in _stages():
        for keyword, rest in stage.instructions:
            if keyword == "COPY" and "--from" not in rest:
                *files, _target = [p for p in rest.split() if not p.startswith("--")]
                sources.extend(files)
    return sources


def test_dockerignore_keeps_what_the_build_copies() -> None:
    sources = _context_sources()
    assert {"pyproject.toml", "app", "scheduler_core"} <= set(sources)
    # pip wheel . reads the readme pyproject names: copy it, so the wheel's metadata has it.
    readme = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["readme"]
    assert any(fnmatch.fnmatchcase(readme, source) for source in sources)
    for source in [*sources, readme]:
        if GLOB_CHARS.search(source):
            continue
        assert _sent_to_docker(source), source
        assert _sent_to_docker(f"{source}/__init__.py") or "." in PurePosixPath(source).name


def test_dockerignore_keeps_the_rest_out() -> None:
    for path in [
        ".venv/bin/python",
        ".git/HEAD",
        "tests/deploy/conftest.py",
        "bench/run.py",
        "app/__pycache__/x.pyc",
        "helm/kube-queue-extender/values.yaml",
        "deploy/deployment.yaml",
    ]:
        assert not _sent_to_docker(path), path
    assert _sent_to_docker("app/serving/server.py")
    assert _sent_to_docker("scheduler_core/api/task.py")


def test_copied_sources_exist() -> None:
    """Every literal COPY source is in the tree (Docker fails the build on a missing one; a
    glob such as README.m[d] may match nothing)."""
    for source in _context_sources():
        if not GLOB_CHARS.search(source):
            assert (ROOT / source).exists(), source
