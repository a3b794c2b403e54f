# mlbert in a container, in two stages: the build stage compiles mlbert, mlbert-core and
# mlbert-shard-reader on a development image; the runtime stage holds those binaries, the system
# files and only the shared libraries the binaries load (listed in the build stage by
# scripts/container/runtime_packages.sh, installed at the versions built against) plus Open MPI's
# mpirun.
#
# GPU image (default): CUDA 13.0.0 on Ubuntu 24.04, NVIDIA's public images pinned by digest, CUDA
# backend for A100 (sm_80) and H100/H200 (sm_90).
#   scripts/container/build_image.sh --flavor cuda --tag mlbert:cuda    (or docker/podman build .)
# CPU image: the same file on a plain Debian base, CUDA off; machines without a registry make the
# base with scripts/container/base_image.sh.
#   scripts/container/build_image.sh --flavor cpu --tag mlbert:cpu
#
# Inside: the binaries in /opt/mlbert/bin (on PATH), the system files in /opt/mlbert/systems, the
# working directory /opt/mlbert (so a bare `--system cpu_demo` finds systems/cpu_demo.json), the
# installed package list in /opt/mlbert/share/runtime-packages.txt. Results, data and checkpoints
# are mounted, e.g. -v "$PWD/results:/results" and `--results /results`.
#
# The digests are the multi-arch index digests of the tags docker.io/nvidia/cuda:
# 13.0.0-devel-ubuntu24.04 and 13.0.0-runtime-ubuntu24.04, as public builds have pulled them (the
# amd64 runtime manifest is sha256:4757e6477d94d56fd8230e15b7d59956750c983a47a42584f44dbe143090da82).
# This project's CI has no registry access: it builds only the CPU image, never these.
ARG BASE_BUILD=docker.io/nvidia/cuda:13.0.0-devel-ubuntu24.04@sha256:1e8ac7a54c184a1af8ef2167f28fa98281892a835c981ebcddb1fad04bdd452d
ARG BASE_RUNTIME=docker.io/nvidia/cuda:13.0.0-runtime-ubuntu24.04@sha256:95318efecfd68ab3d109da5277863257b06137c84f34a87f38de970d5cd035d3

# RUN lines are POSIX sh: podman's default (OCI) image format ignores SHELL.

# ---- build stage
FROM ${BASE_BUILD} AS build
# ON, OFF, or AUTO (CUDA when the base has nvcc).
ARG MLBERT_CUDA=ON
ARG CUDA_ARCHITECTURES=80;90
ARG REVISION=unknown
ARG DEBIAN_FRONTEND=noninteractive
WORKDIR /src
COPY scripts/deps.sh scripts/deps.sh
RUN scripts/deps.sh install-build && rm -rf /var/lib/apt/lists/*
COPY . .
# Only the binaries: no tests, no benchmarks.
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF -DMLBERT_BENCH=OFF \
      -DMLBERT_CUDA="$MLBERT_CUDA" -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCHITECTURES" \
      -DMLBERT_COMMIT="$REVISION" \
 && cmake --build /build --target mlbert mlbert-core mlbert-shard-reader \
 && install -d /opt/mlbert/bin /opt/mlbert/share \
 && install -m 755 /build/bin/mlbert /build/bin/mlbert-core /build/bin/mlbert-shard-reader /opt/mlbert/bin/ \
 && cp -r systems /opt/mlbert/systems \
 && { scripts/container/runtime_packages.sh /opt/mlbert/bin/* \
      && dpkg-query -W -f='${Package}=${Version}\n' openmpi-bin; } > /opt/mlbert/share/runtime-packages.txt

# ---- runtime stage
FROM ${BASE_RUNTIME}
ARG REVISION=unknown
ARG VERSION=unknown
ARG SOURCE=unknown
LABEL org.opencontainers.image.title="mlbert" \
      org.opencontainers.image.description="mlbert: prepare, run and audit MLPerf Training BERT submissions" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="${SOURCE}"
ARG DEBIAN_FRONTEND=noninteractive
COPY --from=build /opt/mlbert /opt/mlbert
# Packages the base already has are kept at its versions (the CUDA runtime image's libraries
# above all); the others are installed at the versions the binaries were built against.
RUN while IFS='=' read -r package version; do \
      dpkg-query -W -f='${Status}' "$package" 2> /dev/null | grep -q 'install ok installed' \
        || echo "$package=$version"; \
    done < /opt/mlbert/share/runtime-packages.txt > /tmp/missing-packages.txt \
 && apt-get update -qq \
 && xargs -r apt-get install -y -qq --no-install-recommends < /tmp/missing-packages.txt \
 && rm -rf /var/lib/apt/lists/* /tmp/missing-packages.txt \
 && /opt/mlbert/bin/mlbert-core --version
ENV PATH=/opt/mlbert/bin:${PATH}
# Open MPI refuses to start as root without these; containers usually run as root.
ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
WORKDIR /opt/mlbert
CMD ["mlbert", "--help"]
