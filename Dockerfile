# The oasis-operator image: Debian 12 with Debian's Python 3.11, the `oasis` package in a virtualenv, the
# shipped SI profile, a non-root user.
# Build from the repository root:  docker build -t oasis-operator:0.1.0 .   (or buildah/podman/kaniko)
# hack/build-image.sh builds the same image without a container engine (mmdebstrap + umoci); a test keeps
# the two recipes equal. Pin the base image by digest in your own pipeline (`debian:12.11-slim@sha256:…`).

FROM debian:12.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md ./
COPY operator/ operator/
RUN python3 -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-compile . \
 && /opt/venv/bin/python -m compileall -q /opt/venv/lib

FROM debian:12.11-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
# A fixed numeric identity, so Kubernetes can verify runAsNonRoot (the chart runs it as 65532 too).
RUN groupadd --system --gid 65532 oasis \
 && useradd --system --uid 65532 --gid 65532 --home-dir /tmp --no-create-home --shell /usr/sbin/nologin oasis
COPY --from=build /opt/venv /opt/venv
COPY profiles/software-infrastructure/ /opt/oasis/profiles/software-infrastructure/
ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    OASIS_PROFILE_DIR=/opt/oasis/profiles/software-infrastructure \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
USER 65532:65532
WORKDIR /
# gateway (HTTPS), metrics, liveness
EXPOSE 8443 9090 8080
ENTRYPOINT ["oasis", "operator"]
CMD ["--all-namespaces", "--bind=0.0.0.0", "--log-format=json"]
