//! The Redis store: one hash per session (`owner`, `epoch`, `data`) and one tombstone key
//! per deleted session, both with the store's own expiry; and one string per finished task
//! (`mcp:task:<id>`), a key space of its own.
//!
//! Every step that decides ownership is one Lua script, so it is atomic on the server: a
//! claim and a DELETE on two nodes cannot interleave, and a write from a node that lost
//! the session cannot land after the claim that took it.

use redis::Script;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::time::Duration;
use tokio::sync::OnceCell;

use super::record::{Ownership, Written};

/// Writes `data` if the session is still `owner` at `epoch`, or, with `create`, if it has no
/// record yet. A tombstone always wins. Returns 1 when written.
const SAVE: &str = r"
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
local cur = redis.call('HMGET', KEYS[1], 'owner', 'epoch')
if cur[1] then
  if cur[1] ~= ARGV[1] or cur[2] ~= ARGV[2] then return 0 end
elseif ARGV[5] ~= '1' then
  return 0
end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'epoch', ARGV[2], 'data', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
";

/// Takes the session for `ARGV[1]`: the epoch goes up by one. Nothing for a deleted or
/// expired session. Returns `{epoch, data}`, and tells every node (`MOVED`).
const CLAIM: &str = r"
if redis.call('EXISTS', KEYS[2]) == 1 then return false end
local cur = redis.call('HMGET', KEYS[1], 'epoch', 'data')
if not cur[2] then return false end
local epoch = (tonumber(cur[1]) or 0) + 1
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'epoch', epoch)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PUBLISH', 'mcp:sessions:moved', ARGV[3] .. ' ' .. epoch .. ' ' .. ARGV[4])
return {tostring(epoch), cur[2]}
";

/// The tombstone and the removal of the record, in one step, told to every node.
const DELETE: &str = r"
redis.call('SET', KEYS[2], '1', 'PX', ARGV[1])
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', 'mcp:sessions:moved', ARGV[2] .. ' deleted ' .. ARGV[3])
return 1
";

/// Where claims and deletes are announced, as `<instance> <epoch> <session id>` (the epoch
/// is `deleted` for a DELETE): a node holding an older actor for that id ends it at once
/// instead of at its next ownership check.
const MOVED: &str = "mcp:sessions:moved";

pub(super) struct RedisStore {
    client: redis::Client,
    connection: OnceCell<ConnectionManager>,
    timeout: Duration,
    save: Script,
    claim: Script,
    delete: Script,
}

fn record_key(id: &str) -> String {
    format!("mcp:session:{id}")
}

fn tombstone_key(id: &str) -> String {
    format!("mcp:deleted:{id}")
}

fn task_key(id: &str) -> String {
    format!("mcp:task:{id}")
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl RedisStore {
    pub(super) fn new(url: &str, timeout: Duration) -> Result<RedisStore, String> {
        let client = redis::Client::open(url).map_err(|e| e.to_string())?;
        Ok(RedisStore {
            client,
            connection: OnceCell::new(),
            timeout,
            save: Script::new(SAVE),
            claim: Script::new(CLAIM),
            delete: Script::new(DELETE),
        })
    }

    /// The shared connection, made on first use. The manager reconnects by itself after
    /// Redis restarts; each command is bounded by `[store] timeout`.
    async fn connection(&self) -> redis::RedisResult<ConnectionManager> {
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.timeout))
            .set_response_timeout(Some(self.timeout))
            .set_number_of_retries(1)
            .set_max_delay(self.timeout);
        let manager = self
            .connection
            .get_or_try_init(|| ConnectionManager::new_with_config(self.client.clone(), config))
            .await?;
        Ok(manager.clone())
    }

    pub(super) async fn ping(&self) -> redis::RedisResult<()> {
        let mut con = self.connection().await?;
        redis::cmd("PING").query_async::<String>(&mut con).await?;
        Ok(())
    }

    pub(super) async fn load(&self, id: &str) -> redis::RedisResult<Option<String>> {
        let mut con = self.connection().await?;
        redis::cmd("HGET")
            .arg(record_key(id))
            .arg("data")
            .query_async(&mut con)
            .await
    }

    pub(super) async fn save(
        &self,
        id: &str,
        owner: &Ownership,
        data: &str,
        ttl: Duration,
        create: bool,
    ) -> redis::RedisResult<Written> {
        let mut con = self.connection().await?;
        let written: i64 = self
            .save
            .key(record_key(id))
            .key(tombstone_key(id))
            .arg(&owner.node)
            .arg(owner.epoch.to_string())
            .arg(data)
            .arg(millis(ttl))
            .arg(if create { "1" } else { "0" })
            .invoke_async(&mut con)
            .await?;
        Ok(if written == 1 {
            Written::Kept
        } else {
            Written::Lost
        })
    }

    pub(super) async fn claim(
        &self,
        id: &str,
        node: &str,
        ttl: Duration,
        instance: &str,
    ) -> redis::RedisResult<Option<(u64, String)>> {
        let mut con = self.connection().await?;
        let claimed: Option<(String, String)> = self
            .claim
            .key(record_key(id))
            .key(tombstone_key(id))
            .arg(node)
            .arg(millis(ttl))
            .arg(instance)
            .arg(id)
            .invoke_async(&mut con)
            .await?;
        Ok(claimed.and_then(|(epoch, data)| Some((epoch.parse().ok()?, data))))
    }

    pub(super) async fn owner(&self, id: &str) -> redis::RedisResult<Option<Ownership>> {
        let mut con = self.connection().await?;
        let (node, epoch): (Option<String>, Option<String>) = redis::cmd("HMGET")
            .arg(record_key(id))
            .arg("owner")
            .arg("epoch")
            .query_async(&mut con)
            .await?;
        Ok(match (node, epoch.and_then(|e| e.parse().ok())) {
            (Some(node), Some(epoch)) => Some(Ownership { node, epoch }),
            _ => None,
        })
    }

    pub(super) async fn delete(
        &self,
        id: &str,
        tombstone: Duration,
        instance: &str,
    ) -> redis::RedisResult<()> {
        let mut con = self.connection().await?;
        let _: i64 = self
            .delete
            .key(record_key(id))
            .key(tombstone_key(id))
            .arg(millis(tombstone))
            .arg(instance)
            .arg(id)
            .invoke_async(&mut con)
            .await?;
        Ok(())
    }
}

impl RedisStore {
    /// Writes a finished task, unless one is there already: `NX`, because a task settles
    /// once and its first final state is the one that stays.
    pub(super) async fn save_task(
        &self,
        id: &str,
        data: &str,
        ttl: Duration,
    ) -> redis::RedisResult<()> {
        let mut con = self.connection().await?;
        let _: Option<String> = redis::cmd("SET")
            .arg(task_key(id))
            .arg(data)
            .arg("PX")
            .arg(millis(ttl))
            .arg("NX")
            .query_async(&mut con)
            .await?;
        Ok(())
    }

    pub(super) async fn load_task(&self, id: &str) -> redis::RedisResult<Option<String>> {
        let mut con = self.connection().await?;
        redis::cmd("GET")
            .arg(task_key(id))
            .query_async(&mut con)
            .await
    }

    /// Hands `on_move` the id of every session another instance claimed or deleted, until
    /// `on_move` says to stop. A lost subscription is made again after a pause; what was
    /// announced meanwhile is caught by the ownership checks.
    pub(super) async fn watch_moves(
        &self,
        instance: &str,
        on_move: &(dyn Fn(&str, u64) -> bool + Send + Sync),
    ) {
        use futures_util::StreamExt;
        loop {
            if let Ok(mut pubsub) = self.client.get_async_pubsub().await {
                if pubsub.subscribe(MOVED).await.is_ok() {
                    let mut messages = pubsub.on_message();
                    while let Some(message) = messages.next().await {
                        let Ok(payload) = message.get_payload::<String>() else {
                            continue;
                        };
                        let mut parts = payload.splitn(3, ' ');
                        let (Some(from), Some(epoch), Some(id)) =
                            (parts.next(), parts.next(), parts.next())
                        else {
                            continue;
                        };
                        let epoch = epoch.parse().unwrap_or(u64::MAX);
                        if from != instance && !on_move(id, epoch) {
                            return;
                        }
                    }
                }
            }
            if !on_move("", 0) {
                return;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}
