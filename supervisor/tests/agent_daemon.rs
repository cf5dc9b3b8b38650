//! Missions through the client library, embedded and through a real daemon on a temp socket:
//! the same missions give the same Steps (timings aside); LLM errors and the loop's limits cross
//! the wire typed; cancel and disconnect mid-mission kill the runner; a nested mission runs on
//! its root's admission slot (one runner slot in all is enough).
#![allow(clippy::unwrap_used)]

mod agent_support;
mod daemon_support;

use agent_support::{Answer, Scripted, as_llm, code, text};
use daemon_support::common;
use daemon_support::{Raw, TestDaemon, busy_runner, gone_within};
use ptc_shared::client_protocol::{ClientToServer, ServerToClient};
use ptc_shared::llm::{LlmError, LlmNames, LlmResponse, Retry};
use ptc_shared::mission::{
    AgentSpec, MAX_AGENT_TREE_DEPTH, MAX_TURN_BUDGET, MissionInput, MissionOptions, MissionRequest,
};
use ptc_shared::{FailReason, Step, Value};
use ptc_supervisor::client::{Agent, BlockingClient, Client, Embedded, Tool};
use ptc_supervisor::engine::EngineConfig;
use ptc_supervisor::policy::load_dir;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn fast_retry() -> Retry {
    Retry {
        attempts: 3,
        base: Duration::from_millis(1),
    }
}

/// One mission: its agent (without LLM), its context, and the LLM's script.
struct Case {
    name: &'static str,
    agent: fn() -> Agent,
    context: serde_json::Value,
    script: Vec<(&'static str, Answer)>,
}

fn orders() -> Tool {
    Tool::new("orders", |args: Value| async move {
        let region = args
            .to_json()
            .ok()
            .and_then(|j| j["region"].as_str().map(String::from));
        match region.as_deref() {
            Some("eu") => Ok(json!([{"id": 1}, {"id": 2}, {"id": 3}])),
            _ => Err(format!("no region in {args:?}")),
        }
    })
    .signature("(region :string) -> [{id :int}]")
    .description("Open orders of a region")
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "one-turn return with a tool call",
            agent: || {
                Agent::new("Count the open orders in {{region}}.")
                    .signature("(region :string) -> {count :int}")
                    .tool(orders())
            },
            context: json!({"region": "eu"}),
            script: vec![(
                "main",
                code("(return {:count (count (tool/orders {:region data/region}))})"),
            )],
        },
        Case {
            name: "memory across turns",
            agent: || Agent::new("Go.").signature("{n :int}"),
            context: json!({}),
            script: vec![
                ("main", code("(def base 20)\n(println \"set\")\nbase")),
                ("main", code("(def n (+ base 1))")),
                ("main", code("(return {:n (* 2 memory/n)})")),
            ],
        },
        Case {
            name: "a nested agent",
            agent: || {
                Agent::new("Solve.").signature("{n :int}").agent(
                    Agent::new("Fetch {{q}}.")
                        .name("fetcher")
                        .description("Fetches a number")
                        .signature("(q :string) -> {v :int}"),
                )
            },
            context: json!({}),
            script: vec![
                ("main", code("(return {:n (:v (tool/fetcher {:q \"x\"}))})")),
                ("main/fetcher", code("(return {:v 21})")),
            ],
        },
        Case {
            name: "an LLM error retried, then an answer",
            agent: || Agent::new("Go.").signature(":int").retry(fast_retry()),
            context: json!({}),
            script: vec![
                ("main", Err(LlmError::Retryable("429 rate limited".into()))),
                ("main", text("no code here")),
                ("main", code("(return 7)")),
            ],
        },
        Case {
            name: "a fatal LLM error",
            agent: || Agent::new("Go.").retry(fast_retry()),
            context: json!({}),
            script: vec![("main", Err(LlmError::Fatal("401 bad key".into())))],
        },
        Case {
            name: "retries exhausted",
            agent: || Agent::new("Go.").retry(fast_retry()),
            context: json!({}),
            script: vec![
                ("main", Err(LlmError::Retryable("503".into()))),
                ("main", Err(LlmError::Retryable("503".into()))),
                ("main", Err(LlmError::Retryable("503".into()))),
            ],
        },
        Case {
            name: "a custom fail reason",
            agent: || Agent::new("Find user 123."),
            context: json!({}),
            script: vec![(
                "main",
                code("(fail {:reason :not_found :message \"User 123\"})"),
            )],
        },
        Case {
            name: "a turn budget over the limit",
            agent: || Agent::new("Go.").turn_budget(MAX_TURN_BUDGET + 1),
            context: json!({}),
            script: vec![],
        },
        Case {
            name: "max_turns",
            agent: || Agent::new("Go.").max_turns(2),
            context: json!({}),
            script: vec![("main", code("1")), ("main", code("2"))],
        },
    ]
}

/// Runs `case` on `client`; returns the Step and the requests its LLM saw.
async fn run(client: &Client, case: &Case) -> (Step, Vec<ptc_shared::llm::LlmRequest>) {
    let llm = Scripted::new(&case.script);
    let agent = (case.agent)().llm(as_llm(&llm));
    let step = match client.delegate(agent, case.context.clone()).await {
        Ok(s) | Err(s) => s,
    };
    (step, llm.requests())
}

/// The Step without what depends on the clock or the machine.
fn timeless(mut s: Step) -> Step {
    s.usage.duration_ms = 0;
    s.usage.cpu_ms = 0;
    s.usage.memory_bytes = 0;
    for c in &mut s.tool_calls {
        c.duration_us = 0;
    }
    for e in &mut s.trace {
        e.usage.llm_ms = 0;
        e.usage.exec_ms = 0;
        for c in &mut e.tool_calls {
            c.duration_us = 0;
        }
    }
    s
}

fn embedded() -> Client {
    let mut policies = load_dir(&common::shipped_policies()).unwrap();
    for p in policies.values_mut() {
        p.warm = 0;
    }
    Client::embedded_with(EngineConfig::new(common::real_runner(), policies)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_missions_give_the_same_steps_embedded_and_through_a_daemon() {
    let d = TestDaemon::start("").await;
    let remote = Client::connect(&d.socket).await.unwrap();
    let local = embedded();
    for case in cases() {
        let (a, a_log) = run(&local, &case).await;
        let (b, b_log) = run(&remote, &case).await;
        assert_eq!(
            a_log, b_log,
            "{}: the LLM saw different requests",
            case.name
        );
        assert_eq!(timeless(a.clone()), timeless(b), "{}", case.name);
        check(case.name, &a);
    }
    d.stop().await;
}

/// What each case must have given (the same in both modes, checked once).
fn check(name: &str, s: &Step) {
    let reason = s.reason();
    let msg = s
        .fail
        .as_ref()
        .map(|f| f.message.clone())
        .unwrap_or_default();
    match name {
        "one-turn return with a tool call" => {
            assert_eq!(
                s.return_value.as_ref().map(|v| v.to_json().unwrap()),
                Some(json!({"count": 3}))
            );
            assert_eq!(s.trace[0].tool_calls.len(), 1);
        }
        "memory across turns" => {
            assert_eq!(
                s.return_value.as_ref().map(|v| v.to_json().unwrap()),
                Some(json!({"n": 42}))
            );
            assert_eq!(s.usage.turns, 3);
        }
        "a nested agent" => {
            assert_eq!(
                s.return_value.as_ref().map(|v| v.to_json().unwrap()),
                Some(json!({"n": 21}))
            );
            assert!(
                s.trace
                    .iter()
                    .any(|e| e.agent == "main/fetcher" && e.depth == 1)
            );
        }
        "an LLM error retried, then an answer" => {
            assert_eq!(s.return_value, Some(Value::Int(7)), "{msg}");
            assert_eq!((s.usage.turns, s.usage.requests), (2, 3));
        }
        "a fatal LLM error" => {
            assert_eq!(reason, Some(FailReason::LlmError));
            assert!(
                msg.contains("401 bad key") && msg.contains("1 attempt"),
                "{msg}"
            );
        }
        "retries exhausted" => {
            assert_eq!(reason, Some(FailReason::LlmError));
            assert_eq!(s.usage.requests, 3, "{msg}");
        }
        "a custom fail reason" => {
            assert_eq!(reason, Some(FailReason::Failed));
            assert_eq!(s.fail.as_ref().unwrap().reason_name(), "not_found");
            assert!(msg.contains("User 123"), "{msg}");
        }
        "a turn budget over the limit" => {
            assert_eq!(reason, Some(FailReason::InvalidRequest));
            assert!(msg.contains("turn_budget"), "{msg}");
        }
        "max_turns" => assert_eq!(reason, Some(FailReason::MaxTurnsExceeded)),
        other => panic!("unchecked case {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_model_is_refused_before_any_llm_call_in_both_modes() {
    let d = TestDaemon::start("").await;
    let remote = Client::connect(&d.socket).await.unwrap();
    for client in [embedded(), remote] {
        let llm = Scripted::new(&[("main", code("(return 1)"))]);
        let agent = Agent::new("Go.")
            .model("huge")
            .model_llm("small", as_llm(&llm));
        let step = client.delegate(agent, Value::Nil).await.unwrap_err();
        assert_eq!(
            step.reason(),
            Some(FailReason::ModelNotFound),
            "{:?}",
            step.fail
        );
        assert!(llm.requests().is_empty());
        // The named model answers.
        let agent = Agent::new("Go.")
            .model("small")
            .model_llm("small", as_llm(&llm));
        let step = client.delegate(agent, Value::Nil).await.unwrap();
        assert_eq!(step.return_value, Some(Value::Int(1)));
        assert_eq!(llm.requests()[0].model.as_deref(), Some("small"));
    }
    d.stop().await;
}

/// A mission whose one program spins: the runner to kill.
fn spinning() -> (Agent, Arc<Scripted>) {
    let llm = Scripted::new(&[("main", code("(loop [] (recur))"))]);
    (Agent::new("Go.").llm(as_llm(&llm)), llm)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_mission_through_the_daemon_kills_its_runner() {
    let d = TestDaemon::start("").await;
    let c = Client::connect(&d.socket).await.unwrap();
    let (agent, _llm) = spinning();
    let handle = c.start_mission(agent, Value::Nil);
    let cancel = handle.canceller();
    let waiter = tokio::spawn(handle);
    let pid = busy_runner(Duration::from_millis(800))
        .await
        .expect("no busy runner");
    cancel();
    let step = waiter.await.unwrap().unwrap_err();
    assert_eq!(
        step.reason(),
        Some(FailReason::Cancelled),
        "{:?}",
        step.fail
    );
    assert!(gone_within(pid, Duration::from_millis(500)).await.is_some());
    // The connection still serves missions.
    let llm = Scripted::new(&[("main", code("(return 5)"))]);
    let step = c
        .delegate(Agent::new("Go.").llm(as_llm(&llm)), Value::Nil)
        .await;
    assert_eq!(step.unwrap().return_value, Some(Value::Int(5)));
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnecting_mid_mission_kills_its_runner() {
    let d = TestDaemon::start("").await;
    let c = Client::connect(&d.socket).await.unwrap();
    let (agent, _llm) = spinning();
    let running = tokio::spawn({
        let c = c.clone();
        async move { c.delegate(agent, Value::Nil).await }
    });
    let pid = busy_runner(Duration::from_millis(800))
        .await
        .expect("no busy runner");
    running.abort();
    drop(c);
    let took = gone_within(pid, Duration::from_millis(500)).await;
    assert!(took.is_some(), "runner alive 500 ms after the disconnect");
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nested_mission_runs_on_its_roots_single_slot() {
    // One runner slot in all, no queue: a child that had to be admitted on its own would be
    // refused `busy` while its parent holds the slot.
    let d = TestDaemon::start("max_runners = 1\nmax_queue = 0\nper_uid_max = 1\nper_uid_queue = 0")
        .await;
    let c = Client::connect(&d.socket).await.unwrap();
    let llm = Scripted::new(&[
        ("main", code("(return {:n (:v (tool/fetcher {:q \"x\"}))})")),
        ("main/fetcher", code("(return {:v (:v (tool/deeper {}))})")),
        ("main/fetcher/deeper", code("(return {:v 3})")),
    ]);
    let deeper = Agent::new("Deeper.")
        .name("deeper")
        .description("d")
        .signature("{v :int}");
    let fetcher = Agent::new("Fetch {{q}}.")
        .name("fetcher")
        .description("Fetches")
        .signature("(q :string) -> {v :int}")
        .agent(deeper);
    let agent = Agent::new("Solve.")
        .signature("{n :int}")
        .agent(fetcher)
        .llm(as_llm(&llm));
    let step = c.delegate(agent, Value::Nil).await;
    let step = step.unwrap_or_else(|s| panic!("{:?}", s.fail));
    assert_eq!(
        step.return_value.map(|v| v.to_json().unwrap()),
        Some(json!({"n": 3}))
    );
    d.stop().await;
}

#[test]
fn the_blocking_client_delegates_too() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let d = rt.block_on(TestDaemon::start(""));
    let c = BlockingClient::connect(&d.socket).unwrap();
    let llm = Scripted::new(&[
        ("main", code("(def x 4)")),
        ("main", code("(return (* x 10))")),
    ]);
    let agent = Agent::new("Go.").signature(":int").llm(as_llm(&llm));
    let step = c.delegate(agent, json!({})).unwrap();
    assert_eq!(
        (step.return_value, step.usage.turns),
        (Some(Value::Int(40)), 2)
    );
    rt.block_on(d.stop());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_policy_in_a_mission_tree_must_be_allowed_for_the_uid() {
    let uid = nix::unistd::geteuid().as_raw();
    let d = TestDaemon::start(&format!("[policies_by_uid]\n{uid} = [\"strict\"]")).await;
    let c = Client::connect(&d.socket).await.unwrap();
    let llm = Scripted::new(&[("main", code("(return 1)"))]);
    // The child runs under the default policy, which this uid may not use.
    let child = Agent::new("c").name("c").description("d");
    let agent = Agent::new("Go.")
        .policy("strict")
        .agent(child)
        .llm(as_llm(&llm));
    let step = c.delegate(agent.clone(), Value::Nil).await.unwrap_err();
    assert_eq!(
        step.reason(),
        Some(FailReason::PermissionDenied),
        "{:?}",
        step.fail
    );
    assert!(llm.requests().is_empty());
    let child = Agent::new("c").name("c").description("d").policy("strict");
    let agent = Agent::new("Go.")
        .policy("strict")
        .agent(child)
        .llm(as_llm(&llm));
    let step = c.delegate(agent, Value::Nil).await.unwrap();
    assert_eq!(step.return_value, Some(Value::Int(1)));
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_frames_llm_calls_answered_by_hand_stray_results_and_deep_trees() {
    let d = TestDaemon::start("").await;
    let socket = d.socket.clone();
    tokio::task::spawn_blocking(move || {
        let mut r = Raw::connect(&socket);
        assert!(matches!(r.hello(), ServerToClient::Welcome { .. }));
        // A result for a call that was never made is ignored.
        r.send(&ClientToServer::LlmResult {
            request_id: 9,
            call_id: 9,
            result: Ok(LlmResponse::text("stray")),
        });
        let names = LlmNames {
            default: true,
            any_model: true,
            named: Vec::new(),
        };
        let request = |agent: AgentSpec| MissionRequest {
            agent,
            input: MissionInput::default(),
            options: MissionOptions::default(),
            models: names.clone(),
        };
        r.send(&ClientToServer::Mission {
            id: 1,
            request: Box::new(request(AgentSpec::new("Go."))),
        });
        let Some(ServerToClient::LlmCall {
            request_id: 1,
            call_id,
            request: asked,
        }) = r.recv()
        else {
            panic!("no LlmCall");
        };
        assert_eq!((asked.turn, asked.agent.as_str()), (1, "main"));
        assert!(asked.messages[0].content.contains("Go."));
        r.send(&ClientToServer::LlmResult {
            request_id: 1,
            call_id,
            result: Err(LlmError::Fatal("no credit".into())),
        });
        match r.recv() {
            Some(ServerToClient::Step {
                request_id: 1,
                step,
            }) => {
                assert_eq!(step.reason(), Some(FailReason::LlmError));
                assert!(step.fail.unwrap().message.contains("no credit"));
            }
            other => panic!("expected the mission's Step, got {other:?}"),
        }
        // A tree deeper than the limit does not decode: the connection is refused.
        let mut deep = AgentSpec::new("leaf");
        for _ in 0..MAX_AGENT_TREE_DEPTH {
            deep = AgentSpec::new("x").agent(deep);
        }
        r.send(&ClientToServer::Mission {
            id: 2,
            request: Box::new(request(deep)),
        });
        match r.recv() {
            Some(ServerToClient::Refused { reason, message }) => {
                assert_eq!(reason, FailReason::InvalidRequest);
                assert!(message.contains("deeper than 16"), "{message}");
            }
            other => panic!("expected Refused, got {other:?}"),
        }
        assert!(r.recv().is_none());
    })
    .await
    .unwrap();
    d.stop().await;
}
