"""`queue-extender scheduler-config`: YAML on stdout, warnings on stderr, exit 2 with one
line for bad input; its flags reach the rendered configuration."""

from __future__ import annotations

import io
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.cli.main import build_parser
from app.cli.scheduler_config import command_line, run_scheduler_config

INEXPRESSIBLE = (
    'actions: "allocate"\ntiers:\n- plugins:\n  - name: nodeorder\n  - name: binpack\n'
    "    arguments: {binpack.cpu: 1, binpack.memory: 0}\n"
)


def run(*argv: str) -> tuple[int, str, str]:
    args = build_parser().parse_args(["scheduler-config", *argv])
    out, err = io.StringIO(), io.StringIO()
    code = run_scheduler_config(args, out, err)
    return code, out.getvalue(), err.getvalue()


def config(*argv: str) -> dict[str, Any]:
    code, out, err = run(*argv)
    assert (code, err) == (0, "")
    document: dict[str, Any] = yaml.safe_load(out)
    return document


def test_defaults_render_the_native_configuration_of_the_default_conf() -> None:
    document = config()
    assert [p["schedulerName"] for p in document["profiles"]] == ["queue-scheduler"]
    (entry,) = document["extenders"]
    assert entry["urlPrefix"] == "http://127.0.0.1:8888/"
    assert "prioritizeVerb" not in entry
    assert document["leaderElection"] == {"leaderElect": True, "resourceName": "queue-scheduler"}


def test_flags_reach_the_configuration() -> None:
    document = config(
        "--extender-url",
        "https://10.0.0.1:9443/x",
        "--scheduler-names",
        "a,b",
        "--scoring",
        "extender",
        "--extender-weight",
        "3",
        "--http-timeout",
        "2s",
        "--ignorable",
        "--tls-ca-file",
        "/tls/ca.crt",
        "--leader-elect-resource-name",
        "lease",
        "--leader-elect-resource-namespace",
        "ns",
        "--leader-elect-lease-duration",
        "30s",
        "--leader-elect-renew-deadline",
        "20s",
        "--leader-elect-retry-period",
        "5s",
        "--percentage-of-nodes-to-score",
        "50",
    )
    assert [p["schedulerName"] for p in document["profiles"]] == ["a", "b"]
    assert document["extenders"] == [
        {
            "urlPrefix": "https://10.0.0.1:9443/x",
            "filterVerb": "filter",
            "prioritizeVerb": "prioritize",
            "weight": 3,
            "preemptVerb": "preempt",
            "nodeCacheCapable": True,
            "httpTimeout": "2s",
            "ignorable": True,
            "enableHTTPS": True,
            "tlsConfig": {"caFile": "/tls/ca.crt"},
        }
    ]
    assert document["leaderElection"] == {
        "leaderElect": True,
        "resourceNamespace": "ns",
        "resourceName": "lease",
        "leaseDuration": "30s",
        "renewDeadline": "20s",
        "retryPeriod": "5s",
    }
    assert document["percentageOfNodesToScore"] == 50


def test_leader_election_off() -> None:
    assert config("--leader-elect=false")["leaderElection"] == {"leaderElect": False}


def test_inexpressible_conf_warns_on_stderr_and_keeps_prioritize(tmp_path: Path) -> None:
    path = tmp_path / "conf.yaml"
    path.write_text(INEXPRESSIBLE)
    code, out, err = run("--conf", str(path))
    assert code == 0
    assert err.startswith("warning: ") and "prioritizeVerb" in err
    assert yaml.safe_load(out)["extenders"][0]["prioritizeVerb"] == "prioritize"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--extender-url", "127.0.0.1:8888"], "extender URL"),
        (["--conf", "/nonexistent/conf.yaml"], "cannot read"),
        (["--leader-elect-lease-duration", "1s"], "longer than"),
        (["--http-timeout", "5"], "httpTimeout"),
        (["--tls-ca-file", "/ca"], "https"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv: list[str], says: str) -> None:
    code, out, err = run(*argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and says in err
    assert err.startswith("queue-extender scheduler-config: ")


def test_a_malformed_conf_is_one_line_and_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "conf.yaml"
    path.write_text("actions: [")
    code, _, err = run("--conf", str(path))
    assert code == 2 and err.count("\n") == 1 and "malformed YAML" in err


@pytest.mark.parametrize(
    "argv",
    [["--scoring", "both"], ["--scheduler-names", "a,,b"], ["--extender-weight", "0"]],
)
def test_bad_flag_values_exit_2_from_argparse(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["scheduler-config", *argv])
    assert exc.value.code == 2


def test_configmap_output_names_the_command_that_regenerates_it() -> None:
    argv = ["--scheduler-names", "x,y", "--output", "configmap", "--namespace", "ns"]
    code, out, err = run(*argv)
    assert (code, err) == (0, "")
    header = [line for line in out.splitlines() if line.startswith("#   ")]
    assert header == ["#   queue-extender scheduler-config " + " ".join(argv)]
    configmap = yaml.safe_load(out)
    assert configmap["kind"] == "ConfigMap"
    assert configmap["metadata"]["namespace"] == "ns"
    held = yaml.safe_load(configmap["data"]["scheduler-config.yaml"])
    assert held == config("--scheduler-names", "x,y")


def test_command_line_round_trips() -> None:
    argv = ["scheduler-config", "--leader-elect=false", "--conf", "a b.yaml", "--ignorable=true"]
    args = build_parser().parse_args(argv)
    again = build_parser().parse_args(shlex.split(command_line(args))[1:])
    assert (again.conf, again.leader_elect, again.ignorable) == ("a b.yaml", False, True)


def test_helm_values_say_which_scoring_the_conf_needs(tmp_path: Path) -> None:
    code, out, _ = run("--output", "helm-values")
    values = yaml.safe_load(out)["scheduler"]
    assert code == 0 and values["scoring"] == "native"
    assert values["nativeScoring"]["plugins"]["score"]["enabled"]
    path = tmp_path / "conf.yaml"
    path.write_text(INEXPRESSIBLE)
    code, out, err = run("--conf", str(path), "--output", "helm-values")
    assert code == 0 and "warning:" in err
    assert yaml.safe_load(out)["scheduler"]["scoring"] == "extender"
