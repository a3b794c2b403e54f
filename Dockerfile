# mlbert in a container: CUDA 13.0 devel base (nvcc, cuBLASLt, NCCL), the Debian/Ubuntu packages listed
# in scripts/deps.sh, then a Release build for A100 (sm_80) and H100/H200 (sm_90).
# Build: docker build -t mlbert .   Run: docker run --gpus all mlbert mlbert --help
FROM nvidia/cuda:13.0.0-devel-ubuntu22.04

ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /opt/mlbert
COPY scripts/deps.sh scripts/deps.sh
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-pip \
 && scripts/deps.sh install-build \
 # Ubuntu 22.04 ships CMake 3.22; mlbert needs >= 3.25.
 && python3 -m pip install --no-cache-dir cmake==3.31.6 \
 && rm -rf /var/lib/apt/lists/*

COPY . .
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DMLBERT_CUDA=ON -DBUILD_TESTING=OFF \
 && cmake --build build \
 && install -m 755 build/bin/mlbert build/bin/mlbert-core build/bin/mlbert-shard-reader /usr/local/bin/
ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
CMD ["mlbert", "--help"]
