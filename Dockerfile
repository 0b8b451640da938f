# A small static image of the one binary: `cairn serve`, `cairn worker`,
# `cairn migrate`, the clients. Build: docker build -t cairn .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/cairn ./cmd/cairn

# distroless/static: CA certificates and a non-root user, nothing else.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/cairn /usr/local/bin/cairn
USER nonroot:nonroot
ENV CAIRN_LISTEN=0.0.0.0:8420
EXPOSE 8420
ENTRYPOINT ["/usr/local/bin/cairn"]
CMD ["serve"]
