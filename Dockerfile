# One image for the three binaries: /manager (the operator), /oar-engine (the sidecar)
# and /oarctl (the CLI). Static, non-root, nothing else in it.
# Build: make docker-build IMG=registry.example/oar-operator:v0.1.0
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ENV CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH}
RUN go build -trimpath -ldflags "-s -w" -o /out/manager ./cmd/manager && \
    go build -trimpath -ldflags "-s -w" -o /out/oar-engine ./cmd/oar-engine && \
    go build -trimpath -ldflags "-s -w" -o /out/oarctl ./cmd/oarctl

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/manager /out/oar-engine /out/oarctl /
USER 65532:65532
ENTRYPOINT ["/manager"]
