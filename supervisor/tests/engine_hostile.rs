//! Programs written to crash the interpreter get their typed outcome in a real sandboxed runner
//! too, never `runner_crashed` (the same cases run in-process in runner/tests/hostile.rs).
#![allow(clippy::unwrap_used)]

mod common;
#[path = "../../runner/tests/support/hostile.rs"]
mod hostile;

use common::*;
use hostile::Outcome;
use ptc_shared::{Step, Value};
use ptc_supervisor::engine::{Engine, EngineConfig, NoTools};
use ptc_supervisor::policy::load_dir;
use std::sync::Arc;

/// The shipped default policy with debug-build-friendly time limits (the cases are about depth
/// and memory, not time): the heap budget and the stack stay as shipped.
fn engine() -> Engine {
    let dir = temp_dir("hostile");
    let shipped = shipped_policies();
    std::fs::create_dir_all(dir.join("seccomp")).unwrap();
    for e in std::fs::read_dir(shipped.join("seccomp")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join("seccomp").join(e.file_name())).unwrap();
    }
    let text = std::fs::read_to_string(shipped.join("default.toml")).unwrap();
    let text = text
        .replace("timeout_ms = 1000", "timeout_ms = 60000")
        .replace("cpu_ms = 1000", "cpu_ms = 60000")
        .replace("warm = 2", "warm = 0");
    std::fs::write(dir.join("default.toml"), text).unwrap();
    Engine::new(EngineConfig::new(real_runner(), load_dir(&dir).unwrap())).unwrap()
}

fn outcome(step: Step) -> Outcome {
    match (step.return_value, step.fail) {
        (Some(v), None) => Outcome::Ok(ptc_shared::value::pr_str(&v)),
        (_, Some(f)) => {
            let limit = match f.details.get_key(&Value::string("limit")) {
                Some(Value::Str(s)) => Some(s.clone()),
                _ => None,
            };
            Outcome::Fail(f.reason, limit)
        }
        (None, None) => panic!("a step with neither result nor fail"),
    }
}

#[tokio::test]
async fn every_hostile_program_gets_its_typed_outcome_sandboxed() {
    let engine = engine();
    for (name, src, want) in hostile::cases() {
        let step = engine.execute(request(&src), Arc::new(NoTools)).await;
        let fail = format!("{:?}", step.fail);
        assert_eq!(outcome(step), want, "{name}: {fail}");
    }
}

/// `Uid:` and `CapEff:` of a process, from /proc.
fn uid_and_caps(pid: i32) -> Option<(String, String)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
    };
    Some((field("Uid:")?, field("CapEff:")?))
}

/// A root supervisor whose policy names no `run_as` still never leaves a runner root: it runs
/// as `DEFAULT_RUN_AS` with no effective capability. Not root: the runner keeps our uid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_never_keeps_roots_capabilities() {
    let engine = Arc::new(engine());
    let busy = {
        let engine = Arc::clone(&engine);
        tokio::spawn(async move {
            let req = request("(loop [i 0] (if (< i 100000000) (recur (inc i)) i))");
            engine.execute(req, Arc::new(NoTools)).await
        })
    };
    let mut seen = None;
    for _ in 0..500 {
        // A forked runner is root for a moment before it hardens: wait for the switched one.
        seen = runners()
            .into_iter()
            .filter_map(uid_and_caps)
            .find(|(uid, _)| !uid.starts_with("0 "));
        if seen.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    busy.abort();
    let (uid, caps) = seen.expect("no hardened runner seen");
    if nix::unistd::Uid::effective().is_root() {
        let (u, _) = ptc_supervisor::check::DEFAULT_RUN_AS;
        assert_eq!(uid, format!("{u} {u} {u} {u}"));
    } else {
        eprintln!("NOT ROOT: the runner keeps this uid; only the capability half is checked");
    }
    assert_eq!(caps, "0000000000000000");
}
