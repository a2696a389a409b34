use super::*;

#[test]
fn embedded_default_config_is_valid() {
    let config = Config::parse(DEFAULT_CONFIG_TOML, "default.toml").unwrap();
    assert_eq!(config.server.path, "/mcp");
    assert_eq!(config.tools.len(), 4);
}

#[test]
fn default_toml_mirrors_the_built_in_defaults() {
    let mut parsed = Config::parse(DEFAULT_CONFIG_TOML, "default.toml").unwrap();
    assert!(parsed.server.instructions.is_some());
    parsed.server.instructions = None;
    parsed.tools.clear();
    parsed.resources.clear();
    parsed.prompts.clear();
    assert_eq!(parsed, Config::default());
}

#[test]
fn unknown_key_names_file_line_and_key() {
    let err =
        Config::parse("[sessions]\nmax_sessions = 5\nmax_sesions = 6\n", "x.toml").unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("x.toml:3:"), "{text}");
    assert!(text.contains("max_sesions"), "{text}");
}

#[test]
fn bad_duration_names_key() {
    let err = Config::parse("[sessions]\nidle_ttl = \"soon\"\n", "x.toml").unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("x.toml:2:"), "{text}");
    assert!(text.contains("sessions.idle_ttl"), "{text}");
}

#[test]
fn hidden_is_refused_outside_a_dir_and_read_timeout_must_be_positive() {
    let file = "[[resources]]\nuri = \"file:///a\"\nname = \"a\"\nfile = \"a\"\nhidden = true\n";
    let text = Config::parse(file, "x.toml").unwrap_err().to_string();
    assert!(
        text.contains("resources[0].hidden: applies only to a `dir`"),
        "{text}"
    );
    let zero = "[file_resources]\nread_timeout = \"0s\"\n";
    let text = Config::parse(zero, "x.toml").unwrap_err().to_string();
    assert!(
        text.contains("file_resources.read_timeout: must be longer than 0s"),
        "{text}"
    );
}

#[test]
fn semantic_error_is_located() {
    let err = Config::parse("[pagination]\n\npage_size = 0\n", "x.toml").unwrap_err();
    assert_eq!(
        err.to_string(),
        "x.toml:3:1: pagination.page_size: must be greater than 0"
    );
    let burst = "[http]\ninitialize_burst_per_ip = 0\n";
    let err = Config::parse(burst, "x.toml").unwrap_err().to_string();
    assert!(
        err.contains("http.initialize_burst_per_ip: must be at least 1"),
        "{err}"
    );
    let off = "[http]\ninitialize_rate_per_ip = 0\ninitialize_burst_per_ip = 0\n";
    assert!(
        Config::parse(off, "x.toml").is_ok(),
        "no burst is needed without a rate"
    );
}

#[test]
fn probe_paths_and_node_ids_that_would_break_routing_are_refused() {
    let text = "[server]\npath = \"/mcp\"\nhealth_path = \"healthz\"\nready_path = \"/mcp\"\n\
                node_id = \"%s\"\n"
        .replace("%s", &"n".repeat(65));
    let err = Config::parse(&text, "t.toml")
        .expect_err("refused")
        .to_string();
    for expected in [
        "server.health_path: must start with '/'",
        "server.ready_path: must differ from server.path",
        "server.node_id: must be at most 64 characters",
    ] {
        assert!(err.contains(expected), "{expected} missing from:\n{err}");
    }
    let same = "[server]\nhealth_path = \"/probe\"\nready_path = \"/probe\"\n";
    let err = Config::parse(same, "t.toml")
        .expect_err("refused")
        .to_string();
    assert!(err.contains("must differ from server.health_path"), "{err}");
    assert_eq!(check_node_id(&"n".repeat(64)), Ok(()));
    assert!(check_node_id("pod 7").is_err());
}

#[test]
fn every_semantic_error_is_reported_in_file_order() {
    let file = "[server]\npath = \"mcp\"\n\n[sessions]\nmax_sessions = 0\n\n\
                [pagination]\npage_size = 0\n\n[[tools]]\nbuiltin = \"nope\"\n";
    let err = Config::parse(file, "x.toml").unwrap_err();
    assert!(matches!(err, ConfigError::Several(_)), "{err}");
    assert_eq!(
        err.to_string(),
        [
            "x.toml:2:1: server.path: must start with '/', for example \"/mcp\"",
            "x.toml:5:1: sessions.max_sessions: must be greater than 0",
            "x.toml:8:1: pagination.page_size: must be greater than 0",
            &format!(
                "x.toml:11:1: tools[0].builtin: unknown builtin \"nope\"; expected one of: {}",
                names::BUILTIN_TOOLS.join(", ")
            ),
        ]
        .join("\n")
    );
}

#[test]
fn the_old_section_name_modern_still_reads_and_both_names_at_once_are_refused() {
    let old = Config::parse("[modern]\nmax_in_flight = 7\n", "x.toml").unwrap();
    let new = Config::parse("[stateless]\nmax_in_flight = 7\n", "x.toml").unwrap();
    assert_eq!(old.stateless.max_in_flight, 7);
    assert_eq!(old, new);
    let err = Config::parse(
        "[modern]\nmax_in_flight = 7\n[stateless]\nmax_in_flight = 8\n",
        "x.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("[modern]") && err.contains("[stateless]"),
        "{err}"
    );
}
