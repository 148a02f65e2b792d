# cowfs in a container: a sandbox whose /workspace is rewindable.
#
#   docker build -t cowfs .
#   docker run --rm -it --device /dev/fuse --cap-add SYS_ADMIN \
#     -v "$PWD":/workspace -v cowfs-state:/var/lib/cowfs \
#     -v /run/cowfs:/run/cowfs cowfs bash
#
# The command (default: bash) runs under 'cowfs run -w /workspace': only
# it and its children see the journaled view. The journal and the
# workspace's state live on the volume at /var/lib/cowfs, so history,
# markers and unrevert survive the container; the control socket is in
# /run/cowfs, which the host can bind-mount to drive turns and
# rollbacks. See README.md, "Sandboxes".
#
# Other images get cowfs with
#   COPY --from=cowfs /usr/local/bin/cowfs /usr/local/bin/cowfs
# (static: it needs no library and no fuse3; root mounts /dev/fuse itself).

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# test/e2e/docker_test.go builds the binary with the flags of this line:
# keep the build on one line of this form.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/cowfs ./cmd/cowfs

FROM debian:bookworm-slim
COPY --from=build /out/cowfs /usr/local/bin/cowfs
ENV COWFS_SOCKET_DIR=/run/cowfs
VOLUME /var/lib/cowfs
WORKDIR /workspace
ENTRYPOINT ["cowfs", "run", "-w", "/workspace", "--"]
CMD ["bash"]
