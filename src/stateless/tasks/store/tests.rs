//! The task store on its own: lifecycle, expiry, the cap and owners.

use super::*;
use crate::jsonrpc::codes;

fn store_with(config: TasksSection) -> TaskStore {
    TaskStore::new(config, "", Arc::new(Metrics::new("test", [])))
}

fn call() -> TaskCall {
    TaskCall {
        request_id: RequestId::Number(1),
        params: None,
        client: Arc::new(ClientInfo {
            implementation: Value::Null,
            capabilities: json!({}),
            protocol_version: None,
        }),
        features: Arc::new(Features::default()),
        owner: Arc::from(OWNER),
    }
}

const OWNER: &str = "issuer\u{0}alice";

/// A run that never ends by itself (needs a runtime).
fn idle(_: Run) -> AbortHandle {
    tokio::spawn(std::future::pending::<()>()).abort_handle()
}

fn task_id(created: &Value) -> String {
    created["taskId"].as_str().expect("taskId").to_string()
}

/// A task created through the store, then put in `status` as if `created_at` ago.
fn stored(store: &TaskStore, status: TaskStatus, created_at: SystemTime) -> String {
    let id = task_id(&store.create(call(), BTreeMap::new(), None, idle).unwrap());
    let mut task = store.tasks.get_mut(&id).unwrap();
    task.stop();
    task.status = status;
    task.created_at = created_at;
    id
}

#[tokio::test]
async fn a_stale_run_never_overwrites_a_cancelled_task() {
    let store = store_with(TasksSection::default());
    let id = stored(&store, TaskStatus::Working, SystemTime::now());
    store.cancel(&id, OWNER).unwrap();
    store.settle(&id, 1, Ok(json!({ "content": [] })), Map::new());
    let view = store.get(&id, OWNER).unwrap();
    assert_eq!(view["status"], "cancelled");
    assert!(view.get("result").is_none());
    // Cancelling again is the same ack.
    assert_eq!(store.cancel(&id, OWNER).unwrap(), json!({}));
}

#[tokio::test]
async fn runs_settle_by_outcome_and_inputs() {
    let store = store_with(TasksSection::default());
    let done = stored(&store, TaskStatus::Working, SystemTime::now());
    store.settle(&done, 1, Ok(json!({ "isError": true })), Map::new());
    assert_eq!(store.get(&done, OWNER).unwrap()["status"], "completed");

    let failed = stored(&store, TaskStatus::Working, SystemTime::now());
    store.settle(&failed, 1, Err(RpcError::internal("boom")), Map::new());
    let view = store.get(&failed, OWNER).unwrap();
    assert_eq!(view["status"], "failed");
    assert_eq!(view["error"]["code"], codes::INTERNAL_ERROR);

    let asking = stored(&store, TaskStatus::Working, SystemTime::now());
    let mut inputs = Map::new();
    inputs.insert("input-0".into(), json!({ "method": "elicitation/create" }));
    store.settle(&asking, 1, Ok(json!({})), inputs);
    let view = store.get(&asking, OWNER).unwrap();
    assert_eq!(view["status"], "input_required");
    assert_eq!(
        view["inputRequests"]["input-0"]["method"],
        "elicitation/create"
    );
    assert!(view.get("requestState").is_none());
}

#[tokio::test]
async fn expired_tasks_are_forgotten_and_unknown_ids_are_invalid_params() {
    let store = store_with(TasksSection {
        ttl: Duration::from_secs(60),
        ..TasksSection::default()
    });
    let old = stored(
        &store,
        TaskStatus::Completed,
        SystemTime::now() - Duration::from_secs(61),
    );
    let fresh = stored(&store, TaskStatus::Completed, SystemTime::now());
    store.expire();
    assert_eq!(
        store.get(&old, OWNER).unwrap_err().code,
        codes::INVALID_PARAMS
    );
    assert_eq!(store.get(&fresh, OWNER).unwrap()["ttlMs"], 60_000);
    assert_eq!(
        store.cancel("nope", OWNER).unwrap_err().code,
        codes::INVALID_PARAMS
    );
}

#[tokio::test]
async fn an_expired_task_gives_its_slot_back() {
    let store = store_with(TasksSection {
        max_tasks: 1,
        ttl: Duration::from_secs(60),
        ..TasksSection::default()
    });
    let first = stored(&store, TaskStatus::Completed, SystemTime::now());
    let refused = store
        .create(call(), BTreeMap::new(), None, idle)
        .unwrap_err();
    assert!(
        matches!(
            refused,
            CreateError::Refused(Refusal::TooManyTasks { limit: 1 })
        ),
        "{refused:?}"
    );
    store.tasks.get_mut(&first).unwrap().created_at -= Duration::from_secs(61);
    let second = task_id(&store.create(call(), BTreeMap::new(), None, idle).unwrap());
    assert_eq!(store.tasks.len(), 1);
    assert_eq!(store.get(&second, OWNER).unwrap()["status"], "working");
}

/// 64 creates race for 8 slots on several threads, and every run ends the moment it
/// starts. Exactly 8 tasks exist; each is readable as soon as its create returns, and
/// each run found its task to settle.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_creates_never_exceed_max_tasks_and_are_findable_at_once() {
    const CREATES: usize = 64;
    const MAX_TASKS: usize = 8;
    let store = Arc::new(store_with(TasksSection {
        max_tasks: MAX_TASKS,
        ..TasksSection::default()
    }));
    let (runs_tx, mut runs_rx) = tokio::sync::mpsc::unbounded_channel();
    let start = Arc::new(tokio::sync::Barrier::new(CREATES));
    let creates: Vec<_> = (0..CREATES)
        .map(|_| {
            let store = Arc::clone(&store);
            let runs_tx = runs_tx.clone();
            let start = Arc::clone(&start);
            tokio::spawn(async move {
                start.wait().await;
                let settling = Arc::clone(&store);
                let created = store
                    .create(call(), BTreeMap::new(), None, move |run| {
                        let handle = tokio::spawn(async move {
                            settling.settle(&run.id, run.generation, Ok(json!({})), Map::new());
                        });
                        let abort = handle.abort_handle();
                        runs_tx.send(handle).unwrap();
                        abort
                    })
                    .map_err(CreateError::into_rpc)?;
                let id = task_id(&created);
                let seen = store
                    .get(&id, OWNER)
                    .expect("a created task is found at once");
                assert_eq!(seen["taskId"], id.as_str());
                Ok::<_, RpcError>(id)
            })
        })
        .collect();
    drop(runs_tx);
    let mut created = Vec::new();
    for create in creates {
        match create.await.unwrap() {
            Ok(id) => created.push(id),
            Err(e) => assert!(e.message.contains("tasks.max_tasks"), "{e:?}"),
        }
    }
    assert_eq!(created.len(), MAX_TASKS);
    assert_eq!(store.tasks.len(), MAX_TASKS);
    while let Some(run) = runs_rx.recv().await {
        run.await.unwrap();
    }
    for id in &created {
        assert_eq!(store.get(id, OWNER).unwrap()["status"], "completed", "{id}");
    }
}

#[tokio::test]
async fn another_principal_finds_no_task_and_one_principal_is_capped() {
    let store = store_with(TasksSection::default());
    let id = task_id(
        &store
            .create(call(), BTreeMap::new(), Some(2), idle)
            .unwrap(),
    );
    let unknown = store.get("no-such-task", OWNER).unwrap_err();
    for foreign in [
        store.get(&id, "issuer\u{0}mallory").unwrap_err(),
        store.cancel(&id, "issuer\u{0}mallory").unwrap_err(),
        store
            .update(&id, "issuer\u{0}mallory", None, idle)
            .unwrap_err(),
    ] {
        assert_eq!(foreign.code, unknown.code);
        assert_eq!(
            foreign.message.replace(&id, "ID"),
            unknown.message.replace("no-such-task", "ID"),
            "a foreign task reads exactly like an unknown one"
        );
    }
    assert_eq!(store.get(&id, OWNER).unwrap()["status"], "working");
    store
        .create(call(), BTreeMap::new(), Some(2), idle)
        .unwrap();
    let refused = store
        .create(call(), BTreeMap::new(), Some(2), idle)
        .unwrap_err();
    assert!(
        matches!(
            refused,
            CreateError::Refused(Refusal::PrincipalTasks { limit: 2 })
        ),
        "{refused:?}"
    );
    let mut other = call();
    other.owner = Arc::from("issuer\u{0}bob");
    store.create(other, BTreeMap::new(), Some(2), idle).unwrap();
}

#[tokio::test]
async fn results_past_max_bytes_drop_the_oldest_and_free_their_bytes() {
    let store = store_with(TasksSection {
        max_bytes: 10_000,
        ..TasksSection::default()
    });
    let big = json!({ "content": [{ "type": "text", "text": "x".repeat(4_000) }] });
    let ids: Vec<String> = (0..4)
        .map(|_| {
            let id = stored(&store, TaskStatus::Working, SystemTime::now());
            store.settle(&id, 1, Ok(big.clone()), Map::new());
            id
        })
        .collect();
    assert!(store.result_bytes() <= 10_000, "{}", store.result_bytes());
    let first = store.get(&ids[0], OWNER).unwrap();
    assert!(
        first["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("tasks.max_bytes")),
        "{first}"
    );
    assert!(store.get(&ids[3], OWNER).unwrap()["result"].is_object());
    store.tasks.clear();
    assert_eq!(
        store.result_bytes(),
        0,
        "an expired task's bytes are given back"
    );
}

/// 200 creates by one owner from 8 threads at once, against a cap of 10, with 5,000 tasks
/// of other owners in the store: exactly 10 succeed. Counting the owner's tasks by a scan
/// and inserting afterwards let threads that scanned together all pass.
#[test]
fn concurrent_creates_by_one_owner_never_pass_its_cap() {
    const THREADS: usize = 8;
    const CAP: usize = 10;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let _entered = runtime.enter();
    let store = Arc::new(store_with(TasksSection {
        max_tasks: 10_000,
        ..TasksSection::default()
    }));
    for i in 0..5000 {
        let mut other = call();
        other.owner = Arc::from(format!("filler{i}"));
        store.create(other, BTreeMap::new(), None, idle).unwrap();
    }
    let barrier = Arc::new(std::sync::Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let (store, barrier) = (Arc::clone(&store), Arc::clone(&barrier));
            let handle = runtime.handle().clone();
            std::thread::spawn(move || {
                let _entered = handle.enter();
                barrier.wait();
                (0..200 / THREADS)
                    .filter(|_| {
                        store
                            .create(call(), BTreeMap::new(), Some(CAP), idle)
                            .is_ok()
                    })
                    .count()
            })
        })
        .collect();
    let created: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(
        created, CAP,
        "200 concurrent creates against a cap of {CAP}"
    );
}
