//! MCP protocol revisions and the typed models the server exchanges with clients.
//!
//! The revisions the server speaks are one type, [`Revision`] (`src/revision.rs`, a leaf
//! the metrics use too). Models follow the schema of `schema/<version>/schema.ts` with
//! `camelCase` fields; open parts of the protocol (`_meta`, tool arguments) stay JSON values.

pub mod answer;
pub mod method;

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use crate::revision::Revision;
pub use answer::Answer;
pub use method::Method;

/// The stateless revision, served per request without sessions (see [`crate::stateless`]).
pub const STATELESS_VERSION: &str = Revision::STATELESS.as_str();

/// A JSON object of the given members, moved in. `json!` would serialize every interpolated
/// `Value` again into a copy (a whole elicitation schema, per call); this does not.
pub fn object<const N: usize>(members: [(&str, Value); N]) -> Value {
    Value::Object(
        members
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value))
            .collect(),
    )
}

/// The `progressToken` of a request's `_meta`, when it is a string or an integer (the only
/// types the spec allows); anything else is ignored rather than echoed back.
pub fn progress_token(meta: Option<&Value>) -> Option<Value> {
    meta.and_then(|m| m.get("progressToken"))
        .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
        .cloned()
}

/// Every revision that opens with the `initialize` handshake, including 2024-11-05, which this
/// server does not speak but must still recognise as handshake-era when routing.
pub fn is_handshake_version(version: &str) -> bool {
    version == "2024-11-05" || Revision::parse_handshake(version).is_some()
}

/// Log severities of `notifications/message`, in RFC 5424 order (least severe first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl LogLevel {
    pub const NAMES: &'static str =
        "debug, info, notice, warning, error, critical, alert, emergency";
}

/// What the client told about itself in `initialize`; immutable for the session's life, so
/// tool tasks may hold it without asking the actor.
#[derive(Debug, Clone, Default)]
pub struct ClientInfo {
    /// The `clientInfo` implementation object (name, version, ...).
    pub implementation: Value,
    /// The client's declared capabilities.
    pub capabilities: Value,
    /// The negotiated protocol revision (for the stateless era, the request's revision).
    pub protocol_version: Option<Revision>,
}

impl ClientInfo {
    fn capability(&self, name: &str) -> Option<&Value> {
        self.capabilities.get(name).filter(|v| v.is_object())
    }

    /// Form-mode elicitation: declared as `elicitation: {}` (2025-06-18) or with `form`.
    pub fn supports_elicitation_form(&self) -> bool {
        match self.capability("elicitation") {
            None => false,
            Some(cap) => cap.get("form").is_some() || cap.get("url").is_none(),
        }
    }

    /// URL-mode elicitation (2025-11-25): declared with `url`.
    pub fn supports_elicitation_url(&self) -> bool {
        self.capability("elicitation")
            .is_some_and(|cap| cap.get("url").is_some())
    }

    pub fn supports_sampling(&self) -> bool {
        self.capability("sampling").is_some()
    }

    pub fn supports_roots(&self) -> bool {
        self.capability("roots").is_some()
    }
}

/// One item of tool-result or prompt-message content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    Text {
        text: String,
    },
    Image {
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    Audio {
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A link to a resource the client may read.
    ResourceLink {
        uri: String,
        name: String,
        #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
    /// A resource embedded in the content.
    Resource {
        resource: ResourceContents,
    },
}

impl Content {
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text { text: text.into() }
    }
}

/// The contents of one resource: text or base64 binary (spec `server/resources.mdx`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    pub uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

impl ResourceContents {
    pub fn text(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        ResourceContents {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            text: Some(text.into()),
            blob: None,
        }
    }

    /// `blob_base64` must already be base64-encoded.
    pub fn blob(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        blob_base64: impl Into<String>,
    ) -> Self {
        ResourceContents {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            text: None,
            blob: Some(blob_base64.into()),
        }
    }
}

/// The result of `tools/call`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    pub content: Vec<Content>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
}

impl CallToolResult {
    /// A successful result with one text item.
    pub fn text(text: impl Into<String>) -> Self {
        CallToolResult {
            content: vec![Content::text(text)],
            ..Default::default()
        }
    }

    /// A successful result with the given content.
    pub fn content(content: Vec<Content>) -> Self {
        CallToolResult {
            content,
            ..Default::default()
        }
    }

    /// A tool execution error: the model sees it, the protocol call succeeds
    /// (spec `server/tools.mdx`, "Error Handling").
    pub fn error(text: impl Into<String>) -> Self {
        CallToolResult {
            content: vec![Content::text(text)],
            is_error: Some(true),
            ..Default::default()
        }
    }
}

/// A declared prompt argument.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptArgument {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub required: bool,
}

/// Who speaks a prompt message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One message of a rendered prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    pub role: Role,
    pub content: Content,
}

/// The result of `prompts/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetPromptResult {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub messages: Vec<PromptMessage>,
}

/// What the user did with an elicitation (spec `client/elicitation.mdx`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    Accept,
    Decline,
    Cancel,
}

/// The client's answer to `elicitation/create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitResult {
    pub action: ElicitAction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Value>>,
}

/// Arguments of a prompt or resource template, by name.
pub type Arguments = HashMap<String, String>;

/// Whether a tool runs as a task of the `io.modelcontextprotocol/tasks` extension
/// (SEP-2663), as its descriptor's `execution.taskSupport` says. The server alone decides:
/// a client that declared the extension gets a task for `optional` and `required` tools; a
/// client that did not gets a plain result for `optional` tools and -32021 for `required`
/// ones. Handshake-era sessions always run tools synchronously.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    #[default]
    Forbidden,
    Optional,
    Required,
}

/// Mints a session id or a task id a load balancer can route on: `<node_id>.<random>`, or
/// the random part alone when no node id is set (the recipes in `config/lb/` read the
/// prefix before the first `.`). One generator for both, so both are equally unguessable:
/// 122 random bits from the OS CSPRNG (a UUIDv4, whose other 6 bits are fixed), as 32 hex
/// digits. An id is a capability (whoever holds it may use what it names, once
/// authenticated as its owner), so no id may be predictable from others a client saw.
pub(crate) fn mint_routable_id(node_id: &str) -> String {
    let random = uuid::Uuid::new_v4().simple().to_string();
    if node_id.is_empty() {
        random
    } else {
        format!("{node_id}.{random}")
    }
}

#[cfg(test)]
#[test]
fn routable_ids_carry_the_node_id_before_the_first_dot() {
    let id = mint_routable_id("node-b");
    let (node, random) = id.split_once('.').expect("a prefixed id");
    assert_eq!(node, "node-b");
    assert_eq!(random.len(), 32);
    assert!(random.chars().all(|c| c.is_ascii_hexdigit()));
    assert_ne!(mint_routable_id("node-b"), id);
    assert_eq!(mint_routable_id("").len(), 32);
}
