//! Which addresses the endpoint and the admin listener may take, and how the admin
//! listener binds.
//!
//! The checks take the configuration alone, not a built [`Server`](super::Server), so the
//! binary runs them before anything slow starts (upstreams can take seconds) and
//! `mcp-actor check` runs exactly the refusals the server would.

use std::io;
use std::net::SocketAddr;

use tokio::net::TcpListener;

use crate::config::Config;

/// Refuses an endpoint address other machines can reach unless `[auth]` is configured or
/// `server.allow_unauthenticated` is set: without authentication, anyone who reaches the
/// port could run the tools.
pub fn check_listen_address(config: &Config, addr: SocketAddr) -> io::Result<()> {
    if addr.ip().is_loopback() || config.auth.is_some() || config.server.allow_unauthenticated {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "refusing to serve on {addr} without authentication: other machines could reach \
             it and run its tools. Listen on 127.0.0.1, configure [auth], or set \
             server.allow_unauthenticated = true when a trusted proxy in front \
             authenticates clients"
        ),
    ))
}

/// Refuses an admin address other machines can reach unless an admin token is set
/// (`admin.token_env` / `token_file`) or `server.allow_unauthenticated` is. `[auth]` does
/// not count: it guards the MCP endpoint, not the admin API that can end its sessions.
pub fn check_admin_address(config: &Config, addr: SocketAddr) -> io::Result<()> {
    let token = config.admin.token_env.is_some() || config.admin.token_file.is_some();
    if addr.ip().is_loopback() || token || config.server.allow_unauthenticated {
        return Ok(());
    }
    let auth = if config.auth.is_some() {
        " ([auth] guards the MCP endpoint only, not the admin endpoints)"
    } else {
        ""
    };
    Err(io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "refusing to serve the admin endpoints on {addr} without authentication: \
             other machines could read the metrics and end sessions{auth}. Set an admin \
             token (admin.token_env or admin.token_file), listen on 127.0.0.1 (admin.listen \
             or --admin-listen), or set server.allow_unauthenticated = true when only a \
             trusted network reaches it"
        ),
    ))
}

/// Binds the admin listener on `addr`. When `addr` is the built-in default that nobody
/// chose (`fall_back`) and it is taken, as by a second mcp-actor on the same machine, a
/// free port of the same address is bound instead, with a warning: the caller prints the
/// address actually bound. An address the user chose fails as it is.
pub async fn bind_admin_listener(addr: SocketAddr, fall_back: bool) -> io::Result<TcpListener> {
    match TcpListener::bind(addr).await {
        Err(e) if fall_back && e.kind() == io::ErrorKind::AddrInUse => {
            let listener = TcpListener::bind(SocketAddr::new(addr.ip(), 0)).await?;
            tracing::warn!(
                default = %addr,
                bound = %listener.local_addr()?,
                "the default admin address is in use (another mcp-actor?); the admin endpoints \
                 listen on a free port instead. Set admin.listen or --admin-listen to choose one"
            );
            Ok(listener)
        }
        bound => bound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_busy_default_admin_address_falls_back_to_a_free_port() {
        let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let busy = held.local_addr().unwrap();
        let listener = bind_admin_listener(busy, true).await.unwrap();
        let bound = listener.local_addr().unwrap();
        assert_eq!(bound.ip(), busy.ip());
        assert_ne!(bound.port(), busy.port());
    }

    #[tokio::test]
    async fn a_busy_chosen_admin_address_fails() {
        let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let busy = held.local_addr().unwrap();
        let err = bind_admin_listener(busy, false).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AddrInUse);
    }

    #[test]
    fn auth_opens_the_endpoint_but_not_the_admin_listener() {
        let mut config = Config::default();
        let public: SocketAddr = "0.0.0.0:9090".parse().unwrap();
        assert!(check_listen_address(&config, public).is_err());
        assert!(check_admin_address(&config, public).is_err());
        let auth = "[auth]\nresource = \"https://mcp.example.com/mcp\"\n\
                    authorization_servers = [\"https://auth.example.com\"]\n\
                    [[auth.tokens]]\nprincipal = \"ci\"\ntoken_env = \"UNSET\"\n";
        config.auth = Config::parse(auth, "auth.toml").unwrap().auth;
        assert!(check_listen_address(&config, public).is_ok());
        assert!(check_admin_address(&config, public).is_err());
        config.server.allow_unauthenticated = true;
        assert!(check_admin_address(&config, public).is_ok());
    }
}
