# mcp-actor in a container: a release build on the Rust image, run from a slim Debian base.
#
#   docker build -t mcp-actor .
#   docker run --rm -p 127.0.0.1:8080:8080 mcp-actor      # config/default.toml
#   docker run --rm -p 127.0.0.1:8080:8080 -e MCP_ACTOR_NODE_ID=node-a \
#       -v $PWD/my.toml:/etc/mcp-actor/config.toml:ro mcp-actor
#
# The configuration is read from /etc/mcp-actor/config.toml (the image ships
# config/default.toml there; mount your own over it). SIGHUP reloads it
# (`docker kill -s HUP <container>`); SIGTERM drains the node (`docker stop -t 45`, so the
# 30 s drain and the 10 s shutdown fit before Docker's SIGKILL). In a fleet, give each
# container its own MCP_ACTOR_NODE_ID (see config/lb/README.md). HEALTHCHECK probes
# /healthz with the binary itself, so the image needs no curl.
#
# The server listens on 0.0.0.0 inside the container, because Docker's port mapping reaches
# it from outside the container's loopback. mcp-actor refuses a non-loopback address without
# authentication, so the image passes --allow-unauthenticated: anyone who reaches the
# published port can run the configured tools. Publish it on loopback only
# (-p 127.0.0.1:8080:8080), or put an authenticating proxy in front. Host and Origin checks
# still apply: clients reaching it as localhost/127.0.0.1 pass; for other names set
# http.allowed_hosts (and http.allowed_origins for browsers) in the configuration.
#
# Layers: the dependencies are built from Cargo.toml and Cargo.lock alone, against stub
# sources, so a change to the project's own code rebuilds only the mcp-actor crate.

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
# Stubs for every target the manifest declares, so cargo can resolve and build the
# dependencies before the real sources arrive.
RUN mkdir -p src benches \
    && echo 'fn main() {}' > src/main.rs \
    && touch src/lib.rs \
    && echo 'fn main() {}' > benches/hot_path.rs \
    && cargo build --release --locked --bin mcp-actor \
    && rm -rf src benches target/release/.fingerprint/mcp-actor-* target/release/deps/mcp_actor-* \
       target/release/deps/libmcp_actor-* target/release/mcp-actor
COPY src ./src
COPY config ./config
COPY benches ./benches
COPY examples ./examples
RUN cargo build --release --locked --bin mcp-actor

FROM debian:bookworm-slim
# ca-certificates pinned to bookworm's version: HTTP tools reach TLS endpoints.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates=20230311+deb12u1 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --no-create-home --uid 10001 mcp
COPY --from=build /src/target/release/mcp-actor /usr/local/bin/mcp-actor
COPY config/default.toml /etc/mcp-actor/config.toml
# Numeric, so runtimes that check for a non-root user (runAsNonRoot) can verify it.
USER 10001
# 8080: the MCP endpoint; 9090: the admin listener (/metrics, /healthz, /readyz).
EXPOSE 8080 9090
HEALTHCHECK --interval=10s --timeout=5s --start-period=5s --retries=3 \
    CMD ["mcp-actor", "probe", "--timeout", "3s", "http://127.0.0.1:8080/healthz"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["mcp-actor"]
CMD ["--config", "/etc/mcp-actor/config.toml", "--listen", "0.0.0.0:8080", "--admin-listen", "0.0.0.0:9090", "--allow-unauthenticated"]
