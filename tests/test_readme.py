"""The README as a new user reads it: every file it names exists, the transcripts it shows
are what the commands print on the bundled demo cluster, and what it says about the demo's
gangs is what ``simulate`` decides."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from app.cli.main import main

REPO = Path(__file__).resolve().parent.parent
DOCS = ("README.md", "deploy/README.md", "deploy/grafana/README.md")
DEMO = "deploy/examples/demo-cluster.yaml"
#: A path inside the repository, as prose or a command names it.
REPO_PATH = re.compile(
    r"(?<![\w/.{-])((?:app|bench|deploy|docs|helm|scheduler_core|tests)/[\w./{},*-]*)"
)
#: `serve --demo` serves the demo cluster: a transcript taken against it is the same command
#: over the cluster file, offline.
DEMO_SERVER = re.compile(r"--server http://127\.0\.0\.1:\d+")


def named_paths(text: str) -> set[str]:
    """Concrete paths only: a pattern (``{a,b}``, ``*``) names no one file."""
    found = {m.rstrip(".,") for m in REPO_PATH.findall(text)}
    return {p for p in found if not any(c in p for c in "{}*")}


def transcripts(text: str) -> list[tuple[str, str]]:
    """``$ command`` lines of the README's code blocks, each with the output shown under it
    (up to the next command or the end of the block)."""
    out: list[tuple[str, str]] = []
    for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.S | re.M):
        parts = re.split(r"^\$ (.*)\n", block, flags=re.M)
        for command, shown in zip(parts[1::2], parts[2::2], strict=True):
            out.append((command, shown.rstrip("\n")))
    return out


def readme() -> str:
    return (REPO / "README.md").read_text()


@pytest.mark.parametrize("doc", DOCS)
def test_every_path_a_document_names_exists(doc: str) -> None:
    names = named_paths((REPO / doc).read_text())
    assert names, f"{doc} names no path: the pattern is wrong"
    assert sorted(n for n in names if not (REPO / n).exists()) == []


def test_the_path_check_sees_a_missing_file() -> None:
    names = named_paths("run `whatif -f deploy/examples/no-such.yaml` over [x](deploy/crds/)")
    assert names == {"deploy/examples/no-such.yaml", "deploy/crds/"}
    assert not (REPO / "deploy/examples/no-such.yaml").exists()


def test_the_readme_shows_transcripts() -> None:
    commands = [c for c, _ in transcripts(readme())]
    assert any(c.startswith("queue-extender whatif -f ") for c in commands)


@pytest.mark.parametrize(
    ("command", "shown"),
    [(c, s) for c, s in transcripts(readme()) if c.startswith("queue-extender ")],
    ids=lambda value: str(value).split(" ", 2)[1] if str(value).startswith("queue-") else "",
)
def test_a_readme_transcript_is_what_the_command_prints(
    command: str, shown: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every file the command names exists, and run offline on the demo cluster it prints
    what the README shows."""
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
