# The oasis-operator image: the `oasis` package in a virtualenv, the shipped SI profile, a non-root user.
# Build from the repository root:  docker build -t oasis-operator:0.1.0 .
# Pin the base images by digest in your own build pipeline (e.g. `python:3.11.10-slim-bookworm@sha256:…`).

FROM python:3.11.10-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY operator/ operator/
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-compile . \
 && /opt/venv/bin/python -m compileall -q /opt/venv/lib

FROM python:3.11.10-slim-bookworm
# A fixed numeric identity, so Kubernetes can verify runAsNonRoot (the chart runs it as 65532 too).
RUN groupadd --system --gid 65532 oasis \
 && useradd --system --uid 65532 --gid 65532 --home-dir /tmp --no-create-home --shell /usr/sbin/nologin oasis
COPY --from=build /opt/venv /opt/venv
COPY profiles/software-infrastructure/ /opt/oasis/profiles/software-infrastructure/
ENV PATH=/opt/venv/bin:$PATH \
    OASIS_PROFILE_DIR=/opt/oasis/profiles/software-infrastructure \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
USER 65532:65532
# gateway (HTTPS), metrics, liveness
EXPOSE 8443 9090 8080
ENTRYPOINT ["oasis", "operator"]
CMD ["--all-namespaces", "--bind=0.0.0.0", "--log-format=json"]
