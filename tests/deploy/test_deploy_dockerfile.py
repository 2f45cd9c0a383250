"""The Dockerfile, linted by reading it: multi-stage, an overridable base, an offline build,
non-root, no build tools in the final stage, and the entry point the project declares. The
real-node suite (tests/e2e/test_real_node*.py) builds and runs the image itself."""

from __future__ import annotations

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


def test_no_syntax_line_and_no_buildkit_only_instruction() -> None:
    """A ``# syntax=`` line makes BuildKit fetch a frontend image from a registry (an offline
    builder cannot); ``RUN --mount`` and ``COPY --chmod`` need BuildKit, so the classic builder
    would refuse the file."""
    text = DOCKERFILE.read_text()
    assert not re.search(r"^#\s*syntax\s*=", text, re.MULTILINE | re.IGNORECASE)
    for stage in _stages():
        for keyword, rest in stage.instructions:
            assert not (keyword == "RUN" and "--mount" in rest), rest
            assert not (keyword in {"COPY", "ADD"} and "--chmod" in rest), rest


def test_build_stage_installs_the_wheelhouse_offline_with_every_hash() -> None:
    build = _stages()[0]
    runs = " ".join(rest for kw, rest in build.instructions if kw == "RUN")
    copies = [rest for kw, rest in build.instructions if kw == "COPY"]
    assert any(rest.split()[0] == "build/wheels" for rest in copies)
    assert "--require-hashes" in runs and "-r /src/requirements.lock" in runs
    assert runs.count("--no-index") >= 2  # the locked set and the project's wheel
    assert "pip check" in runs
    # The Makefile fills the wheelhouse the build stage reads, with the project's own wheel.
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"pip download .*--require-hashes", makefile.replace("\\\n", " "))
    assert re.search(r"pip wheel .*--wheel-dir \$\(WHEELS\)/project \.", makefile)


def test_final_stage_takes_only_the_venv_and_the_probe_and_no_build_tools() -> None:
    final = _final()
    assert not [rest for kw, rest in final.instructions if kw == "RUN"]
    build_alias = _stages()[0].alias
    taken = [rest for kw, rest in final.instructions if kw == "COPY" and "--from" in rest]
    assert {rest.split()[1] for rest in taken} == {"/opt/venv", "/opt/queue-extender"}
    assert all(f"--from={build_alias}" in rest for rest in taken)
    for keyword, rest in final.instructions:
        assert keyword != "ADD"
        assert not BUILD_TOOLS.search(rest)


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
    copies = [rest for kw, rest in _stages()[0].instructions if kw == "COPY"]
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
            assert command[:3] == ["/opt/venv/bin/python3", "-I", "-S"]


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
    assert {"requirements.lock", "build/wheels", "deploy/healthprobe.py"} <= set(sources)
    for source in sources:
        assert _sent_to_docker(source), source
    assert _sent_to_docker("build/wheels/locked/x-1.0-py3-none-any.whl")


def test_dockerignore_keeps_the_rest_out() -> None:
    for path in [
        ".venv/bin/python",
        ".git/HEAD",
        "tests/deploy/conftest.py",
        "bench/run.py",
        "app/__pycache__/x.pyc",
        "helm/kube-queue-extender/values.yaml",
        "deploy/deployment.yaml",
        "build/real-node/docker/x",
        "app/serving/server.py",
    ]:
        assert not _sent_to_docker(path), path


def test_copied_sources_exist() -> None:
    """Every literal COPY source is in the tree (Docker fails the build on a missing one),
    the wheelhouse excepted: `make wheelhouse` makes it before each build."""
    for source in _context_sources():
        if not GLOB_CHARS.search(source) and not source.startswith("build/"):
            assert (ROOT / source).exists(), source
