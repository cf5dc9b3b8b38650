//! Zygote shards with the real runner: runs are dealt to every shard; a killed shard is
//! respawned on its next turn while the other shards keep serving (a run in flight on another
//! shard finishes); the `zygotes` knob is bounded (1 to 64, both ends hit) in the engine and in
//! the daemon's config, and a bad value is a typed error. Every wait is for a condition.
#![allow(clippy::unwrap_used)]

mod daemon_support;

use daemon_support::common::*;
use ptc_shared::Value;
use ptc_shared::protocol::ToolDecl;
use ptc_supervisor::engine::{
    BoxFuture, Engine, EngineConfig, EngineError, MAX_ZYGOTES, NoTools, RunRequest, SpawnMode,
    ToolHandler,
};
use ptc_supervisor::policy::load_dir;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{Notify, mpsc};

fn config(dir: &Path, zygotes: usize) -> EngineConfig {
    let mut config = EngineConfig::new(real_runner(), load_dir(dir).unwrap());
    config.zygotes = zygotes;
    // Pools fixed at the policy's `warm`: these tests count each zygote's children.
    config.pool.max = 0;
    config
}

/// Waits up to 30 s until `engine` has `n` live zygotes, and returns their pids.
async fn live_zygotes(engine: &Engine, n: usize) -> Vec<i32> {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let pids = engine.zygote_pids();
        if pids.len() == n {
            return pids;
        }
        assert!(Instant::now() < until, "{pids:?}: not {n} live zygotes");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn returns(engine: &Engine, program: &str, want: i64) {
    let step = engine.execute(request(program), Arc::new(NoTools)).await;
    assert_eq!(step.return_value, Some(Value::Int(want)), "{step:?}");
}

#[tokio::test]
async fn pooled_runners_are_dealt_to_every_shard_in_turn() {
    let dir = shipped_filter_dir("shards-deal", "", 6);
    let engine = Engine::new(config(&dir, 3)).unwrap();
    assert!(engine.wait_warm(Duration::from_secs(30)).await);
    let zygotes = live_zygotes(&engine, 3).await;
    for z in &zygotes {
        assert_eq!(children_of(*z).len(), 2, "zygote {z} of {zygotes:?}");
    }
    returns(&engine, "(+ 1 2)", 3).await;
}

/// A tool that says when it was called, then answers 1 once the gate opens.
struct Gate {
    called: mpsc::UnboundedSender<()>,
    open: Arc<Notify>,
}

impl ToolHandler for Gate {
    fn call(&self, _name: String, _args: Value) -> BoxFuture<'static, Result<Value, String>> {
        let (called, open) = (self.called.clone(), Arc::clone(&self.open));
        Box::pin(async move {
            let _ = called.send(());
            open.notified().await;
            Ok(Value::Int(1))
        })
    }
}

#[tokio::test]
async fn a_killed_shard_is_respawned_while_the_others_keep_serving() {
    let dir = shipped_filter_dir("shards-kill", "timeout_ms = 20000", 0);
    let engine = Arc::new(Engine::new(config(&dir, 2)).unwrap());
    let zygotes = live_zygotes(&engine, 2).await;

    // A run held inside a tool call: its runner is a child of one shard's zygote.
    let (called, mut was_called) = mpsc::unbounded_channel();
    let open = Arc::new(Notify::new());
    let gate = Arc::new(Gate {
        called,
        open: Arc::clone(&open),
    });
    let req = RunRequest {
        program: "(+ 41 (tool/gate {}))".into(),
        tools: vec![ToolDecl {
            name: "gate".into(),
            signature: None,
            description: None,
        }],
        ..RunRequest::default()
    };
    let held = Arc::clone(&engine);
    let in_flight = tokio::spawn(async move { held.execute(req, gate).await });
    was_called.recv().await.unwrap();
    let serving: Vec<i32> = zygotes
        .iter()
        .copied()
        .filter(|z| !children_of(*z).is_empty())
        .collect();
    let [survivor] = serving[..] else {
        panic!("the held run's zygote among {zygotes:?}: {serving:?}")
    };
    let killed = zygotes.iter().copied().find(|z| *z != survivor).unwrap();
    // Our own unreaped child: signalling it by pid is safe.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(killed),
        nix::sys::signal::SIGKILL,
    )
    .unwrap();
    live_zygotes(&engine, 1).await;

    // Runs go on, half of them dealt to the dead shard, which starts a new zygote for them.
    for i in 0..6 {
        returns(&engine, &format!("(* {i} 2)"), i * 2).await;
    }
    let now = live_zygotes(&engine, 2).await;
    assert!(now.contains(&survivor) && !now.contains(&killed), "{now:?}");

    // The run on the surviving shard was never disturbed.
    open.notify_one();
    let step = in_flight.await.unwrap();
    assert_eq!(step.return_value, Some(Value::Int(42)), "{step:?}");
    // The dead zygote was reaped: no zombie among our children.
    assert!(!children().contains(&killed));
}

#[tokio::test]
async fn the_zygotes_knob_is_bounded_at_both_ends() {
    let dir = shipped_filter_dir("shards-bounds", "", 0);
    for bad in [0, MAX_ZYGOTES + 1] {
        match Engine::new(config(&dir, bad)) {
            Err(EngineError::Zygotes(n)) => assert_eq!(n, bad),
            other => panic!("zygotes = {bad}: {other:?}"),
        }
    }
    let engine = Engine::new(config(&dir, MAX_ZYGOTES)).unwrap();
    live_zygotes(&engine, MAX_ZYGOTES).await;
    returns(&engine, "(+ 20 22)", 42).await;
    drop(engine);

    let mut cold = config(&dir, 3);
    cold.spawn = SpawnMode::Cold;
    let engine = Engine::new(cold).unwrap();
    for i in 0..3 {
        returns(&engine, &format!("(+ {i} 1)"), i + 1).await;
    }
    assert_eq!(engine.zygote_pids(), Vec::<i32>::new());
}

#[test]
fn the_daemon_runs_the_configured_number_of_zygotes_and_refuses_a_bad_one() {
    let d = daemon_support::DaemonProcess::start("zygotes = 3");
    let pid = i32::try_from(d.child.id()).unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let zygotes: Vec<i32> = children_of(pid)
            .into_iter()
            .filter(|c| is_zygote(*c))
            .collect();
        if zygotes.len() == 3 {
            break;
        }
        assert!(Instant::now() < until, "{zygotes:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(d);

    let dir = temp_dir("shards-badconf");
    let conf = dir.join("ptc.toml");
    let text = daemon_support::config_text(&dir.join("ptc.sock"), "zygotes = 65");
    std::fs::write(&conf, text).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ptc"))
        .arg("serve")
        .arg("--config")
        .arg(&conf)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`zygotes`") && err.contains("between 1 and 64"),
        "{err}"
    );
}
