//! `landlock = "required"` is refused wherever it cannot be enforced: on a host without landlock
//! (a faked host report) the engine will not start the policy at all, and a runner whose `Ready`
//! says landlock is not in force is never used. The controls (the same runner under
//! `best_effort`, the same host with landlock) run, so the refusals come from landlock alone.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use ptc_shared::protocol::{LandlockStatus, RunnerToSupervisor};
use ptc_shared::{Step, Value};
use ptc_supervisor::engine::{Engine, EngineConfig, EngineError, NoTools, SpawnMode};
use ptc_supervisor::policy::PolicySource;
use std::sync::Arc;

#[test]
fn a_host_without_landlock_refuses_the_strict_policy_and_keeps_the_default() {
    let mut host = ptc_supervisor::check::host_report();
    host.seccomp = true;
    host.landlock_abi = 0;
    let policies = PolicySource::BuiltIn.load().unwrap();
    let config = EngineConfig::new(real_runner(), policies.clone());
    match Engine::with_host(config, host.clone()) {
        Err(EngineError::Unenforceable { policy, reasons }) => {
            assert_eq!(policy, "strict");
            assert!(
                reasons.iter().any(|r| r.contains("landlock")),
                "{reasons:?}"
            );
        }
        Err(e) => panic!("refused for another reason: {e}"),
        Ok(_) => panic!("strict requires landlock; this host has none"),
    }
    // Without `strict`, the same host runs `default` (landlock best_effort).
    let mut only_default = policies.clone();
    only_default.remove("strict");
    let mut config = EngineConfig::new(real_runner(), only_default);
    config.spawn = SpawnMode::Cold;
    assert!(Engine::with_host(config, host.clone()).is_ok());
    // And with landlock on the host, strict is accepted.
    host.landlock_abi = 1;
    let mut strict = policies;
    for p in strict.values_mut() {
        p.warm = 0;
        p.isolation.namespaces.clear();
    }
    assert!(Engine::with_host(EngineConfig::new(real_runner(), strict), host).is_ok());
}

async fn run_reporting(landlock_mode: &str, status: LandlockStatus) -> Step {
    let dir = temp_dir("landlock");
    std::fs::write(dir.join("f.json"), FILTER).unwrap();
    let text = format!(
        "[isolation]\nseccomp = \"f.json\"\nlandlock = \"{landlock_mode}\"\n[pool]\nwarm = 0\n"
    );
    std::fs::write(dir.join("default.toml"), text).unwrap();
    let policies = ptc_supervisor::policy::load_dir(&dir).unwrap();
    let done = RunnerToSupervisor::Finished(Box::new(Step {
        return_value: Some(Value::Int(7)),
        ..Step::default()
    }));
    let frames = [RunnerToSupervisor::Ready { landlock: status }, done];
    let runner = fake_runner(&dir, &frames, "cat $F0 >&3; rf; cat $F1 >&3");
    let mut host = ptc_supervisor::check::host_report();
    host.seccomp = true;
    host.landlock_abi = 3;
    let mut config = EngineConfig::new(&runner, policies);
    config.spawn = SpawnMode::Cold;
    let engine = Engine::with_host(config, host).unwrap();
    engine.execute(request("x"), Arc::new(NoTools)).await
}

#[tokio::test]
async fn a_runner_without_landlock_is_refused_when_landlock_is_required() {
    for status in [LandlockStatus::Unsupported, LandlockStatus::NotRequested] {
        let step = run_reporting("required", status).await;
        assert_eq!(step.return_value, None, "{status:?}: the runner was used");
        let fail = step.fail.unwrap();
        assert!(
            fail.message.contains("landlock is required"),
            "{status:?}: {}",
            fail.message
        );
    }
    for status in [LandlockStatus::Enforced, LandlockStatus::Partial] {
        let step = run_reporting("required", status).await;
        assert_eq!(
            step.return_value,
            Some(Value::Int(7)),
            "{status:?}: {:?}",
            step.fail
        );
    }
    let step = run_reporting("best_effort", LandlockStatus::Unsupported).await;
    assert_eq!(step.return_value, Some(Value::Int(7)), "{:?}", step.fail);
}
