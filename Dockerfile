# syntax=docker/dockerfile:1
# One image for the draftgen operator and generator: `draftgen operator`, `draftgen generate ...`.
# The SGLang server runs SGLang's own published image (serverDefaults.image in the Helm chart).
#
# Reproducible from the lock: every Python package is built or fetched at the exact version in
# constraints.txt (the project's `pip freeze`), in a builder stage; the final stage installs only
# those wheels, offline, and carries no compiler. Pin PYTHON_IMAGE by digest for bit-for-bit
# rebuilds, e.g. --build-arg PYTHON_IMAGE=python:3.11-slim@sha256:<digest>.
#
#   docker build -t draftgen:0.1.0 .
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# Compilers live here only, for any dependency that ships no wheel for this platform.
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml constraints.txt README.md ./
COPY draftgen/ draftgen/
COPY generator/ generator/
COPY operator/ operator/
# draftgen and every runtime dependency as wheels, each at the version the lock names.
RUN pip wheel --wheel-dir /wheels -c constraints.txt .

FROM ${PYTHON_IMAGE}
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HOME=/home/draftgen \
    HF_HOME=/tmp/huggingface
RUN groupadd --system --gid 10001 draftgen \
    && useradd --system --uid 10001 --gid 10001 --home-dir /home/draftgen --create-home \
       --shell /usr/sbin/nologin draftgen
# Offline install from the builder's wheels only (--no-index): nothing unlocked can slip in.
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    --mount=type=bind,source=constraints.txt,target=/tmp/constraints.txt \
    pip install --no-index --find-links /wheels -c /tmp/constraints.txt draftgen \
    && draftgen --version
USER 10001:10001
WORKDIR /home/draftgen
# Operator metrics and health (chart defaults) and generator metrics (spec.generator.metricsPort).
EXPOSE 9090 8080 9400
ENTRYPOINT ["draftgen"]
CMD ["--help"]
