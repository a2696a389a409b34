//! The actor's side of `[store]`: it keeps the session's durable record up to date without
//! ever awaiting the store.
//!
//! The actor compares the facts the record holds after each message, and when one changed
//! (or a busy session's expiry needs pushing back, or it is time to check ownership) it
//! hands the new record to the session's writer task through a `watch` channel. The channel
//! holds one value, so the writer always writes the latest facts, in order, and a slow store
//! costs memory for one record per session at most. The writer learns from each
//! compare-and-set whether this node still owns the session; when it does not, it tells the
//! actor, which ends (`Ending::Moved`).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tracing::info;

use super::SessionActor;
use crate::protocol::LogLevel;
use crate::session::messages::SessionMsg;
use crate::store::{Ownership, SessionRecord, SessionStore, Written};

/// What the writer should do next: the latest record, and counters the actor raises to ask
/// for a save or an ownership check.
#[derive(Clone)]
struct Job {
    record: Arc<SessionRecord>,
    save: u64,
    check: u64,
}

/// Held by the actor of a session when `[store]` is set.
pub(in crate::session) struct RecordKeeper {
    jobs: watch::Sender<Job>,
    /// The key of the principal the session belongs to.
    principal: Arc<str>,
    /// The epoch of this node's claim.
    epoch: u64,
    /// Whether the session was restored from the store rather than started here.
    restored: bool,
    /// The facts last handed to the writer.
    initialized: bool,
    log_level: Option<LogLevel>,
    /// Set when the subscriptions changed since then.
    subscriptions_changed: bool,
    last_save: Instant,
    last_check: Instant,
}

/// How a keeper starts: a new session's record is created; a restored one was just claimed.
pub(in crate::session) enum Start {
    Create,
    Restored(Ownership),
}

/// The writer: one task per session, ending when the actor drops its keeper.
struct Writer {
    store: Arc<SessionStore>,
    id: Arc<str>,
    owner: Ownership,
    ttl: Duration,
    actor: mpsc::WeakSender<SessionMsg>,
}

impl Writer {
    async fn run(self, mut jobs: watch::Receiver<Job>, mut create: bool) {
        let (mut saved, mut checked) = (0, 0);
        if create {
            // The first record is written before any change can be asked for.
            saved = u64::MAX;
        }
        loop {
            let job = jobs.borrow_and_update().clone();
            let lost = if job.save != saved || create {
                saved = job.save;
                let outcome = self
                    .store
                    .save(&self.id, &self.owner, &job.record, self.ttl, create)
                    .await;
                if outcome.is_ok() {
                    create = false;
                }
                matches!(outcome, Ok(Written::Lost))
            } else if job.check != checked {
                checked = job.check;
                match self.store.owner(&self.id).await {
                    Ok(owner) => owner.as_ref() != Some(&self.owner),
                    // A store that cannot answer takes nothing away: the session keeps
                    // being served from memory.
                    Err(_) => false,
                }
            } else {
                false
            };
            if lost {
                info!(session = %self.id, "another node holds this session now, or it was deleted");
                if let Some(tx) = self.actor.upgrade() {
                    let _ = tx.try_send(SessionMsg::Moved(u64::MAX));
                }
                return;
            }
            if jobs.changed().await.is_err() {
                return;
            }
        }
    }
}

impl RecordKeeper {
    /// Starts the writer of session `id` and hands it `record`.
    pub(in crate::session) fn start(
        store: Arc<SessionStore>,
        id: Arc<str>,
        node: &str,
        record: SessionRecord,
        ttl: Duration,
        start: Start,
        actor: mpsc::WeakSender<SessionMsg>,
    ) -> RecordKeeper {
        let (initialized, log_level) =
            (record.initialized, parse_level(record.log_level.as_deref()));
        let principal = Arc::from(record.principal.as_str());
        let restored = matches!(start, Start::Restored(_));
        let (owner, create) = match start {
            Start::Create => (
                Ownership {
                    node: node.to_string(),
                    epoch: 1,
                },
                true,
            ),
            Start::Restored(owner) => (owner, false),
        };
        let job = Job {
            record: Arc::new(record),
            save: 0,
            check: 0,
        };
        let epoch = owner.epoch;
        let (jobs, rx) = watch::channel(job);
        let writer = Writer {
            store,
            id,
            owner,
            ttl,
            actor,
        };
        tokio::spawn(writer.run(rx, create));
        let now = Instant::now();
        RecordKeeper {
            jobs,
            principal,
            epoch,
            restored,
            initialized,
            log_level,
            subscriptions_changed: false,
            last_save: now,
            last_check: now,
        }
    }
}

fn parse_level(level: Option<&str>) -> Option<LogLevel> {
    level.and_then(|l| serde_json::from_value(serde_json::Value::String(l.to_string())).ok())
}

/// The record of a session that is starting.
pub(in crate::session) fn first_record(
    principal: &str,
    version: crate::protocol::Revision,
    client: &crate::protocol::ClientInfo,
) -> SessionRecord {
    SessionRecord {
        principal: principal.to_string(),
        protocol_version: version.as_str().to_string(),
        client_info: client.implementation.clone(),
        capabilities: client.capabilities.clone(),
        initialized: false,
        log_level: None,
        subscriptions: Vec::new(),
    }
}

/// The record's expiry: `sessions.idle_ttl` after the last write, plus the quarter a busy
/// session may go without a refresh, so a session alive in memory always has its record.
pub(in crate::session) fn record_ttl(idle_ttl: Duration) -> Duration {
    idle_ttl + idle_ttl / 4
}

impl SessionActor {
    /// The record of this session as it stands.
    fn record(&self, principal: &str) -> SessionRecord {
        let mut subscriptions: Vec<String> = self.subscriptions.iter().cloned().collect();
        subscriptions.sort();
        SessionRecord {
            principal: principal.to_string(),
            protocol_version: self.version.as_str().to_string(),
            client_info: self.client.implementation.clone(),
            capabilities: self.client.capabilities.clone(),
            initialized: self.initialized,
            log_level: self
                .log_level
                .and_then(|l| serde_json::to_value(l).ok())
                .and_then(|v| v.as_str().map(str::to_string)),
            subscriptions,
        }
    }

    /// From now on this actor keeps its record with `keeper`.
    pub(in crate::session) fn keep_with(&mut self, keeper: RecordKeeper) {
        self.keeper = Some(keeper);
    }

    /// Takes back the facts of a restored record.
    pub(in crate::session) fn restore_facts(&mut self, record: &SessionRecord) {
        self.initialized = record.initialized;
        self.log_level = parse_level(record.log_level.as_deref());
        self.subscriptions = record.subscriptions.iter().cloned().collect();
        if let Some(upstreams) = &self.upstreams {
            for uri in &self.subscriptions {
                upstreams.subscribe(uri);
            }
        }
    }

    /// Whether this actor's claim is as new as `epoch` or newer: an announcement of an
    /// older claim, heard late, must not end it.
    pub(super) fn owns_past(&self, epoch: u64) -> bool {
        self.keeper.as_ref().is_some_and(|k| k.epoch >= epoch)
    }

    /// Whether this actor took its session over from the store.
    pub(super) fn restored(&self) -> bool {
        self.keeper.as_ref().is_some_and(|k| k.restored)
    }

    /// Called when the subscriptions change.
    pub(super) fn subscriptions_changed(&mut self) {
        if let Some(keeper) = &mut self.keeper {
            keeper.subscriptions_changed = true;
        }
    }

    /// After each message: asks the writer for what is due. Cheap when nothing is: two
    /// comparisons and a clock read.
    pub(super) fn keep_record(&mut self) {
        let Some(keeper) = &self.keeper else {
            return;
        };
        let now = Instant::now();
        let sessions = &self.env.core.config.sessions;
        let changed = keeper.initialized != self.initialized
            || keeper.log_level != self.log_level
            || keeper.subscriptions_changed;
        let refresh = self.last_activity > keeper.last_save
            && now.duration_since(keeper.last_save) >= sessions.idle_ttl / 4;
        let check = self.last_activity > keeper.last_check
            && now.duration_since(keeper.last_check) >= sessions.ownership_check;
        if !(changed || refresh || check) {
            return;
        }
        let record = (changed || refresh).then(|| Arc::new(self.record(&keeper.principal)));
        let (initialized, log_level) = (self.initialized, self.log_level);
        let Some(keeper) = &mut self.keeper else {
            return;
        };
        // A save is also an ownership check: the compare-and-set fails for a lost session.
        keeper.last_check = now;
        match record {
            Some(record) => {
                keeper.last_save = now;
                keeper.initialized = initialized;
                keeper.log_level = log_level;
                keeper.subscriptions_changed = false;
                keeper.jobs.send_modify(|job| {
                    job.record = record;
                    job.save += 1;
                });
            }
            None => keeper.jobs.send_modify(|job| job.check += 1),
        }
    }
}
