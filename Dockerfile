# One image for the draftgen operator and generator: `draftgen operator`, `draftgen generate ...`.
# The SGLang server runs SGLang's own published image (serverDefaults.image in the Helm chart).
#
# Reproducible from the lock: every Python package is fetched (or built) at the exact version in
# constraints.txt (the project's `pip freeze`), in a builder stage; the final stage installs only
# those wheels, offline, and carries no compiler. Pin PYTHON_IMAGE by digest for bit-for-bit
# rebuilds, e.g. --build-arg PYTHON_IMAGE=python:3.11-slim@sha256:<digest>.
#
# Builds with the engine's built-in BuildKit frontend (DOCKER_BUILDKIT=1 or buildx); there is
# deliberately no `# syntax=` line, which would pull a frontend image from Docker Hub.
#
#   make image                      # or: docker build -t ghcr.io/draftgen/draftgen:0.1.0 .
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# Every runtime dependency has a wheel for linux/amd64 and linux/arm64, so the builder needs no
# compiler; a dependency without one fails here, loudly, rather than compiling something unlocked.
# The dependencies first, in their own layer, so a source change does not fetch them again.
COPY pyproject.toml constraints.txt ./
RUN python -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies'], sep='\n')" > requirements.txt \
    && pip wheel --wheel-dir /wheels -c constraints.txt -r requirements.txt
COPY README.md ./
COPY draftgen/ draftgen/
COPY generator/ generator/
COPY operator/ operator/
# draftgen itself, resolved against the wheels above at the versions the lock names.
RUN pip wheel --no-deps --wheel-dir /wheels .

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
