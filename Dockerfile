# kube-queue-extender: `queue-extender serve`, non-root, no build tools, no pip, read-only root.
#
# The build is offline: nothing is fetched from a registry or an index while it runs.
# - The base image is a build ARG (default python:3.11-slim). Any image with CPython 3.11 and
#   its venv module works, e.g. a Debian 12 root file system made by debootstrap and
#   `docker import`ed (what the project's test bed does where no registry is reachable).
# - The Python packages come from build/wheels/ in the build context, which `make wheelhouse`
#   fills on the host: the locked runtime dependencies downloaded by pip and checked against
#   every hash in requirements.lock, and the project's own wheel. Here they are installed with
#   --no-index --require-hashes --no-deps: exactly the locked set, nothing resolved.
# - No `# syntax=` line and no BuildKit-only instruction: such a line makes BuildKit fetch a
#   frontend image from a registry, and the classic builder runs this file unchanged.
#
#   make image                       # wheelhouse, then docker build with the labels below
#   docker build -t kube-queue-extender:0.1.0 --build-arg BASE_IMAGE=<image> .
#
# Pin the usual base by digest for a reproducible build:
#   docker buildx imagetools inspect python:3.11-slim --format '{{json .Manifest.Digest}}'
#   make image BASE_IMAGE=python:3.11-slim@sha256:<digest>

ARG BASE_IMAGE=python:3.11-slim

FROM ${BASE_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_INDEX=1 \
    PYTHONDONTWRITEBYTECODE=1
COPY requirements.lock /src/requirements.lock
COPY build/wheels /wheels
# The venv's pip (from the interpreter's own ensurepip) installs the wheels, byte-compiling
# them so the read-only root file system costs nothing at start; `pip check` fails the build
# if the locked set does not satisfy its own requirements; then pip leaves the venv.
RUN python3 -m venv /opt/venv \
    && /opt/venv/bin/python -m pip install --no-index --find-links=/wheels/locked \
       --require-hashes --no-deps -r /src/requirements.lock \
    && /opt/venv/bin/python -m pip install --no-index --no-deps /wheels/project/*.whl \
    && /opt/venv/bin/python -m pip check \
    && /opt/venv/bin/python -m pip uninstall --yes --quiet pip setuptools \
    && /opt/venv/bin/queue-extender --help >/dev/null
COPY deploy/healthprobe.py /opt/queue-extender/healthprobe.py
RUN chmod 0555 /opt/queue-extender/healthprobe.py

FROM ${BASE_IMAGE}
ARG BASE_IMAGE
ARG VERSION=0.1.0
ARG VCS_REF=""
ARG BUILD_DATE=""
LABEL org.opencontainers.image.title="kube-queue-extender" \
      org.opencontainers.image.description="Volcano-style queue fair share, preempt and reclaim as a kube-scheduler extender" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${VCS_REF}" \
      org.opencontainers.image.created="${BUILD_DATE}" \
      org.opencontainers.image.base.name="${BASE_IMAGE}"
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
# The venv and the probe only: the wheels stay behind in the build stage.
COPY --from=build /opt/venv /opt/venv
COPY --from=build /opt/queue-extender /opt/queue-extender
COPY LICENSE /usr/share/doc/kube-queue-extender/LICENSE
USER 65532:65532
EXPOSE 8888 8889 8890
ENTRYPOINT ["queue-extender"]
CMD ["serve"]
