# Herald in a container: the binary of scripts/package.sh's tarball on a slim Debian, as a
# non-root user. Build from the repository root:
#   docker build -t herald .
#   docker run -p 5000:5000 -v $PWD/config.yaml:/etc/herald/config.yaml herald
FROM swift:6.3-bookworm AS build
WORKDIR /src
COPY . .
RUN apt-get update && apt-get install -y --no-install-recommends libsecp256k1-dev libsodium-dev libsqlite3-dev libssl-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
RUN scripts/package.sh /dist && mkdir /herald && tar -C /herald --strip-components=1 -xzf /dist/herald-*.tar.gz

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates libsecp256k1-1 libsodium23 libsqlite3-0 curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --home /var/lib/herald --create-home --uid 10001 herald
COPY --from=build /herald /opt/herald
COPY --from=build /herald/config.yaml /etc/herald/config.yaml
USER herald
WORKDIR /var/lib/herald
EXPOSE 5000 8000
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s CMD curl -fsS http://127.0.0.1:5000/health || exit 1
ENTRYPOINT ["/opt/herald/bin/herald"]
CMD ["serve", "--config", "/etc/herald/config.yaml"]
