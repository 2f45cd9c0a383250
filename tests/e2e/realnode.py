"""A real node beside the e2e control plane: containerd, a CNI bridge, kubelet and
kube-controller-manager, and the images its pods run (the project's, built by Docker offline).

Pods here are real processes: started by the kubelet through containerd, probed, terminated
gracefully. Nothing reaches beyond the machine:

- The pod network is a bridge of the test's own (``kqe<N>``) on a /24 no route uses yet. Its
  gateway address ``.1`` is also where kube-apiserver listens (port 443) and the first address
  of the Service range, so the ``kubernetes`` Service's ClusterIP *is* the API server: pods
  reach it with their in-cluster configuration although no kube-proxy runs. The other
  ClusterIPs (``.2``–``.30``) are never routed; the API server's service proxy goes to pod
  addresses (``.64`` and up), which the host reaches over the bridge.
- Images come from no registry: the project's image is built by a private ``dockerd`` from a
  Debian 12 root file system (``debootstrap``, ``docker import``) and the wheelhouse; the pause
  image and the kube-scheduler image are written here as docker archives (busybox-static, the
  shared kube-scheduler binary); all are imported into the node's containerd.

Every daemon runs in its own process group and is stopped by its PID (tests/e2e/controlplane.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.controlplane import ControlPlane, Process, wait_for
from tests.ports import free_port

REPO = Path(__file__).resolve().parents[2]
#: Kept between runs on one machine; `make clean` removes it.
CACHE = Path(os.environ.get("REAL_NODE_CACHE", REPO / "build" / "real-node"))
#: The Debian packages the node needs (binaries checked below); `make real-node-deps` installs
#: them when REQUIRE_REAL_NODE=1.
DEBIAN_PACKAGES = (
    "containerd",
    "runc",
    "containernetworking-plugins",
    "busybox-static",
    "debootstrap",
    "docker.io",
)
NEEDED = {
    "containerd": "/usr/bin/containerd",
    "ctr": "/usr/bin/ctr",
    "runc": "/usr/sbin/runc",
    "bridge CNI plugin": "/usr/lib/cni/bridge",
    "busybox-static": "/usr/bin/busybox",
    "debootstrap": "/usr/sbin/debootstrap",
    "dockerd": "/usr/sbin/dockerd",
    "docker client": "/usr/bin/docker",
    "ip": "/usr/sbin/ip",
}
PAUSE_IMAGE = "docker.io/local/pause:1"
SCHEDULER_IMAGE_REPOSITORY = "local/kube-scheduler"
PROJECT_IMAGE = "kube-queue-extender:0.1.0"
WORKLOAD_IMAGE = "docker.io/local/busybox:1"
BASE_IMAGE = "local/debian-python:bookworm"


class PartsMissing(RuntimeError):
    pass


def missing_parts() -> list[str]:
    """What this machine lacks for a real node (empty: everything is there)."""
    missing = [f"{name} ({path})" for name, path in NEEDED.items() if not os.access(path, os.X_OK)]
    if os.geteuid() != 0:
        missing.append("root (containerd, kubelet and the bridge need it)")
    return missing


def run(argv: list[str], *, timeout: float = 600, **kwargs: Any) -> str:
    """Runs a command, raising with its output when it fails."""
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, check=False, **kwargs
    )
    if done.returncode != 0:
        output = f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}):\n{output}")
    return done.stdout


# --- images ----------------------------------------------------------------------------


def docker_archive(
    path: Path, tags: list[str], files: dict[str, tuple[bytes, int]], config: dict[str, Any]
) -> Path:
    """A one-layer docker-archive tarball (what `docker save` writes, and containerd's
    `ctr images import` reads): ``files`` maps a path in the image to (content, mode)."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        directories: set[str] = set()
        for name in sorted(files):
            parts = name.strip("/").split("/")
            for depth in range(1, len(parts)):
                directory = "/".join(parts[:depth])
                if directory not in directories:
                    directories.add(directory)
                    info = tarfile.TarInfo(directory)
                    info.type = tarfile.DIRTYPE
                    info.mode = 0o755
                    tar.addfile(info)
            content, mode = files[name]
            info = tarfile.TarInfo(name.strip("/"))
            info.size = len(content)
            info.mode = mode
            tar.addfile(info, io.BytesIO(content))
        for directory in ("tmp", "etc"):
            if directory not in directories:
                info = tarfile.TarInfo(directory)
                info.type = tarfile.DIRTYPE
                info.mode = 0o1777 if directory == "tmp" else 0o755
                tar.addfile(info)
    layer_bytes = layer.getvalue()
    diff_id = "sha256:" + hashlib.sha256(layer_bytes).hexdigest()
    image_config = {
        "architecture": "amd64",
        "os": "linux",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    }
    config_bytes = json.dumps(image_config).encode()
    config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
    manifest = [{"Config": config_name, "RepoTags": tags, "Layers": ["layer/layer.tar"]}]
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w") as out:
        for name, data in (
            ("layer/layer.tar", layer_bytes),
            (config_name, config_bytes),
            ("manifest.json", json.dumps(manifest).encode()),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            out.addfile(info, io.BytesIO(data))
    return path


def pause_image(path: Path) -> Path:
    """The sandbox image: busybox-static sleeping forever."""
    busybox = Path(NEEDED["busybox-static"]).read_bytes()
    return docker_archive(
        path,
        [PAUSE_IMAGE],
        {"/bin/busybox": (busybox, 0o755)},
        {"Entrypoint": ["/bin/busybox", "sleep", "2147483647"]},
    )


def scheduler_image(path: Path, kube_bin: Path, tag: str) -> Path:
    """kube-scheduler from the shared binary (statically linked) at the path the chart runs,
    named as the chart and deploy/ name it (registry.k8s.io/kube-scheduler:<tag>, never
    pulled: the node has it) and as local/kube-scheduler:<tag>."""
    binary = (kube_bin / "kube-scheduler").read_bytes()
    return docker_archive(
        path,
        [f"registry.k8s.io/kube-scheduler:{tag}", f"docker.io/{SCHEDULER_IMAGE_REPOSITORY}:{tag}"],
        {"/usr/local/bin/kube-scheduler": (binary, 0o755)},
        {"Entrypoint": ["/usr/local/bin/kube-scheduler"], "User": "65532:65532"},
    )


def workload_image(path: Path) -> Path:
    """The tests' workloads: busybox-static as /bin/sh (a shell that can ignore SIGTERM)."""
    busybox = Path(NEEDED["busybox-static"]).read_bytes()
    return docker_archive(
        path,
        [WORKLOAD_IMAGE],
        {"/bin/busybox": (busybox, 0o755), "/bin/sh": (busybox, 0o755)},
        {"Entrypoint": ["/bin/busybox"]},
    )


class Docker:
    """A private dockerd (its own socket, storage and exec root under the cache): builds the
    project's image without touching any other Docker on the machine."""

    def __init__(self, cache: Path, logs: Path) -> None:
        self.root = cache / "docker"
        # A unix socket path must stay short: keep the exec root (and the socket) under /tmp.
        self.run_dir = Path(f"/tmp/kqe-docker-{os.getpid()}")
        self.socket = self.run_dir / "docker.sock"
        self.logs = logs
        self.process: Process | None = None

    def start(self) -> Docker:
        self.root.mkdir(parents=True, exist_ok=True)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        for driver in ("overlay2", "vfs"):  # overlay2 may be refused by the kernel; vfs never
            argv = [
                NEEDED["dockerd"],
                f"--host=unix://{self.socket}",
                f"--data-root={self.root / driver}",
                f"--exec-root={self.run_dir / 'exec'}",
                f"--pidfile={self.run_dir / 'docker.pid'}",
                "--iptables=false",
                "--ip-masq=false",
                "--bridge=none",
                f"--storage-driver={driver}",
            ]
            self.process = Process(
                f"dockerd-{driver}", argv, self.logs / f"dockerd-{driver}.log"
            ).start()
            try:
                wait_for(self._ready, 60, "dockerd to answer", interval=0.5)
                return self
            except (TimeoutError, RuntimeError):
                self.process.stop()
        raise RuntimeError(
            "dockerd did not start:\n" + (self.process.tail() if self.process else "")
        )

    def _ready(self) -> bool:
        assert self.process is not None
        if not self.process.alive():
            raise RuntimeError("dockerd exited:\n" + self.process.tail())
        return (
            subprocess.run(
                [*self.cli(), "info"], capture_output=True, timeout=10, check=False
            ).returncode
            == 0
        )

    def cli(self) -> list[str]:
        return [NEEDED["docker client"], f"--host=unix://{self.socket}"]

    def has_image(self, name: str) -> bool:
        return (
            subprocess.run(
                [*self.cli(), "image", "inspect", name], capture_output=True, check=False
            ).returncode
            == 0
        )

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop(grace=20)
        shutil.rmtree(self.run_dir, ignore_errors=True)


def debian_base(docker: Docker, cache: Path) -> str:
    """A python:3.11-slim look-alike from Debian 12's packages (Python 3.11 and venv), made
    once by debootstrap and kept as a tarball in the cache."""
    if docker.has_image(BASE_IMAGE):
        return BASE_IMAGE
    tarball = cache / "debian-bookworm-python.tar"
    if not tarball.exists():
        root = cache / "debootstrap-root"
        shutil.rmtree(root, ignore_errors=True)
        run(
            [
                NEEDED["debootstrap"],
                "--variant=minbase",
                "--include=python3,python3-venv,ca-certificates",
                "bookworm",
                str(root),
                os.environ.get("DEBIAN_MIRROR", "http://deb.debian.org/debian"),
            ],
            timeout=1200,
        )
        # What a slim image leaves out: package archives, lists, documentation.
        for junk in (
            "var/cache/apt/archives",
            "var/lib/apt/lists",
            "usr/share/doc",
            "usr/share/man",
        ):
            shutil.rmtree(root / junk, ignore_errors=True)
        partial = tarball.with_suffix(".partial")
        run(["tar", "-C", str(root), "-cf", str(partial), "."])
        partial.rename(tarball)
        shutil.rmtree(root, ignore_errors=True)
    with tarball.open("rb") as stream:
        done = subprocess.run(
            [*docker.cli(), "import", "-", BASE_IMAGE],
            stdin=stream,
            capture_output=True,
            timeout=600,
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"docker import failed: {done.stderr.decode(errors='replace')}")
    return BASE_IMAGE


def build_project_image(docker: Docker, base: str, out: Path) -> Path:
    """`make image` with this Docker and base, then `docker save` for containerd."""
    env = {**os.environ, "DOCKER_BUILDKIT": "0"}
    run(
        [
            "make",
            "-C",
            str(REPO),
            "image",
            f"BASE_IMAGE={base}",
            f"DOCKER={' '.join(docker.cli())}",
            f"IMAGE={PROJECT_IMAGE}",
        ],
        timeout=1200,
        env=env,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    run([*docker.cli(), "save", "-o", str(out), PROJECT_IMAGE])
    # The previous builds' images (untagged now) would pile up in the cache run after run.
    # The build stage is tagged first (all of it from the cache just filled), so its layers
    # stay and an unchanged project rebuilds from the cache next time.
    run(
        [
            *docker.cli(),
            "build",
            "--quiet",
            "--target",
            "build",
            "--build-arg",
            f"BASE_IMAGE={base}",
            "-t",
            "kube-queue-extender:build-stage",
            str(REPO),
        ],
        env=env,
    )
    run([*docker.cli(), "image", "prune", "--force"])
    return out


def project_image(cache: Path, logs: Path) -> Path:
    """The project's image as a docker archive for containerd: `make image` on the Debian 12
    base, by a private dockerd whose storage (and so its build cache) stays in ``cache``."""
    docker = Docker(cache, logs).start()
    try:
        base = debian_base(docker, cache)
        return build_project_image(docker, base, cache / "images" / "kube-queue-extender.tar")
    finally:
        docker.stop()


def prepare(logs: Path) -> int:
    """Fills the cache ahead of the real-node tests (`make test` runs this in the background
    while the unit tier runs): the Debian base, the Docker build cache and the image. The
    tests build the image again, from this cache, so nothing here decides what they see.
    Without the node's parts (no root, a missing package) there is nothing to prepare."""
    missing = missing_parts()
    if missing:
        print("real-node images: nothing prepared, this machine lacks " + ", ".join(missing))
        return 0

    def stop(signum: int, _frame: Any) -> None:
        # Killed because the suite stopped early: leave through the finally clauses, which
        # stop the private dockerd.
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    started = time.monotonic()
    logs.mkdir(parents=True, exist_ok=True)
    image = project_image(CACHE, logs)
    print(f"real-node images: {image} prepared in {time.monotonic() - started:.0f} s")
    return 0


# --- the node --------------------------------------------------------------------------


def free_subnet() -> int:
    """N of a 10.213.N.0/24 that no route or address on this machine uses yet."""
    used = run(["ip", "-4", "route", "show"]) + run(["ip", "-4", "addr", "show"])
    for n in range(10, 250):
        if f"10.213.{n}." not in used:
            return n
    raise RuntimeError("no free 10.213.N.0/24 for the pod network")


@dataclass
class Network:
    """The node's bridge and the addresses derived from it."""

    n: int

    @property
    def bridge(self) -> str:
        return f"kqe{self.n}"

    @property
    def gateway(self) -> str:
        return f"10.213.{self.n}.1"

    @property
    def subnet(self) -> str:
        return f"10.213.{self.n}.0/24"

    @property
    def service_cidr(self) -> str:
        return f"10.213.{self.n}.0/27"

    def create(self) -> None:
        run(["ip", "link", "add", "name", self.bridge, "type", "bridge"])
        run(["ip", "addr", "add", f"{self.gateway}/24", "dev", self.bridge])
        run(["ip", "link", "set", self.bridge, "up"])

    def delete(self) -> None:
        subprocess.run(["ip", "link", "delete", self.bridge], capture_output=True, check=False)

    def conflist(self) -> dict[str, Any]:
        return {
            "cniVersion": "0.4.0",
            "name": "kqe",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": self.bridge,
                    "isGateway": True,
                    "ipMasq": False,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [
                            [
                                {
                                    "subnet": self.subnet,
                                    "rangeStart": f"10.213.{self.n}.64",
                                    "rangeEnd": f"10.213.{self.n}.250",
                                    "gateway": self.gateway,
                                }
                            ]
                        ],
                        "dataDir": "",
                    },
                },
                {"type": "portmap", "capabilities": {"portMappings": True}},
            ],
        }


class RealNode:
    """containerd + kubelet + kube-controller-manager for one node named ``name``."""

    def __init__(
        self, cp: ControlPlane, network: Network, workdir: Path, name: str = "real-node"
    ) -> None:
        self.cp = cp
        self.network = network
        self.dir = workdir
        self.name = name
        self.socket = Path(f"/tmp/kqe-containerd-{os.getpid()}.sock")
        self.containerd: Process | None = None
        self.kubelet: Process | None = None
        self.controller_manager: Process | None = None
        self.pod_logs = self.dir / "pod-logs"

    # --- containerd ---------------------------------------------------------------------

    def start_containerd(self) -> None:
        d = self.dir / "containerd"
        cni_conf = self.dir / "cni" / "net.d"
        cni_conf.mkdir(parents=True, exist_ok=True)
        conflist = self.network.conflist()
        conflist["plugins"][0]["ipam"]["dataDir"] = str(self.dir / "cni" / "ipam")
        (cni_conf / "10-kqe.conflist").write_text(json.dumps(conflist, indent=2))
        d.mkdir(parents=True, exist_ok=True)
        config = f"""version = 2
root = "{d / "root"}"
state = "{d / "state"}"
[grpc]
  address = "{self.socket}"
[ttrpc]
  address = "{self.socket}.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{cni_conf}"
"""
        path = d / "config.toml"
        path.write_text(config)
        self.containerd = self.cp.spawn(
            "containerd", [NEEDED["containerd"], "--config", str(path), "--log-level", "warn"]
        )
        wait_for(
            lambda: (
                subprocess.run(self.ctr("version"), capture_output=True, check=False).returncode
                == 0
            ),
            30,
            "containerd to answer",
            interval=0.25,
        )

    def ctr(self, *args: str) -> list[str]:
        return [NEEDED["ctr"], "--address", str(self.socket), "-n", "k8s.io", *args]

    def import_image(self, tarball: Path) -> None:
        run(self.ctr("images", "import", "--no-unpack=false", str(tarball)), timeout=600)

    def images(self) -> str:
        return run(self.ctr("images", "ls", "-q"))

    # --- kubelet and kube-controller-manager --------------------------------------------

    def start_kubelet(self) -> None:
        d = self.dir / "kubelet"
        d.mkdir(parents=True, exist_ok=True)
        self.pod_logs.mkdir(parents=True, exist_ok=True)
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "cgroupDriver": "cgroupfs",
            "failSwapOn": False,
            "failCgroupV1": False,
            "cgroupsPerQOS": False,
            "enforceNodeAllocatable": [],
            "containerRuntimeEndpoint": f"unix://{self.socket}",
            "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
            "authorization": {"mode": "AlwaysAllow"},
            "address": "127.0.0.1",
            "port": free_port(),
            "healthzPort": free_port(),
            "healthzBindAddress": "127.0.0.1",
            "readOnlyPort": 0,
            "evictionHard": {},
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "podLogsDir": str(self.pod_logs),
            "syncFrequency": "5s",
            "fileCheckFrequency": "5s",
        }
        path = d / "config.yaml"
        path.write_text(yaml.safe_dump(config))
        self.kubelet = self.cp.spawn(
            "kubelet",
            [
                str(self.cp.bin / "kubelet"),
                f"--config={path}",
                f"--kubeconfig={self.cp.kubeconfig}",
                f"--hostname-override={self.name}",
                f"--root-dir={d / 'root'}",
                f"--cert-dir={d / 'pki'}",
                "--v=1",
            ],
        )
        from kubernetes import client

        core = client.CoreV1Api(self.cp.api_client())

        def ready() -> bool:
            assert self.kubelet is not None
            if not self.kubelet.alive():
                raise RuntimeError("kubelet exited:\n" + self.kubelet.tail())
            node = core.read_node(self.name)
            return any(
                c.type == "Ready" and c.status == "True" for c in node.status.conditions or []
            )

        wait_for(ready, 90, f"node {self.name} Ready", interval=0.5)

    def start_controller_manager(self) -> None:
        k = str(self.cp.kubeconfig)
        self.controller_manager = self.cp.spawn(
            "kube-controller-manager",
            [
                str(self.cp.bin / "kube-controller-manager"),
                f"--kubeconfig={k}",
                f"--authentication-kubeconfig={k}",
                f"--authorization-kubeconfig={k}",
                f"--service-account-private-key-file={self.cp.pki.sa_key}",
                f"--root-ca-file={self.cp.pki.ca_cert}",
                "--bind-address=127.0.0.1",
                f"--secure-port={free_port()}",
                "--leader-elect=false",
                "--controllers=*,-nodeipam,-cloud-node-lifecycle",
                f"--cert-dir={self.dir / 'kcm-certs'}",
                "--v=1",
            ],
        )
        from kubernetes import client

        core = client.CoreV1Api(self.cp.api_client())
        wait_for(
            lambda: core.read_namespaced_service_account("default", "default") is not None,
            60,
            "kube-controller-manager to create the default ServiceAccount",
            interval=0.5,
        )

    def start(self) -> RealNode:
        self.start_containerd()
        self.start_controller_manager()
        return self

    def pod_log(self, namespace: str, pod: str, container: str, lines: int = 60) -> str:
        """The last lines the kubelet wrote for a container (every restart's file)."""
        texts = []
        for path in sorted(self.pod_logs.glob(f"{namespace}_{pod}_*/{container}/*.log")):
            texts.extend(path.read_text(errors="replace").splitlines())
        return "\n".join(texts[-lines:])

    def pod_logs_matching(self, namespace: str, prefix: str, lines: int = 40) -> str:
        parts = []
        for directory in sorted(self.pod_logs.glob(f"{namespace}_{prefix}*")):
            for container in sorted(p for p in directory.iterdir() if p.is_dir()):
                pod = directory.name.split("_")[1]
                text = self.pod_log(namespace, pod, container.name, lines)
                parts.append(f"----- {pod}/{container.name} -----\n{text}")
        return "\n".join(parts)

    # --- teardown -----------------------------------------------------------------------

    def stop(self) -> None:
        """Every container gone (the kubelet's own way first, then containerd's), then the
        daemons, the bridge and the mounts under the work directory."""
        if self.kubelet is not None and self.kubelet.alive():
            with contextlib.suppress(Exception):
                self._delete_every_pod()
        for proc in (self.kubelet, self.controller_manager):
            if proc is not None:
                proc.stop()
        if self.containerd is not None and self.containerd.alive():
            self._kill_tasks()
            self.containerd.stop()
        self.network.delete()
        self._unmount_under(self.dir)
        for leftover in (self.socket, Path(f"{self.socket}.ttrpc")):
            leftover.unlink(missing_ok=True)

    def _delete_every_pod(self) -> None:
        from kubernetes import client

        core = client.CoreV1Api(self.cp.api_client())
        for pod in core.list_pod_for_all_namespaces().items:
            with contextlib.suppress(client.ApiException):
                core.delete_namespaced_pod(
                    pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0
                )
        wait_for(
            lambda: not run(self.ctr("tasks", "ls", "-q")).split(),
            30,
            "the kubelet to stop every container",
            interval=0.5,
        )

    def _kill_tasks(self) -> None:
        for _ in range(3):
            tasks = run(self.ctr("tasks", "ls", "-q")).split()
            if not tasks:
                break
            for task in tasks:
                subprocess.run(
                    self.ctr("tasks", "kill", "-s", "SIGKILL", task),
                    capture_output=True,
                    check=False,
                )
            time.sleep(1)
            for task in tasks:
                subprocess.run(
                    self.ctr("tasks", "delete", "-f", task), capture_output=True, check=False
                )

    @staticmethod
    def _unmount_under(directory: Path) -> None:
        prefix = str(directory.resolve())
        mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
        for mount in sorted((m for m in mounts if m.startswith(prefix)), key=len, reverse=True):
            subprocess.run(["umount", "-l", mount], capture_output=True, check=False)


@contextlib.contextmanager
def real_cluster(kube_bin: Path, workdir: Path) -> Iterator[tuple[ControlPlane, RealNode]]:
    """The control plane under RBAC on the bridge's gateway, with a real node attached."""
    network = Network(free_subnet())
    network.create()
    cp = ControlPlane(
        kube_bin,
        workdir / "control-plane",
        authorization="RBAC",
        host=network.gateway,
        api_port=443,
        service_cidr=network.service_cidr,
    )
    node = RealNode(cp, network, workdir / "node")
    try:
        cp.start()
        # The cluster's own default-scheduler (the chart's pods name no scheduler).
        cp.start_scheduler("kube-scheduler", ["default-scheduler"], None)
        node.start()
        yield cp, node
    finally:
        node.stop()
        cp.stop()
        network.delete()


if __name__ == "__main__":
    if sys.argv[1:2] != ["prepare"] or len(sys.argv) != 3:
        sys.exit("usage: python -m tests.e2e.realnode prepare LOG_DIRECTORY")
    sys.exit(prepare(Path(sys.argv[2])))
