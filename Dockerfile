# syntax=docker/dockerfile:1
# kube-queue-extender: `queue-extender serve` on python:3.11-slim, non-root, no build tools.
#
# Build stage: `pip wheel .` turns the project and every dependency into wheels.
# Final stage: a venv installed from those wheels only (--no-index), without pip in it.
# The wheels reach the final stage through a bind mount, so they leave no layer behind.
#
#   docker build -t kube-queue-extender:0.1.0 .
#
# For reproducible builds pin the base by digest: --build-arg PYTHON_IMAGE=python:3.11-slim@sha256:...

ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# README.m[d]: the package metadata reads it when present; a glob may match nothing.
COPY pyproject.toml README.m[d] ./
COPY app ./app
COPY scheduler_core ./scheduler_core
RUN python -m pip wheel --wheel-dir /wheels .

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="kube-queue-extender" \
      org.opencontainers.image.description="Volcano-style queue fair share, preempt and reclaim as a kube-scheduler extender" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HOME=/tmp
# pip byte-compiles while installing, so the read-only root filesystem costs nothing at start.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    python -m venv --without-pip /opt/venv \
    && python -m pip --python /opt/venv/bin/python install --no-index --find-links=/wheels \
       kube-queue-extender \
    && /opt/venv/bin/queue-extender --help >/dev/null
# The exec probe of deploy/ and helm/ (stdlib only; see the file).
COPY --chmod=0555 deploy/healthprobe.py /opt/queue-extender/healthprobe.py
USER 65532:65532
EXPOSE 8888
ENTRYPOINT ["queue-extender"]
CMD ["serve"]
