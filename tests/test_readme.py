"""The documentation as a new user reads it: every file it names or links exists, every command,
subcommand and flag it shows is one the project has (or a named other tool's), the transcripts
it shows are what the commands print on the bundled demo cluster, and what the README says
about the demo's gangs is what ``simulate`` decides."""

from __future__ import annotations

import argparse
import json
import re
import shlex
from pathlib import Path

import pytest

from app.cli.kubectl_plugin import build_parser as build_plugin_parser
from app.cli.main import build_parser, main

REPO = Path(__file__).resolve().parent.parent
#: Every page a user or engineer reads: the front door, the deployment notes, the bench guide,
#: every docs/ page and every dated bench run.
DOCS = (
    "README.md",
    "deploy/README.md",
    "deploy/grafana/README.md",
    "bench/README.md",
    *sorted(str(p.relative_to(REPO)) for p in REPO.glob("docs/*.md")),
    *sorted(str(p.relative_to(REPO)) for p in REPO.glob("bench/results/*.md")),
)
DEMO = "deploy/examples/demo-cluster.yaml"
#: A path inside the repository, as prose or a command names it.
REPO_PATH = re.compile(
    r"(?<![\w/.{-])((?:app|bench|deploy|docs|helm|scheduler_core|tests)/[\w./{},*<>-]*)"
)
#: A Markdown link or image: ``[text](target)``.
LINK = re.compile(r"\]\(([^)\s]+)\)")
#: A long option as a command line spells it.
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*[a-z0-9]")
#: `serve --demo` serves the demo cluster: a transcript taken against it is the same command
#: over the cluster file, offline.
DEMO_SERVER = re.compile(r"--server http://127\.0\.0\.1:\d+")
#: Flags the docs name for tools that are not ours, each with its tool: a flag of ours that
#: disappears must not hide behind this list, so it holds only what no parser of ours defines.
FOREIGN_FLAGS = {
    "--create-namespace": "helm install",
    "--set": "helm install",
    "--server-side": "kubectl apply",
    "--no-index": "pip install",
    "--require-hashes": "pip install",
    "--no-deps": "pip install",
    "--generate-hashes": "uv pip compile",
    "--variant": "debootstrap",
    "--chmod": "Dockerfile COPY",
    "--mount": "Dockerfile RUN",
    "--config": "kube-scheduler",
    "--authorization-mode": "kube-apiserver",
    "--watch-cache": "kube-apiserver",
    "--feature-gates": "kube-apiserver",
    "--runtime-config": "kube-apiserver",
    "--strict": "mypy",
}


def named_paths(text: str) -> set[str]:
    """Concrete paths only: a pattern (``{a,b}``, ``*``, ``<name>``) names no one file."""
    found = {m.rstrip(".,") for m in REPO_PATH.findall(text)}
    return {p for p in found if not any(c in p for c in "{}*<>")}


def code_of(text: str) -> str:
    """What a document shows as code (fenced blocks and inline spans): where a command, a
    subcommand or a flag is named, as opposed to prose that happens to say "make it"."""
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.S | re.M)
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M))
    return "\n".join(blocks + spans)


def transcripts(text: str) -> list[tuple[str, str]]:
    """``$ command`` lines of a document's code blocks, each with the output shown under it
    (up to the next command or the end of the block)."""
    out: list[tuple[str, str]] = []
    for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.S | re.M):
        parts = re.split(r"^\$ (.*)\n", block, flags=re.M)
        for command, shown in zip(parts[1::2], parts[2::2], strict=True):
            out.append((command, shown.rstrip("\n")))
    return out


def anchors(text: str) -> set[str]:
    """The anchors a Markdown renderer gives a page's headings (lower case, punctuation
    dropped, spaces as hyphens)."""
    headings = re.findall(r"^#+ (.*)$", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M), re.M)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def broken_links(doc: str, text: str) -> list[str]:
    """Links of ``text`` (the page ``doc``) to a file or heading of the repository that does
    not exist; links to other sites are not followed."""
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (REPO / doc).parent / path if path else REPO / doc
        if not file.exists():
            broken.append(target)
            continue
        headed = bool(anchor) and file.suffix == ".md"
        if headed and anchor not in anchors(file.read_text()):
            broken.append(target)
    return broken


def our_flags() -> set[str]:
    """Every long option a parser of ours defines (the CLI in ``app/``, the benchmarks in
    ``bench/``), read from the ``add_argument`` calls themselves."""
    flags = {"--help"}
    for source in [*REPO.glob("app/**/*.py"), *REPO.glob("bench/**/*.py")]:
        for call in re.findall(r"add_argument\((.*?)\)", source.read_text(), flags=re.S):
            flags |= set(re.findall(r"[\"'](--[\w-]+)[\"']", call.split("help=")[0]))
    return flags


def our_subcommands() -> set[str]:
    """The subcommands ``queue-extender`` and ``kubectl queue`` define, from their parsers."""
    found: set[str] = set()
    for parser in (build_parser(), build_plugin_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                found |= set(action.choices)
    return found


def make_targets() -> set[str]:
    return set(re.findall(r"^([\w.-]+):", (REPO / "Makefile").read_text(), flags=re.M))


def unknown_commands(code: str) -> list[str]:
    """``make T``, ``queue-extender S``, ``kubectl queue S`` and ``python -m M`` a document's
    code names, where T is no Makefile target, S no subcommand or M no module of ours."""
    unknown = [f"make {t}" for t in re.findall(r"\bmake ([a-z][\w-]*)", code)]
    unknown = [c for c in unknown if c.split()[1] not in make_targets()]
    for command in re.findall(r"(?<![\w-])(?:queue-extender|kubectl queue) ([a-z][\w-]*)", code):
        if command not in our_subcommands():
            unknown.append(command)
    for module in re.findall(r"python -m ((?:app|bench)[\w.]*)", code):
        where = REPO / Path(*module.split("."))
        if not (where.with_suffix(".py").is_file() or where.is_dir()):
            unknown.append(f"python -m {module}")
    return unknown


def readme() -> str:
    return (REPO / "README.md").read_text()


def test_the_readme_names_paths() -> None:
    assert named_paths(readme()), "the README names no path: the pattern is wrong"


@pytest.mark.parametrize("doc", DOCS)
def test_every_path_a_document_names_exists(doc: str) -> None:
    names = named_paths((REPO / doc).read_text())
    assert sorted(n for n in names if not (REPO / n).exists()) == []


@pytest.mark.parametrize("doc", DOCS)
def test_every_link_a_document_makes_resolves(doc: str) -> None:
    """Relative to the page, as a reader's browser follows it, anchors included."""
    assert broken_links(doc, (REPO / doc).read_text()) == []


@pytest.mark.parametrize("doc", DOCS)
def test_every_flag_a_document_shows_is_defined(doc: str) -> None:
    shown = set(FLAG.findall(code_of((REPO / doc).read_text())))
    assert sorted(shown - our_flags() - set(FOREIGN_FLAGS)) == []


@pytest.mark.parametrize("doc", DOCS)
def test_every_command_a_document_shows_exists(doc: str) -> None:
    assert unknown_commands(code_of((REPO / doc).read_text())) == []


def test_the_path_check_sees_a_missing_file() -> None:
    names = named_paths("run `whatif -f deploy/examples/no-such.yaml` over [x](deploy/crds/)")
    assert names == {"deploy/examples/no-such.yaml", "deploy/crds/"}
    assert not (REPO / "deploy/examples/no-such.yaml").exists()
    assert named_paths("tests: `tests/plugins/test_<name>.py`") == set()


def test_the_link_check_sees_a_missing_file_and_a_missing_heading() -> None:
    text = "[a](security.md) [b](no-such.md) [c](reclaim.md#no-such-heading) [d](https://x.io/y)"
    assert broken_links("docs/x.md", text) == ["no-such.md", "reclaim.md#no-such-heading"]
    assert broken_links("README.md", "[a](docs/reclaim.md#leadership)") == []


def test_the_flag_and_command_checks_see_what_does_not_exist() -> None:
    code = code_of("run `queue-extender serve --no-such-flag` or `make no-such` and `make run`")
    assert set(FLAG.findall(code)) - our_flags() == {"--no-such-flag"}
    assert "--reclaim" in our_flags() and "--only" in our_flags()
    assert unknown_commands(code) == ["make no-such"]
    assert unknown_commands("queue-extender frobnicate; python -m bench.nope") == [
        "frobnicate",
        "python -m bench.nope",
    ]
    assert code_of("prose that says make it and --not-code") == ""


def test_every_foreign_flag_is_still_named_and_none_is_ours() -> None:
    """The list of other tools' flags holds no flag of ours and nothing no page names."""
    assert set(FOREIGN_FLAGS) & our_flags() == set()
    shown = set().union(*(FLAG.findall(code_of((REPO / d).read_text())) for d in DOCS))
    assert sorted(set(FOREIGN_FLAGS) - shown) == []


def test_the_docs_show_transcripts() -> None:
    commands = [c for doc in DOCS for c, _ in transcripts((REPO / doc).read_text())]
    assert any(c.startswith("queue-extender whatif -f ") for c in commands)
    assert any(c.startswith("queue-extender ") for c, _ in transcripts(readme()))


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        pytest.param(c, s, id=f"{doc}:{c.split(' ', 2)[1]}")
        for doc in DOCS
        for c, s in transcripts((REPO / doc).read_text())
        if c.startswith("queue-extender ")
    ],
)
def test_a_transcript_is_what_the_command_prints(
    command: str, shown: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every file the command names exists, and run offline on the demo cluster it prints
    what the document shows."""
    line = DEMO_SERVER.sub(f"--cluster {DEMO}", command.split("#", 1)[0])
    argv = shlex.split(line)[1:]
    files = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("-f", "--cluster", "--conf")]
    assert files and all((REPO / f).is_file() for f in files), files
    monkeypatch.chdir(REPO)
    assert main(argv) == 0
    printed = capsys.readouterr().out.rstrip("\n")
    assert [l.rstrip() for l in printed.splitlines()] == [l.rstrip() for l in shown.splitlines()]


def test_the_readme_tells_what_simulate_does_with_the_resnet_gang(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's sentence about ``resnet-train`` states how many of its workers the
    session pipelines and that none is ready: ``simulate`` on the demo says the same."""
    claim = re.search(
        r"`resnet-train` started by none of its pods: the session pipelines (\d) of its\s+(\d)\s+"
        r"workers",
        readme(),
    )
    assert claim, "the README no longer says what simulate does with resnet-train"
    pipelined, members = int(claim.group(1)), int(claim.group(2))
    monkeypatch.chdir(REPO)
    assert main(["simulate", "--cluster", DEMO, "-o", "json"]) == 0

    report = json.loads(capsys.readouterr().out)
    (job,) = [j for j in report["jobs"] if j["name"] == "research/resnet-train"]
    assert (job["minAvailable"], job["ready"], job["starving"]) == (members, 0, True)
    ours = [p for p in report["pipelined"] if p["pod"].startswith("research/resnet-train-")]
    assert len(ours) == pipelined
    assert not [p for p in report["allocated"] if p["pod"].startswith("research/resnet-train-")]
