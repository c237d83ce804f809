# Image for the single `bbs` binary (subcommands: api, worker, migrate, cell).
#
# Build:  docker build -t bbs:local .
# Run:    see docker-compose.yml and deploy/README.md

FROM golang:1.26-bookworm AS build
WORKDIR /src

# Dependencies first, so this layer is reused until go.mod/go.sum change.
COPY go.mod go.sum ./
RUN go mod download

COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/bbs ./cmd/bbs

# Runtime: Debian slim rather than distroless, because the cell's process
# executor runs actions through /bin/sh.
FROM debian:bookworm-slim

RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 bbs \
 && useradd --system --uid 10001 --gid bbs --create-home --home-dir /home/bbs \
        --shell /usr/sbin/nologin bbs

COPY --from=build /out/bbs /usr/local/bin/bbs

USER bbs:bbs
WORKDIR /home/bbs

ENTRYPOINT ["/usr/local/bin/bbs"]
