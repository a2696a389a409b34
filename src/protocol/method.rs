//! Every MCP method the server knows, as a type: [`Method::parse`] reads a method name once,
//! and every decision about a method is a `match` on [`Method`] or one of its sub-enums.
//!
//! Shaped like mini-redis's `Command`: adding a method is a variant here, and the compiler
//! then names each place that must decide what to do with it (who answers it, in which
//! era, its metric row, what `Mcp-Name` mirrors, what `[auth.scopes]` keys on). The
//! sub-enums are what each part answers: [`FeatureMethod`] for `dispatch`,
//! [`SessionMethod`] for the session actor, [`StatelessMethod`] for the 2026-07-28 router,
//! so none of them needs a catch-all arm for a method it does not serve.

use std::fmt;

use crate::metrics::MethodLabel;

/// An MCP method. Client requests come first, in the order of the request metrics' rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    // Requests a client sends; the busiest first.
    ToolsCall,
    Ping,
    ToolsList,
    ResourcesRead,
    PromptsGet,
    ResourcesList,
    ResourcesTemplatesList,
    PromptsList,
    CompletionComplete,
    Initialize,
    LoggingSetLevel,
    ResourcesSubscribe,
    ResourcesUnsubscribe,
    ServerDiscover,
    SubscriptionsListen,
    // The tasks extension (SEP-2663). `tasks/list` and `tasks/result` of the handshake-era
    // experimental tasks do not exist any more: they get -32601 like any unknown method.
    TasksGet,
    TasksUpdate,
    TasksCancel,
    // Requests the server sends to a client (and an upstream server sends to the gateway).
    ElicitationCreate,
    SamplingCreateMessage,
    RootsList,
    // Notifications, either way.
    Initialized,
    Cancelled,
    Progress,
    Message,
    ToolsListChanged,
    ResourcesListChanged,
    PromptsListChanged,
    ResourcesUpdated,
    RootsListChanged,
    SubscriptionsAcknowledged,
}

/// Which protocol eras serve a client request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eras {
    /// Handshake-era sessions only (2025-03-26, 2025-06-18, 2025-11-25).
    Handshake,
    /// The stateless 2026-07-28 revision only.
    Stateless,
    /// Both.
    Both,
}

/// Who answers a client request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// `dispatch`, in a spawned task or the request's future, on either path.
    Features(FeatureMethod),
    /// The session layer itself, at once: it reads or changes session state.
    SessionActor(SessionMethod),
    /// The stateless path's own handler (discovery, listen streams, tasks).
    Stateless(StatelessMethod),
}

/// The feature methods `dispatch` runs, in both eras.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeatureMethod {
    ToolsCall,
    ToolsList,
    ResourcesRead,
    PromptsGet,
    ResourcesList,
    ResourcesTemplatesList,
    PromptsList,
    CompletionComplete,
}

/// What the session layer answers itself. `initialize` starts a session in the HTTP layer
/// and never reaches an actor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionMethod {
    Initialize,
    Ping,
    LoggingSetLevel,
    ResourcesSubscribe,
    ResourcesUnsubscribe,
}

/// What the 2026-07-28 router answers without `dispatch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatelessMethod {
    ServerDiscover,
    SubscriptionsListen,
    Task(TaskMethod),
}

/// The methods of the `io.modelcontextprotocol/tasks` extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskMethod {
    Get,
    Update,
    Cancel,
}

/// The notifications a client sends that a session acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientNotification {
    Initialized,
    Cancelled,
    Progress,
    RootsListChanged,
}

/// The params field a request acts on: what `Mcp-Name` mirrors (2026-07-28) and what a
/// `requestState` binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Name,
    Uri,
    TaskId,
}

impl Target {
    /// The params field that holds it.
    pub fn field(self) -> &'static str {
        match self {
            Target::Name => "name",
            Target::Uri => "uri",
            Target::TaskId => "taskId",
        }
    }
}

/// The table of `[auth.scopes]` an operation is looked up in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeTable {
    Tools,
    Prompts,
    Resources,
}

impl Method {
    /// Every method, in declaration order.
    pub const ALL: [Method; 31] = {
        use Method::*;
        [
            ToolsCall,
            Ping,
            ToolsList,
            ResourcesRead,
            PromptsGet,
            ResourcesList,
            ResourcesTemplatesList,
            PromptsList,
            CompletionComplete,
            Initialize,
            LoggingSetLevel,
            ResourcesSubscribe,
            ResourcesUnsubscribe,
            ServerDiscover,
            SubscriptionsListen,
            TasksGet,
            TasksUpdate,
            TasksCancel,
            ElicitationCreate,
            SamplingCreateMessage,
            RootsList,
            Initialized,
            Cancelled,
            Progress,
            Message,
            ToolsListChanged,
            ResourcesListChanged,
            PromptsListChanged,
            ResourcesUpdated,
            RootsListChanged,
            SubscriptionsAcknowledged,
        ]
    };

    /// The method a name stands for; `None` for a name the server does not know.
    pub fn parse(name: &str) -> Option<Method> {
        use Method::*;
        Some(match name {
            "tools/call" => ToolsCall,
            "ping" => Ping,
            "tools/list" => ToolsList,
            "resources/read" => ResourcesRead,
            "prompts/get" => PromptsGet,
            "resources/list" => ResourcesList,
            "resources/templates/list" => ResourcesTemplatesList,
            "prompts/list" => PromptsList,
            "completion/complete" => CompletionComplete,
            "initialize" => Initialize,
            "logging/setLevel" => LoggingSetLevel,
            "resources/subscribe" => ResourcesSubscribe,
            "resources/unsubscribe" => ResourcesUnsubscribe,
            "server/discover" => ServerDiscover,
            "subscriptions/listen" => SubscriptionsListen,
            "tasks/get" => TasksGet,
            "tasks/update" => TasksUpdate,
            "tasks/cancel" => TasksCancel,
            "elicitation/create" => ElicitationCreate,
            "sampling/createMessage" => SamplingCreateMessage,
            "roots/list" => RootsList,
            "notifications/initialized" => Initialized,
            "notifications/cancelled" => Cancelled,
            "notifications/progress" => Progress,
            "notifications/message" => Message,
            "notifications/tools/list_changed" => ToolsListChanged,
            "notifications/resources/list_changed" => ResourcesListChanged,
            "notifications/prompts/list_changed" => PromptsListChanged,
            "notifications/resources/updated" => ResourcesUpdated,
            "notifications/roots/list_changed" => RootsListChanged,
            "notifications/subscriptions/acknowledged" => SubscriptionsAcknowledged,
            _ => return None,
        })
    }

    /// The method's name on the wire.
    pub const fn as_str(self) -> &'static str {
        use Method::*;
        match self {
            ToolsCall => "tools/call",
            Ping => "ping",
            ToolsList => "tools/list",
            ResourcesRead => "resources/read",
            PromptsGet => "prompts/get",
            ResourcesList => "resources/list",
            ResourcesTemplatesList => "resources/templates/list",
            PromptsList => "prompts/list",
            CompletionComplete => "completion/complete",
            Initialize => "initialize",
            LoggingSetLevel => "logging/setLevel",
            ResourcesSubscribe => "resources/subscribe",
            ResourcesUnsubscribe => "resources/unsubscribe",
            ServerDiscover => "server/discover",
            SubscriptionsListen => "subscriptions/listen",
            TasksGet => "tasks/get",
            TasksUpdate => "tasks/update",
            TasksCancel => "tasks/cancel",
            ElicitationCreate => "elicitation/create",
            SamplingCreateMessage => "sampling/createMessage",
            RootsList => "roots/list",
            Initialized => "notifications/initialized",
            Cancelled => "notifications/cancelled",
            Progress => "notifications/progress",
            Message => "notifications/message",
            ToolsListChanged => "notifications/tools/list_changed",
            ResourcesListChanged => "notifications/resources/list_changed",
            PromptsListChanged => "notifications/prompts/list_changed",
            ResourcesUpdated => "notifications/resources/updated",
            RootsListChanged => "notifications/roots/list_changed",
            SubscriptionsAcknowledged => "notifications/subscriptions/acknowledged",
        }
    }

    /// Who answers this method when a client sends it as a request; `None` for what only
    /// the server sends, and for notifications.
    pub const fn served(self) -> Option<Served> {
        use Method::*;
        use Served::{Features as F, SessionActor as S, Stateless as M};
        Some(match self {
            ToolsCall => F(FeatureMethod::ToolsCall),
            ToolsList => F(FeatureMethod::ToolsList),
            ResourcesRead => F(FeatureMethod::ResourcesRead),
            PromptsGet => F(FeatureMethod::PromptsGet),
            ResourcesList => F(FeatureMethod::ResourcesList),
            ResourcesTemplatesList => F(FeatureMethod::ResourcesTemplatesList),
            PromptsList => F(FeatureMethod::PromptsList),
            CompletionComplete => F(FeatureMethod::CompletionComplete),
            Initialize => S(SessionMethod::Initialize),
            Ping => S(SessionMethod::Ping),
            LoggingSetLevel => S(SessionMethod::LoggingSetLevel),
            ResourcesSubscribe => S(SessionMethod::ResourcesSubscribe),
            ResourcesUnsubscribe => S(SessionMethod::ResourcesUnsubscribe),
            ServerDiscover => M(StatelessMethod::ServerDiscover),
            SubscriptionsListen => M(StatelessMethod::SubscriptionsListen),
            TasksGet => M(StatelessMethod::Task(TaskMethod::Get)),
            TasksUpdate => M(StatelessMethod::Task(TaskMethod::Update)),
            TasksCancel => M(StatelessMethod::Task(TaskMethod::Cancel)),
            ElicitationCreate
            | SamplingCreateMessage
            | RootsList
            | Initialized
            | Cancelled
            | Progress
            | Message
            | ToolsListChanged
            | ResourcesListChanged
            | PromptsListChanged
            | ResourcesUpdated
            | RootsListChanged
            | SubscriptionsAcknowledged => return None,
        })
    }

    /// Which eras serve this method as a client request.
    pub const fn eras(self) -> Option<Eras> {
        match self.served() {
            Some(Served::Features(_)) => Some(Eras::Both),
            Some(Served::SessionActor(_)) => Some(Eras::Handshake),
            Some(Served::Stateless(_)) => Some(Eras::Stateless),
            None => None,
        }
    }

    /// Whether a handshake-era session serves it.
    pub const fn in_sessions(self) -> bool {
        matches!(self.eras(), Some(Eras::Handshake | Eras::Both))
    }

    /// Whether the stateless 2026-07-28 revision serves it.
    pub const fn in_stateless(self) -> bool {
        matches!(self.eras(), Some(Eras::Stateless | Eras::Both))
    }

    /// The feature method `dispatch` runs for it, if any.
    pub const fn feature(self) -> Option<FeatureMethod> {
        match self.served() {
            Some(Served::Features(f)) => Some(f),
            _ => None,
        }
    }

    /// May answer `input_required` on the 2026-07-28 path (spec `basic/patterns/mrtr.mdx`).
    pub const fn may_need_input(self) -> bool {
        matches!(
            self.feature(),
            Some(
                FeatureMethod::ToolsCall | FeatureMethod::ResourcesRead | FeatureMethod::PromptsGet
            )
        )
    }

    /// Its 2026-07-28 result carries cache hints (spec `server/utilities/caching.mdx`).
    pub const fn cacheable(self) -> bool {
        use Method::*;
        matches!(
            self,
            ToolsList
                | ResourcesRead
                | ResourcesList
                | ResourcesTemplatesList
                | PromptsList
                | ServerDiscover
        )
    }

    /// The params field the request acts on: `Mcp-Name` mirrors it (SEP-2243, and SEP-2663
    /// "Streamable HTTP: Routing Headers" for tasks), a `requestState` binds it.
    pub const fn target(self) -> Option<Target> {
        match self.served() {
            Some(Served::Features(FeatureMethod::ToolsCall | FeatureMethod::PromptsGet)) => {
                Some(Target::Name)
            }
            Some(Served::Features(FeatureMethod::ResourcesRead)) => Some(Target::Uri),
            Some(Served::Stateless(StatelessMethod::Task(_))) => Some(Target::TaskId),
            _ => None,
        }
    }

    /// The `[auth.scopes]` table the request's target is looked up in.
    pub const fn scope_table(self) -> Option<ScopeTable> {
        match self {
            Method::ToolsCall => Some(ScopeTable::Tools),
            Method::PromptsGet => Some(ScopeTable::Prompts),
            Method::ResourcesRead | Method::ResourcesSubscribe => Some(ScopeTable::Resources),
            _ => None,
        }
    }

    /// What a session does with this notification from its client.
    pub const fn client_notification(self) -> Option<ClientNotification> {
        match self {
            Method::Initialized => Some(ClientNotification::Initialized),
            Method::Cancelled => Some(ClientNotification::Cancelled),
            Method::Progress => Some(ClientNotification::Progress),
            Method::RootsListChanged => Some(ClientNotification::RootsListChanged),
            _ => None,
        }
    }

    /// The names of the request metrics' rows: every client request, in declaration order.
    pub fn metric_names() -> impl Iterator<Item = &'static str> {
        Method::ALL
            .into_iter()
            .filter(|m| m.served().is_some())
            .map(Method::as_str)
    }

    /// The request metrics' row of this method in the handshake era or in 2026-07-28
    /// (`stateless`): `other` for a method that era does not serve.
    pub fn metric_label(self, stateless: bool) -> MethodLabel {
        let served = if stateless {
            self.in_stateless()
        } else {
            self.in_sessions()
        };
        // Client requests come first in the declaration, so the discriminant is the row.
        if served {
            MethodLabel::new(self as usize)
        } else {
            MethodLabel::OTHER
        }
    }

    /// The request metrics' row of a method name: `other` for a name the era does not
    /// serve or nobody knows, so a client cannot add series.
    pub fn metric_label_of(name: &str, stateless: bool) -> MethodLabel {
        Method::parse(name).map_or(MethodLabel::OTHER, |m| m.metric_label(stateless))
    }
}

impl FeatureMethod {
    pub const fn method(self) -> Method {
        match self {
            FeatureMethod::ToolsCall => Method::ToolsCall,
            FeatureMethod::ToolsList => Method::ToolsList,
            FeatureMethod::ResourcesRead => Method::ResourcesRead,
            FeatureMethod::PromptsGet => Method::PromptsGet,
            FeatureMethod::ResourcesList => Method::ResourcesList,
            FeatureMethod::ResourcesTemplatesList => Method::ResourcesTemplatesList,
            FeatureMethod::PromptsList => Method::PromptsList,
            FeatureMethod::CompletionComplete => Method::CompletionComplete,
        }
    }
}

impl TaskMethod {
    pub const fn method(self) -> Method {
        match self {
            TaskMethod::Get => Method::TasksGet,
            TaskMethod::Update => Method::TasksUpdate,
            TaskMethod::Cancel => Method::TasksCancel,
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for FeatureMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.method().as_str())
    }
}

#[cfg(test)]
mod tests;
