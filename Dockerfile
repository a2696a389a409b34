# mcp-actor in a container: a release build on the Rust image, run from a slim Debian base.
#
#   docker build -t mcp-actor .
#   docker run --rm -p 127.0.0.1:8080:8080 mcp-actor             # embedded default config
#   docker run --rm -p 127.0.0.1:8080:8080 -v $PWD/my.toml:/etc/mcp-actor.toml mcp-actor \
#       --config /etc/mcp-actor.toml --listen 0.0.0.0:8080 --allow-unauthenticated
#
# The server listens on 0.0.0.0 inside the container, because Docker's port mapping reaches
# it from outside the container's loopback. mcp-actor refuses a non-loopback address without
# authentication, so the image passes --allow-unauthenticated: anyone who reaches the
# published port can run the configured tools. Publish it on loopback only
# (-p 127.0.0.1:8080:8080), or put an authenticating proxy in front. Host and Origin checks
# still apply: clients reaching it as localhost/127.0.0.1 pass; for other names set
# http.allowed_hosts (and http.allowed_origins for browsers) in the configuration.

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY config ./config
COPY benches ./benches
COPY examples ./examples
RUN cargo build --release --locked --bin mcp-actor

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --no-create-home mcp
COPY --from=build /src/target/release/mcp-actor /usr/local/bin/mcp-actor
USER mcp
EXPOSE 8080
ENTRYPOINT ["mcp-actor"]
CMD ["--listen", "0.0.0.0:8080", "--allow-unauthenticated"]
