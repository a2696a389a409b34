//! The embedded store for a single node (`file:path`): a redb database, so that the
//! sessions of a node outlive its restart without any other service.
//!
//! redb's write transactions are serialised and crash-safe, which gives the same atomic
//! claim, save and delete steps the Redis store gets from Lua scripts. Expiry is checked on
//! read (an expired record is absent) and expired rows are swept at start and every
//! [`SWEEP_EVERY`] writes, so the file holds at most about the live sessions.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redb::{Database, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};

use super::record::{Ownership, Written};

const SESSIONS: TableDefinition<&str, &[u8]> = TableDefinition::new("sessions");
/// Deleted session id → when its tombstone expires (Unix milliseconds).
const TOMBSTONES: TableDefinition<&str, u64> = TableDefinition::new("tombstones");
/// Finished task id → its final state ([`TaskRow`]), a key space apart from sessions.
const TASKS: TableDefinition<&str, &[u8]> = TableDefinition::new("tasks");
const SWEEP_EVERY: u64 = 1024;

#[derive(Serialize, Deserialize)]
struct Row {
    owner: String,
    epoch: u64,
    data: String,
    expires: u64,
}

#[derive(Serialize, Deserialize)]
struct TaskRow {
    data: String,
    expires: u64,
}

pub(super) struct FileStore {
    db: Arc<Database>,
    writes: AtomicU64,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn after(ttl: Duration) -> u64 {
    now_ms().saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX))
}

type Result<T> = std::result::Result<T, String>;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

impl FileStore {
    pub(super) fn open(path: &Path) -> Result<FileStore> {
        let db = Database::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let txn = db.begin_write().map_err(err)?;
        txn.open_table(SESSIONS).map_err(err)?;
        txn.open_table(TOMBSTONES).map_err(err)?;
        txn.open_table(TASKS).map_err(err)?;
        txn.commit().map_err(err)?;
        let store = FileStore {
            db: Arc::new(db),
            writes: AtomicU64::new(0),
        };
        store.sweep()?;
        Ok(store)
    }

    /// Runs `f` on a blocking thread: redb does file I/O and fsyncs.
    pub(super) async fn run<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&FileStore) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let store = Arc::clone(self);
        tokio::task::spawn_blocking(move || f(&store))
            .await
            .map_err(err)?
    }

    fn row(&self, id: &str) -> Result<Option<Row>> {
        let txn = self.db.begin_read().map_err(err)?;
        let table = txn.open_table(SESSIONS).map_err(err)?;
        let Some(bytes) = table.get(id).map_err(err)? else {
            return Ok(None);
        };
        let row: Row = serde_json::from_slice(bytes.value()).map_err(err)?;
        Ok((row.expires > now_ms()).then_some(row))
    }

    pub(super) fn load(&self, id: &str) -> Result<Option<String>> {
        Ok(self.row(id)?.map(|row| row.data))
    }

    pub(super) fn owner(&self, id: &str) -> Result<Option<Ownership>> {
        Ok(self.row(id)?.map(|row| Ownership {
            node: row.owner,
            epoch: row.epoch,
        }))
    }

    fn tombstoned(table: &impl ReadableTable<&'static str, u64>, id: &str) -> Result<bool> {
        Ok(table
            .get(id)
            .map_err(err)?
            .is_some_and(|until| until.value() > now_ms()))
    }

    pub(super) fn save(
        &self,
        id: &str,
        owner: &Ownership,
        data: &str,
        ttl: Duration,
        create: bool,
    ) -> Result<Written> {
        self.count_write()?;
        let txn = self.db.begin_write().map_err(err)?;
        let written = {
            let tombstones = txn.open_table(TOMBSTONES).map_err(err)?;
            let mut sessions = txn.open_table(SESSIONS).map_err(err)?;
            let current = match sessions.get(id).map_err(err)? {
                Some(bytes) => Some(serde_json::from_slice::<Row>(bytes.value()).map_err(err)?),
                None => None,
            };
            let current = current.filter(|row| row.expires > now_ms());
            let allowed = match &current {
                Some(row) => row.owner == owner.node && row.epoch == owner.epoch,
                None => create,
            };
            if Self::tombstoned(&tombstones, id)? || !allowed {
                Written::Lost
            } else {
                let row = Row {
                    owner: owner.node.clone(),
                    epoch: owner.epoch,
                    data: data.to_string(),
                    expires: after(ttl),
                };
                let bytes = serde_json::to_vec(&row).map_err(err)?;
                sessions.insert(id, bytes.as_slice()).map_err(err)?;
                Written::Kept
            }
        };
        txn.commit().map_err(err)?;
        Ok(written)
    }

    pub(super) fn claim(
        &self,
        id: &str,
        node: &str,
        ttl: Duration,
    ) -> Result<Option<(u64, String)>> {
        self.count_write()?;
        let txn = self.db.begin_write().map_err(err)?;
        let claimed = {
            let tombstones = txn.open_table(TOMBSTONES).map_err(err)?;
            let mut sessions = txn.open_table(SESSIONS).map_err(err)?;
            let current = match sessions.get(id).map_err(err)? {
                Some(bytes) => Some(serde_json::from_slice::<Row>(bytes.value()).map_err(err)?),
                None => None,
            };
            match current.filter(|row| row.expires > now_ms()) {
                Some(row) if !Self::tombstoned(&tombstones, id)? => {
                    let row = Row {
                        owner: node.to_string(),
                        epoch: row.epoch + 1,
                        data: row.data,
                        expires: after(ttl),
                    };
                    let bytes = serde_json::to_vec(&row).map_err(err)?;
                    sessions.insert(id, bytes.as_slice()).map_err(err)?;
                    Some((row.epoch, row.data))
                }
                _ => None,
            }
        };
        txn.commit().map_err(err)?;
        Ok(claimed)
    }

    pub(super) fn delete(&self, id: &str, tombstone: Duration) -> Result<()> {
        self.count_write()?;
        let txn = self.db.begin_write().map_err(err)?;
        {
            let mut tombstones = txn.open_table(TOMBSTONES).map_err(err)?;
            tombstones.insert(id, after(tombstone)).map_err(err)?;
            let mut sessions = txn.open_table(SESSIONS).map_err(err)?;
            sessions.remove(id).map_err(err)?;
        }
        txn.commit().map_err(err)
    }

    fn count_write(&self) -> Result<()> {
        if self.writes.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            self.sweep()?;
        }
        Ok(())
    }

    /// Removes expired records and tombstones.
    fn sweep(&self) -> Result<()> {
        let now = now_ms();
        let txn = self.db.begin_write().map_err(err)?;
        {
            let mut sessions = txn.open_table(SESSIONS).map_err(err)?;
            sessions
                .retain(|_, bytes| {
                    serde_json::from_slice::<Row>(bytes).is_ok_and(|row| row.expires > now)
                })
                .map_err(err)?;
            let mut tombstones = txn.open_table(TOMBSTONES).map_err(err)?;
            tombstones.retain(|_, until| until > now).map_err(err)?;
            let mut tasks = txn.open_table(TASKS).map_err(err)?;
            tasks
                .retain(|_, bytes| {
                    serde_json::from_slice::<TaskRow>(bytes).is_ok_and(|row| row.expires > now)
                })
                .map_err(err)?;
        }
        txn.commit().map_err(err)
    }
}

impl FileStore {
    /// Writes a finished task unless a live one is there already: a task settles once, and
    /// its first final state is the one that stays.
    pub(super) fn save_task(&self, id: &str, data: &str, ttl: Duration) -> Result<()> {
        self.count_write()?;
        let txn = self.db.begin_write().map_err(err)?;
        {
            let mut tasks = txn.open_table(TASKS).map_err(err)?;
            let held = match tasks.get(id).map_err(err)? {
                Some(bytes) => serde_json::from_slice::<TaskRow>(bytes.value())
                    .is_ok_and(|row| row.expires > now_ms()),
                None => false,
            };
            if !held {
                let row = TaskRow {
                    data: data.to_string(),
                    expires: after(ttl),
                };
                let bytes = serde_json::to_vec(&row).map_err(err)?;
                tasks.insert(id, bytes.as_slice()).map_err(err)?;
            }
        }
        txn.commit().map_err(err)
    }

    pub(super) fn load_task(&self, id: &str) -> Result<Option<String>> {
        let txn = self.db.begin_read().map_err(err)?;
        let table = txn.open_table(TASKS).map_err(err)?;
        let Some(bytes) = table.get(id).map_err(err)? else {
            return Ok(None);
        };
        let row: TaskRow = serde_json::from_slice(bytes.value()).map_err(err)?;
        Ok((row.expires > now_ms()).then_some(row.data))
    }
}
