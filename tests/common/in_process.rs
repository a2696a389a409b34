//! The library server run inside the test process (`Server::builder()` …
//! `serve_with_shutdown` on 127.0.0.1:0), for what the binary cannot show: a list change
//! pushed through the server handle, a graceful shutdown on demand, tools, prompts and
//! resources with side effects or questions for the user.

use mcp_actor::protocol::ElicitResult;
use mcp_actor::{
    CallToolResult, Config, Content, GetPromptResult, Prompt, PromptMessage, Resource,
    ResourceContents, ResourceError, ResourceTemplate, Role, Server, ServerBuilder,
};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::Client;
use super::modern::LIMIT;

/// The library server on 127.0.0.1:0, stopped through a oneshot. Dropping it stops the
/// server without waiting; [`InProcess::shutdown`] waits for the graceful end.
pub struct InProcess {
    /// The handle, to push events (list changes) to connected clients.
    pub server: Server,
    pub url: String,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl InProcess {
    pub async fn start(builder: ServerBuilder) -> InProcess {
        let server = builder.build().expect("server builds");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(server.clone().serve_with_shutdown(listener, async {
            rx.await.ok();
        }));
        InProcess {
            server,
            url: format!("http://{addr}/mcp"),
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// A client whose every exchange fails after [`LIMIT`].
    pub fn client(&self) -> Client {
        Client::bounded(&self.url, LIMIT)
    }

    /// Signals a graceful shutdown and waits (bounded) for the server to finish.
    pub async fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            tokio::time::timeout(LIMIT, task)
                .await
                .expect("the server stops within the limit")
                .expect("server task")
                .expect("serve");
        }
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// The schema of one elicitation question: a required string `answer`, described by
/// `question`.
fn elicit_schema(question: &str) -> Value {
    json!({
        "type": "object",
        "properties": { "answer": { "type": "string", "description": question } },
        "required": ["answer"],
    })
}

fn answer_of(result: &ElicitResult) -> String {
    result
        .content
        .as_ref()
        .and_then(|c| c.get("answer"))
        .and_then(Value::as_str)
        .unwrap_or("<none>")
        .to_string()
}

/// A prompt and a resource that need the user's input, plus a plain resource, a template
/// and a plain prompt.
pub fn builder_with_input_features(config: Config) -> ServerBuilder {
    let greet = Prompt::new(
        "greet",
        "Greets whoever the user names",
        Vec::new(),
        |ctx, _args| async move {
            let answer = ctx
                .elicit("Whom to greet?", elicit_schema("name"))
                .await
                .map_err(|e| e.to_string())?;
            Ok::<_, String>(GetPromptResult {
                description: None,
                messages: vec![PromptMessage {
                    role: Role::User,
                    content: Content::text(format!("Hello {}", answer_of(&answer))),
                }],
            })
        },
    );
    let plain_prompt = Prompt::new("plain", "A fixed prompt", Vec::new(), |_ctx, _args| async {
        Ok::<_, String>(GetPromptResult {
            description: None,
            messages: vec![PromptMessage {
                role: Role::User,
                content: Content::text("plain"),
            }],
        })
    });
    let secret = Resource::new(
        "test://secret",
        "secret",
        Some("text/plain"),
        |ctx, uri| async move {
            let answer = ctx
                .elicit("Password?", elicit_schema("password"))
                .await
                .map_err(|e| ResourceError::Failed(e.to_string()))?;
            Ok::<_, ResourceError>(vec![ResourceContents::text(
                uri,
                "text/plain",
                format!("secret for {}", answer_of(&answer)),
            )])
        },
    );
    let fixed_a = Resource::new(
        "test://fixed/a",
        "a",
        Some("text/plain"),
        |_ctx, uri| async move {
            Ok::<_, ResourceError>(vec![ResourceContents::text(uri, "text/plain", "A")])
        },
    );
    let fixed_b = Resource::new(
        "test://fixed/b",
        "b",
        Some("text/plain"),
        |_ctx, uri| async move {
            Ok::<_, ResourceError>(vec![ResourceContents::text(uri, "text/plain", "B")])
        },
    );
    let items = ResourceTemplate::new(
        "test://items/{id}",
        "item",
        Some("text/plain"),
        |_ctx, uri, args| async move {
            let id = args.get("id").cloned().unwrap_or_default();
            Ok::<_, ResourceError>(vec![ResourceContents::text(
                uri,
                "text/plain",
                format!("item {id}"),
            )])
        },
    )
    .expect("template");
    Server::builder()
        .config(config)
        .prompt(greet)
        .prompt(plain_prompt)
        .resource(secret)
        .resource(fixed_a)
        .resource(fixed_b)
        .resource_template(items)
        .tool(
            "echo",
            "Returns the text",
            |_ctx, args: EchoArgs| async move {
                Ok::<_, mcp_actor::ToolError>(CallToolResult::text(args.text))
            },
        )
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    text: String,
}
