# cowfs in a container. The container needs /dev/fuse and the right to
# mount:  docker run --device /dev/fuse --cap-add SYS_ADMIN -v WS:/workspace …
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /cowfs ./cmd/cowfs

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends fuse3 && rm -rf /var/lib/apt/lists/*
COPY --from=build /cowfs /usr/local/bin/cowfs
ENTRYPOINT ["cowfs"]
CMD ["mount", "/workspace"]
