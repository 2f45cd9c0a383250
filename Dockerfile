# syntax=docker/dockerfile:1
# kube-queue-extender: `queue-extender serve` on python:3.11-slim, non-root, no build tools.
#
# Build stage: the locked runtime dependencies are downloaded as wheels, each checked against
# its hash in requirements.lock (`make lock` regenerates it from pyproject.toml), and the
# project itself becomes one wheel.
# Final stage: a venv installed from those wheels only (--no-index, --require-hashes,
# --no-deps: exactly the locked set, nothing resolved at build time), without pip in it.
# The wheels reach the final stage through a bind mount, so they leave no layer behind.
#
#   docker build -t kube-queue-extender:0.1.0 \
#     --build-arg VCS_REF=$(git rev-parse HEAD) \
#     --build-arg BUILD_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ) .
#
# The base image is named by tag here: pin it by digest for a reproducible build. Resolve the
# tag's current digest (a multi-arch index) and pass or commit it:
#   docker buildx imagetools inspect python:3.11-slim --format '{{json .Manifest.Digest}}'
#   docker build --build-arg BASE_IMAGE=python:3.11-slim@sha256:<digest> .
# Re-run both to take the base image's security updates.

ARG BASE_IMAGE=python:3.11-slim

FROM ${BASE_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY requirements.lock ./
# Wheels only (no sdist builds: there is no compiler here), every file checked by its hash.
RUN python -m pip download --require-hashes --no-deps --only-binary=:all: \
       --dest /wheels/locked -r requirements.lock
# README.m[d]: the package metadata reads it when present; a glob may match nothing.
COPY pyproject.toml LICENSE README.m[d] ./
COPY app ./app
COPY scheduler_core ./scheduler_core
RUN python -m pip wheel --no-deps --wheel-dir /wheels/project .

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
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HOME=/tmp
# pip byte-compiles while installing, so the read-only root filesystem costs nothing at start.
# `pip check` fails the build if the locked set does not satisfy its own requirements.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    --mount=type=bind,source=requirements.lock,target=/tmp/requirements.lock \
    python -m venv --without-pip /opt/venv \
    && python -m pip --python /opt/venv/bin/python install --no-index --find-links=/wheels/locked \
       --require-hashes --no-deps -r /tmp/requirements.lock \
    && python -m pip --python /opt/venv/bin/python install --no-index --no-deps \
       /wheels/project/*.whl \
    && python -m pip --python /opt/venv/bin/python check \
    && /opt/venv/bin/queue-extender --help >/dev/null
COPY LICENSE /usr/share/doc/kube-queue-extender/LICENSE
# The exec probe of deploy/ and helm/ (stdlib only; see the file).
COPY --chmod=0555 deploy/healthprobe.py /opt/queue-extender/healthprobe.py
USER 65532:65532
EXPOSE 8888 8889
ENTRYPOINT ["queue-extender"]
CMD ["serve"]
