//! `[auth.scopes]` over real HTTP: a resource scope is decided on the canonical URI the
//! read resolves, however the client spells it, and every list shows a caller only what its
//! scopes let it use, in handshake-era sessions and on 2026-07-28, page by page.
//!
//! Two static tokens share one server: `reader` holds `mcp:tools` only, `admin` holds every
//! scope. Pages hold two items, so a filtered list spans several pages.

mod common;

use std::collections::BTreeSet;

use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde_json::json;

use common::modern::{LIMIT, Modern};
use common::{BUILTIN_TOOLS_TOML, Client, Session, TempDir, TestServer};

const READER: &str = "reader-token-5c1e9a7b3d2f4e6a";
const ADMIN: &str = "admin-token-8b2d4f6a1c3e5a7b";

/// A protected server, its documents, and a token for each kind of caller.
struct Scoped {
    server: TestServer,
    _dir: TempDir,
}

impl Scoped {
    /// `extra` goes before `[auth]` (an upstream, say); `tool_scopes` into `[auth.scopes]`.
    fn start(extra: &str, tool_scopes: &str) -> Scoped {
        let dir = TempDir::new("scopes");
        dir.write("docs/readme.md", "protected readme");
        dir.write("docs/guide.md", "public guide");
        dir.write("docs/secret/plan.md", "protected plan");
        dir.write("vault/key.txt", "protected key");
        let root = dir.path().display();
        let toml = format!(
            r#"{BUILTIN_TOOLS_TOML}
{extra}
[pagination]
page_size = 2

[[resources]]
uri = "memo://public"
name = "public"
text = "hi"

[[resources]]
uri = "memo://secret/plan"
name = "secret-memo"
text = "protected memo"

[[resources]]
name = "docs"
dir = "{root}/docs"
uri_template = "file:///docs/{{+path}}"

[[resources]]
name = "vault"
dir = "{root}/vault"
uri_template = "file:///vault/{{+path}}"
list = false

[[prompts]]
name = "open"
template = "hello"

[[prompts]]
name = "classified"
template = "the plan"

[auth]
resource = "https://mcp.example.com/mcp"

[auth.scopes]
tools = {{ {tool_scopes} }}
prompts = {{ classified = ["mcp:secret"] }}
resources = {{ "file:///docs/secret/*" = ["mcp:secret"], "file:///docs/readme.md" = ["mcp:secret"], "memo://secret/*" = ["mcp:secret"], "file:///vault/*" = ["mcp:secret"] }}

[[auth.tokens]]
principal = "reader"
token_env = "SCOPES_READER"
scopes = ["mcp:tools"]

[[auth.tokens]]
principal = "admin"
token_env = "SCOPES_ADMIN"
scopes = ["mcp:tools", "mcp:deploy", "mcp:secret"]
"#
        );
        let path = dir.write("config.toml", &toml);
        let env = [("SCOPES_READER", READER), ("SCOPES_ADMIN", ADMIN)];
        let server = TestServer::with_config_file(&path, &env);
        Scoped { server, _dir: dir }
    }

    fn client(&self, token: &str) -> Client {
        let mut headers = HeaderMap::new();
        let value = HeaderValue::from_str(&format!("Bearer {token}")).expect("header value");
        headers.insert(AUTHORIZATION, value);
        let http = reqwest::Client::builder()
            .timeout(LIMIT)
            .default_headers(headers)
            .build()
            .expect("client");
        Client {
            http,
            url: self.server.url.clone(),
        }
    }
}

/// Where a list comes from: a session, or stateless 2026-07-28 requests.
enum Era<'a> {
    Session(&'a Session),
    Modern(&'a Client),
}

/// Every item of `method`'s list, by `field`, page by page. Fails on an empty page that
/// promises more, and on an item seen twice.
async fn walk(era: &Era<'_>, method: &str, key: &str, field: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    for id in 1..50 {
        let result = match era {
            Era::Session(session) => {
                let params = cursor.clone().map_or(json!({}), |c| json!({ "cursor": c }));
                session.call(json!(id), method, params).await
            }
            Era::Modern(client) => {
                let mut request = Modern::request(id, method);
                if let Some(c) = &cursor {
                    request = request.param("cursor", json!(c));
                }
                request.result(client).await
            }
        };
        let page = result[key].as_array().expect("a list").clone();
        cursor = result["nextCursor"].as_str().map(str::to_string);
        assert!(
            !page.is_empty() || cursor.is_none(),
            "{method}: an empty page before the end: {result}"
        );
        names.extend(
            page.iter()
                .map(|item| item[field].as_str().unwrap_or("").to_string()),
        );
        if cursor.is_none() {
            let unique: BTreeSet<&String> = names.iter().collect();
            assert_eq!(
                unique.len(),
                names.len(),
                "{method}: an item twice: {names:?}"
            );
            return names;
        }
    }
    panic!("{method}: no last page after 50");
}

/// What one caller sees of every list, in one era, as "kind:name" entries.
async fn everything_listed(era: &Era<'_>) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for (method, key, field, kind) in [
        ("tools/list", "tools", "name", "tool"),
        ("prompts/list", "prompts", "name", "prompt"),
        ("resources/list", "resources", "uri", "resource"),
        (
            "resources/templates/list",
            "resourceTemplates",
            "uriTemplate",
            "template",
        ),
    ] {
        for name in walk(era, method, key, field).await {
            seen.insert(format!("{kind}:{name}"));
        }
    }
    seen
}

/// The entries only a caller with every scope may see.
const PROTECTED: &[&str] = &[
    "tool:sleep",
    "prompt:classified",
    "resource:file:///docs/readme.md",
    "resource:file:///docs/secret/plan.md",
    "resource:memo://secret/plan",
    "template:file:///vault/{+path}",
];

fn hidden_from(all: &BTreeSet<String>, seen: &BTreeSet<String>) -> Vec<String> {
    all.difference(seen).cloned().collect()
}

#[tokio::test]
async fn encoded_spellings_of_a_protected_resource_are_refused_like_the_plain_one() {
    let scoped = Scoped::start("", r#"sleep = ["mcp:deploy"]"#);
    let reader = scoped.client(READER).connect().await;
    let modern = scoped.client(READER);
    let (mut served, mut not_forbidden) = (Vec::new(), Vec::new());
    for (i, uri) in [
        "file:///docs/secret/plan.md",
        "file:///docs/%73ecret/plan.md",
        "file:///docs/secret%2Fplan.md",
        "file:///docs/readme.md",
        "file:///docs/readm%65.md",
        "FILE:///docs/readme.md",
        "file:///docs/secret/plan%2emd",
        "file:///docs/%53ecret/../secret/plan.md",
        "file:///docs/./readme.md",
        "file:///docs//secret/plan.md",
        "file:///docs/secret/plan.md/",
        "file:///docs/secret/%2e/plan.md",
        "file:///vault/key.txt",
        "file:///vault/%6Bey.txt",
    ]
    .into_iter()
    .enumerate()
    {
        let reply = reader
            .request(json!(i), "resources/read", json!({ "uri": uri }))
            .await;
        let text = reply.response(&json!(i)).and_then(|r| {
            r["result"]["contents"][0]["text"]
                .as_str()
                .map(str::to_string)
        });
        if reply.status == StatusCode::OK && text.is_some() {
            served.push(format!("session {uri} -> {}", reply.status));
        }
        let reply = Modern::request(100 + i, "resources/read")
            .uri(uri)
            .reply(&modern)
            .await;
        let text = reply.response(&json!(100 + i)).and_then(|r| {
            r["result"]["contents"][0]["text"]
                .as_str()
                .map(str::to_string)
        });
        if reply.status == StatusCode::OK && text.is_some() {
            served.push(format!("2026-07-28 {uri} -> {}", reply.status));
        }
        let spelled_otherwise = ["%73ecret", "%2Fplan", "readm%65", "FILE:", "%6Bey"]
            .iter()
            .any(|s| uri.contains(s));
        if spelled_otherwise && reply.status != StatusCode::FORBIDDEN {
            not_forbidden.push(format!("{uri} -> {}", reply.status));
        }
    }
    assert!(
        served.is_empty() && not_forbidden.is_empty(),
        "protected files served to a token without mcp:secret: {served:#?}\n\
         other spellings of a protected file not refused with 403: {not_forbidden:#?}"
    );
    // The scope holder reads them, spelled either way.
    let admin = scoped.client(ADMIN).connect().await;
    for uri in ["file:///docs/%73ecret/plan.md", "file:///docs/readm%65.md"] {
        let result = admin
            .call(json!(1), "resources/read", json!({ "uri": uri }))
            .await;
        assert!(
            result["contents"][0]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("protected")),
            "{uri}: {result}"
        );
    }
}

#[tokio::test]
async fn tool_and_prompt_names_are_matched_exactly() {
    let scoped = Scoped::start("", r#"sleep = ["mcp:deploy"]"#);
    let reader = scoped.client(READER).connect().await;
    for (i, name) in ["sleep", "Sleep", "sleep ", "s%6Ceep"]
        .into_iter()
        .enumerate()
    {
        let reply = reader
            .request(
                json!(i),
                "tools/call",
                json!({ "name": name, "arguments": { "ms": 1 } }),
            )
            .await;
        if name == "sleep" {
            assert_eq!(reply.status, StatusCode::FORBIDDEN, "{name}");
        } else {
            // Another name is another tool, which does not exist: never the protected one.
            let error = reply
                .response(&json!(i))
                .map(|r| r["error"]["code"].clone());
            assert_eq!(error, Some(json!(-32602)), "{name}: {reply:?}");
        }
    }
    for (i, name) in ["classified", "Classified", "classified\u{200b}"]
        .into_iter()
        .enumerate()
    {
        let reply = reader
            .request(json!(10 + i), "prompts/get", json!({ "name": name }))
            .await;
        if name == "classified" {
            assert_eq!(reply.status, StatusCode::FORBIDDEN, "{name}");
        } else {
            let error = reply
                .response(&json!(10 + i))
                .map(|r| r["error"]["code"].clone());
            assert_eq!(error, Some(json!(-32602)), "{name}: {reply:?}");
        }
    }
}

#[tokio::test]
async fn lists_show_a_session_only_what_its_scopes_allow() {
    let scoped = Scoped::start("", r#"sleep = ["mcp:deploy"]"#);
    let admin = scoped.client(ADMIN).connect().await;
    let all = everything_listed(&Era::Session(&admin)).await;
    for entry in PROTECTED {
        assert!(
            all.contains(*entry),
            "the scope holder must see {entry}: {all:?}"
        );
    }
    let reader = scoped.client(READER).connect().await;
    let seen = everything_listed(&Era::Session(&reader)).await;
    assert_eq!(
        hidden_from(&all, &seen),
        PROTECTED
            .iter()
            .map(|s| s.to_string())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>(),
        "what the reader does not see"
    );
}

#[tokio::test]
async fn lists_show_a_2026_07_28_caller_only_what_its_scopes_allow() {
    let scoped = Scoped::start("", r#"sleep = ["mcp:deploy"]"#);
    let all = everything_listed(&Era::Modern(&scoped.client(ADMIN))).await;
    for entry in PROTECTED {
        assert!(
            all.contains(*entry),
            "the scope holder must see {entry}: {all:?}"
        );
    }
    let seen = everything_listed(&Era::Modern(&scoped.client(READER))).await;
    assert_eq!(
        hidden_from(&all, &seen),
        PROTECTED
            .iter()
            .map(|s| s.to_string())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>(),
        "what the reader does not see"
    );
}

#[tokio::test]
async fn an_upstreams_tools_are_listed_only_to_callers_with_their_scopes() {
    let script = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/upstreams/fixture.py")
        .display()
        .to_string();
    let upstream = format!(
        "[[upstreams]]\nname = \"fx\"\ncommand = [\"python3\", \"{script}\", \"scopes-{}\"]\n",
        common::unique()
    );
    let scoped = Scoped::start(
        &upstream,
        r#"sleep = ["mcp:deploy"], "fx__*" = ["mcp:deploy"]"#,
    );
    let tools = |names: Vec<String>| -> BTreeSet<String> { names.into_iter().collect() };
    let admin = scoped.client(ADMIN).connect().await;
    let all = tools(walk(&Era::Session(&admin), "tools/list", "tools", "name").await);
    assert!(all.contains("fx__pid"), "{all:?}");
    let reader = scoped.client(READER).connect().await;
    let seen = tools(walk(&Era::Session(&reader), "tools/list", "tools", "name").await);
    let modern = scoped.client(READER);
    let seen_modern = tools(walk(&Era::Modern(&modern), "tools/list", "tools", "name").await);
    let leaked: Vec<&String> = seen
        .iter()
        .chain(&seen_modern)
        .filter(|n| n.starts_with("fx__") || *n == "sleep")
        .collect();
    assert!(
        leaked.is_empty(),
        "listed to a token without mcp:deploy: {leaked:?}"
    );
    let reply = reader
        .request(
            json!(9),
            "tools/call",
            json!({ "name": "fx__pid", "arguments": {} }),
        )
        .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
}
