"""A real control plane on loopback: etcd, kube-apiserver, kube-scheduler, and the extender.

Every process runs in its own process group, is stopped by its own PID (TERM, then KILL), and
writes its log to a file under the run's directory so a failing test can show what each
component said. Ports are chosen free on 127.0.0.1 at start; nothing listens elsewhere.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trustme
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.ports import free_port

REPO = Path(__file__).resolve().parents[2]
CRD_DIR = REPO / "deploy" / "crds"
UNPACK_SCRIPT = REPO.parent / "shared" / "kube-bin" / "unpack.sh"
BINARIES = ("etcd", "kube-apiserver", "kube-scheduler")
HOW_TO_GET = (
    "set KUBE_BIN_DIR to a directory holding etcd, kube-apiserver and kube-scheduler v1.36 "
    "(e.g. from `setup-envtest use 1.36` and the Kubernetes release), or check out the "
    f"project's shared/ folder beside the repository so that {UNPACK_SCRIPT} exists"
)
ADMIN_TOKEN = "e2e-admin-token"

#: Kubernetes' Workload API (its own PodGroups, gang scheduling), on for every control plane:
#: it changes nothing for a pod that names no scheduling group. Workload-aware preemption is
#: served by the API server (the PodGroup's priority and disruption mode) but left off in
#: kube-scheduler unless a test turns it on (``start_scheduler(feature_gates=...)``).
WORKLOAD_GATES = "GenericWorkload=true,GangScheduling=true"
APISERVER_WORKLOAD_FLAGS = (
    # TopologyAwareWorkloadScheduling: the API server keeps a PodGroup's
    # schedulingConstraints (an alpha field it drops otherwise); kube-scheduler leaves them
    # alone unless a test turns the gate on there, so the extender's placement is what shows.
    f"--feature-gates={WORKLOAD_GATES},WorkloadAwarePreemption=true,"
    "TopologyAwareWorkloadScheduling=true",
    "--runtime-config=scheduling.k8s.io/v1alpha2=true",
)


class BinariesMissing(RuntimeError):
    pass


def find_binaries() -> Path:
    """The directory of the three binaries: ``KUBE_BIN_DIR``, else the shared archive."""
    env = os.environ.get("KUBE_BIN_DIR")
    if env:
        directory = Path(env)
    elif UNPACK_SCRIPT.exists():
        out = subprocess.run(
            ["bash", str(UNPACK_SCRIPT)], capture_output=True, text=True, check=False
        )
        if out.returncode != 0:
            raise BinariesMissing(f"{UNPACK_SCRIPT} failed: {out.stderr.strip()}")
        directory = Path(out.stdout.strip().splitlines()[-1])
    else:
        raise BinariesMissing("no control-plane binaries: " + HOW_TO_GET)
    missing = [b for b in BINARIES if not os.access(directory / b, os.X_OK)]
    if missing:
        raise BinariesMissing(f"{directory} lacks {', '.join(missing)}: " + HOW_TO_GET)
    return directory


def wait_for(check: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
    """Polls ``check`` until it returns something truthy; raises naming ``what`` otherwise."""
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            value = check()
            if value:
                return value
        except Exception as exc:  # a component that is still starting answers with errors
            last_error = exc
        if time.monotonic() > deadline:
            detail = f" (last error: {last_error})" if last_error else ""
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}{detail}")
        time.sleep(interval)


@dataclass
class Process:
    """One component, started in its own process group and stopped by its PID."""

    name: str
    argv: list[str]
    log_path: Path
    env: dict[str, str] | None = None
    popen: subprocess.Popen[bytes] | None = None

    def start(self) -> Process:
        log = self.log_path.open("ab")
        log.write(f"\n=== {time.strftime('%H:%M:%S')} start: {' '.join(self.argv)}\n".encode())
        log.flush()
        self.popen = subprocess.Popen(
            self.argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=self.env,
            start_new_session=True,
        )
        log.close()
        return self

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signals the process group (the process and anything it spawned)."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, sig)

    def stop(self, grace: float = 10.0) -> None:
        if not self.alive():
            return
        assert self.popen is not None
        self.kill(signal.SIGTERM)
        try:
            self.popen.wait(grace)
        except subprocess.TimeoutExpired:
            self.kill(signal.SIGKILL)
            self.popen.wait(5)

    def answers(
        self,
        url: str,
        *,
        token: str | None = None,
        context: ssl.SSLContext | None = None,
    ) -> bool:
        """Whether ``url`` answers 200; raises with the log's tail if the process has exited,
        so that a wait on a component that died reports why rather than only a timeout."""
        if not self.alive():
            raise RuntimeError(f"{self.name} exited:\n" + self.tail())
        return _get(url, token=token, context=context) == 200

    def tail(self, lines: int = 80) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])


def _get(url: str, *, token: str | None = None, context: ssl.SSLContext | None = None) -> int:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=2, context=context) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


@dataclass
class Pki:
    """A CA, a serving certificate for 127.0.0.1, and the service-account key pair."""

    directory: Path
    ca_cert: Path = field(init=False)
    serving_cert: Path = field(init=False)
    serving_key: Path = field(init=False)
    sa_key: Path = field(init=False)
    sa_pub: Path = field(init=False)

    #: More names for the serving certificate (the real node's API server address, which pods
    #: reach as the `kubernetes` Service's ClusterIP).
    extra_sans: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        d = self.directory
        d.mkdir(parents=True, exist_ok=True)
        ca = trustme.CA()
        cert = ca.issue_cert(
            "127.0.0.1", "localhost", "kubernetes", "kubernetes.default.svc", *self.extra_sans
        )
        self.ca_cert = d / "ca.crt"
        self.serving_cert = d / "apiserver.crt"
        self.serving_key = d / "apiserver.key"
        ca.cert_pem.write_to_path(str(self.ca_cert))
        cert.cert_chain_pems[0].write_to_path(str(self.serving_cert))
        cert.private_key_pem.write_to_path(str(self.serving_key))
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.sa_key = d / "sa.key"
        self.sa_pub = d / "sa.pub"
        self.sa_key.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.TraditionalOpenSSL,
                serialization.NoEncryption(),
            )
        )
        self.sa_pub.write_bytes(
            key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_cert))


class ControlPlane:
    """etcd + kube-apiserver (+ the CRDs), and the kube-schedulers and extenders tests start."""

    def __init__(
        self,
        bin_dir: Path,
        workdir: Path,
        *,
        authorization: str = "AlwaysAllow",
        host: str = "127.0.0.1",
        api_port: int = 0,
        service_cidr: str = "10.0.0.0/24",
    ) -> None:
        """``host``, ``api_port`` and ``service_cidr`` place kube-apiserver where pods of a
        real node reach it (tests/e2e/realnode.py); the defaults keep it on loopback."""
        self.bin = bin_dir
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.logs = self.dir / "logs"
        self.logs.mkdir(exist_ok=True)
        self.authorization = authorization
        self.host = host
        self.service_cidr = service_cidr
        extra = () if host == "127.0.0.1" else (host,)
        self.pki = Pki(self.dir / "pki", extra_sans=extra)
        self.processes: list[Process] = []
        self.etcd: Process | None = None
        self.apiserver: Process | None = None
        self.etcd_port = 0
        self.etcd_peer_ports: tuple[int, int] = (0, 0)
        self.api_port = api_port
        self.kubeconfig = self.dir / "admin.kubeconfig"
        #: Static tokens beside the admin's: token -> (user, groups), for identities that RBAC
        #: tests bind roles to (e.g. a ServiceAccount's name, since a real SA token needs the
        #: token controller this control plane does not run).
        self.static_tokens: dict[str, tuple[str, tuple[str, ...]]] = {}

    # --- processes ----------------------------------------------------------------------

    def spawn(self, name: str, argv: Sequence[str], env: dict[str, str] | None = None) -> Process:
        proc = Process(name, list(argv), self.logs / f"{name}.log", env=env).start()
        self.processes.append(proc)
        return proc

    def start(self) -> ControlPlane:
        self.start_etcd()
        self.start_apiserver()
        self.write_kubeconfig()
        self.install_crds()
        return self

    def start_etcd(self) -> None:
        self.etcd_port = self.etcd_port or free_port()
        # The same ports on a restart: the member's peer URL is stored in its data directory.
        if not self.etcd_peer_ports[0]:
            self.etcd_peer_ports = (free_port(), free_port())
        peer, metrics = self.etcd_peer_ports
        # etcd reads every ETCD_* variable as a flag: give it none.
        env = {k: v for k, v in os.environ.items() if not k.startswith("ETCD_")}
        self.etcd = self.spawn(
            "etcd",
            [
                str(self.bin / "etcd"),
                "--name=e2e",
                f"--data-dir={self.dir / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{self.etcd_port}",
                f"--advertise-client-urls=http://127.0.0.1:{self.etcd_port}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=e2e=http://127.0.0.1:{peer}",
                "--initial-cluster-state=new",
                f"--listen-metrics-urls=http://127.0.0.1:{metrics}",
                "--log-level=warn",
            ],
            env=env,
        )
        etcd, url = self.etcd, f"http://127.0.0.1:{self.etcd_port}/health"
        wait_for(lambda: etcd.answers(url), 30, "etcd to answer /health")

    def etcd_call(self, method: str, body: dict[str, Any]) -> dict[str, Any]:
        """One call to etcd's JSON gateway (``/v3/kv/range``, ``/v3/kv/compaction``, ...)."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.etcd_port}/v3/{method}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            answer: dict[str, Any] = json.loads(response.read())
            return answer

    def compact_etcd(self) -> int:
        """Compacts etcd's history up to its current revision (what kube-apiserver's periodic
        compaction does): a watch from any older resourceVersion now gets 410 Gone."""
        revision = int(self.etcd_call("kv/range", {"key": "Lw=="})["header"]["revision"])
        self.etcd_call("kv/compaction", {"revision": str(revision), "physical": True})
        return revision

    def start_apiserver(self, extra_flags: Sequence[str] = ()) -> None:
        self.api_port = self.api_port or free_port()
        tokens = self.dir / "tokens.csv"
        lines = [f'{ADMIN_TOKEN},admin,admin-uid,"system:masters"']
        for token, (user, groups) in self.static_tokens.items():
            lines.append(f'{token},{user},{user}-uid,"{",".join(groups)}"')
        tokens.write_text("\n".join(lines) + "\n")
        pki = self.pki
        self.apiserver = self.spawn(
            "kube-apiserver",
            [
                str(self.bin / "kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
                f"--bind-address={self.host}",
                f"--advertise-address={self.host}",
                f"--secure-port={self.api_port}",
                "--endpoint-reconciler-type=none",
                f"--tls-cert-file={pki.serving_cert}",
                f"--tls-private-key-file={pki.serving_key}",
                f"--client-ca-file={pki.ca_cert}",
                f"--requestheader-client-ca-file={pki.ca_cert}",
                "--requestheader-allowed-names=front-proxy-client",
                "--requestheader-username-headers=X-Remote-User",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                f"--token-auth-file={tokens}",
                f"--authorization-mode={self.authorization}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={pki.sa_pub}",
                f"--service-account-signing-key-file={pki.sa_key}",
                f"--service-cluster-ip-range={self.service_cidr}",
                f"--cert-dir={self.dir / 'apiserver-certs'}",
                *APISERVER_WORKLOAD_FLAGS,
                *extra_flags,
            ],
        )
        self.wait_apiserver_ready()

    def wait_apiserver_ready(self, timeout: float = 60) -> None:
        context = self.pki.ssl_context()
        url = f"https://{self.host}:{self.api_port}/readyz"

        def ready() -> bool:
            assert self.apiserver is not None
            return self.apiserver.answers(url, token=ADMIN_TOKEN, context=context)

        wait_for(ready, timeout, "kube-apiserver /readyz", interval=0.25)

    def write_kubeconfig(self) -> None:
        self.kubeconfig.write_text(self.kubeconfig_text(ADMIN_TOKEN, "admin"))

    def user_kubeconfig(self, token: str, name: str) -> Path:
        """A kubeconfig file for one of `static_tokens` (the API server must know it)."""
        path = self.dir / f"{name}.kubeconfig"
        path.write_text(self.kubeconfig_text(token, name))
        return path

    def kubeconfig_text(self, token: str, user: str) -> str:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "e2e",
                    "cluster": {
                        "server": f"https://{self.host}:{self.api_port}",
                        "certificate-authority": str(self.pki.ca_cert),
                    },
                }
            ],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": user}}],
            "current-context": "e2e",
        }
        return yaml.safe_dump(config)

    def install_crds(self) -> None:
        from kubernetes import client

        api = client.ApiextensionsV1Api(self.api_client())
        for path in sorted(CRD_DIR.glob("*.yaml")):
            for doc in yaml.safe_load_all(path.read_text()):
                if doc:
                    with contextlib.suppress(client.ApiException):
                        api.create_custom_resource_definition(doc)

        def established() -> bool:
            crds = api.list_custom_resource_definition().items
            names = {
                c.metadata.name
                for c in crds
                if any(
                    cond.type == "Established" and cond.status == "True"
                    for cond in (c.status.conditions or [])
                )
            }
            return {
                "queues.scheduling.volcano.sh",
                "podgroups.scheduling.volcano.sh",
                "hypernodes.topology.volcano.sh",
            } <= names

        wait_for(established, 30, "the Volcano CRDs to be Established")
        custom = client.CustomObjectsApi(self.api_client())
        wait_for(
            lambda: (
                custom.list_cluster_custom_object("scheduling.volcano.sh", "v1beta1", "queues")
                is not None
            ),
            30,
            "discovery to serve scheduling.volcano.sh/v1beta1",
        )

    def delete_crd(self, name: str) -> None:
        """Remove one CRD (``hypernodes.topology.volcano.sh``) and wait until it is gone, for a
        test of a cluster without it; ``install_crds`` puts it back. An extender already
        running keeps what it watched: restart it to see the cluster without the CRD."""
        from kubernetes import client

        api = client.ApiextensionsV1Api(self.api_client())
        with contextlib.suppress(client.ApiException):
            api.delete_custom_resource_definition(name)

        def gone() -> bool:
            return name not in {
                c.metadata.name for c in api.list_custom_resource_definition().items
            }

        wait_for(gone, 30, f"CRD {name} to be deleted")

    def api_client(self) -> Any:
        from kubernetes import client, config

        configuration = client.Configuration()
        config.load_kube_config(
            config_file=str(self.kubeconfig), client_configuration=configuration
        )
        # Test bursts create hundreds of objects: the default pool of 4 serialises them.
        configuration.connection_pool_maxsize = 16
        return client.ApiClient(configuration)

    # --- kube-scheduler -----------------------------------------------------------------

    def start_scheduler(
        self,
        name: str,
        profiles: Sequence[str],
        extender_url: str | None,
        *,
        extender: dict[str, Any] | None = None,
        leader_election: dict[str, Any] | None = None,
        hostname: str | None = None,
        feature_gates: str = WORKLOAD_GATES,
    ) -> Process:
        """kube-scheduler with the given profile names and, if ``extender_url``, our extender.

        ``leader_election`` is its ``leaderElection`` block (default: off). ``hostname`` runs
        it in a UTS namespace of its own with that host name, as in a pod: kube-scheduler's
        holder identity is ``hostname_uuid``, and two replicas on this one host must differ."""
        config: dict[str, Any] = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"kubeconfig": str(self.kubeconfig), "qps": 5000, "burst": 5000},
            "leaderElection": leader_election or {"leaderElect": False},
            "percentageOfNodesToScore": 100,
            "profiles": [{"schedulerName": p} for p in profiles],
        }
        if extender_url is not None:
            config["extenders"] = [
                {
                    "urlPrefix": extender_url,
                    "filterVerb": "filter",
                    "prioritizeVerb": "prioritize",
                    "preemptVerb": "preempt",
                    "weight": 12,
                    "nodeCacheCapable": True,
                    "httpTimeout": "5s",
                    "ignorable": False,
                    **(extender or {}),
                }
            ]
        path = self.dir / f"{name}.yaml"
        path.write_text(yaml.safe_dump(config))
        port = free_port()
        own_host = (
            ["unshare", "--uts", "sh", "-c", f'hostname {hostname} && exec "$@"', "sh"]
            if hostname
            else []
        )
        proc = self.spawn(
            name,
            [
                *own_host,
                str(self.bin / "kube-scheduler"),
                f"--config={path}",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={self.dir / (name + '-certs')}",
                f"--feature-gates={feature_gates}",
                "--v=2",
            ],
        )
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE

        url = f"https://127.0.0.1:{port}/healthz"
        wait_for(lambda: proc.answers(url, context=insecure), 60, f"{name} /healthz", interval=0.25)
        return proc

    # --- the extender -------------------------------------------------------------------

    def start_extender(
        self,
        name: str = "extender",
        args: Sequence[str] = (),
        port: int | None = None,
        kubeconfig: Path | None = None,
    ) -> Extender:
        """``queue-extender serve --kubeconfig ...`` as a user runs it, on a free port."""
        port = port or free_port()
        exe = Path(sys.executable).parent / "queue-extender"
        argv = [
            str(exe) if exe.exists() else shutil.which("queue-extender") or "queue-extender",
            "serve",
            "--kubeconfig",
            str(kubeconfig or self.kubeconfig),
            "--port",
            str(port),
            "-v",
            "4",
            *args,
        ]
        proc = self.spawn(name, argv)
        return Extender(proc, f"http://127.0.0.1:{port}")

    def stop(self) -> None:
        """Stops everything, newest first: schedulers and extenders, then the API server, then
        etcd (the other order can leave kube-apiserver hanging on its storage)."""
        for proc in reversed(self.processes):
            if proc is not self.etcd and proc is not self.apiserver:
                proc.stop()
        if self.apiserver is not None:
            self.apiserver.stop()
        if self.etcd is not None:
            self.etcd.stop()

    def log_tails(self, lines: int = 60) -> str:
        seen: set[str] = set()
        parts = []
        for proc in self.processes:
            if proc.name in seen:
                continue
            seen.add(proc.name)
            parts.append(f"----- {proc.name} ({proc.log_path}) -----\n{proc.tail(lines)}")
        return "\n".join(parts)


@dataclass
class Extender:
    process: Process
    url: str

    def ready(self) -> bool:
        return self.process.answers(self.url + "/readyz")

    def wait_ready(self, timeout: float = 60) -> Extender:
        wait_for(self.ready, timeout, "the extender's /readyz", interval=0.1)
        return self

    def post(self, verb: str, body: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.url}/{verb}", data=data, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            answer: dict[str, Any] = json.loads(response.read())
            return answer

    def status(self, path: str) -> int:
        return _get(self.url + path)

    def metrics(self) -> str:
        with urllib.request.urlopen(self.url + "/metrics", timeout=5) as response:
            return str(response.read().decode())
