//! The SubAgent loop with scripted LLMs and the real sandboxed engine: every path of a mission
//! (return, memory, feedback, budgets, retries, chaining, custom reasons, hidden fields).
#![allow(clippy::unwrap_used)]

mod agent_support;
mod common;

use agent_support::*;
use ptc_shared::{FailReason, Step, Value};
use ptc_supervisor::agent::LlmError;
use ptc_supervisor::engine::NoTools;
use std::sync::Arc;
use std::time::Duration;

#[tokio::test]
async fn one_turn_return_with_usage_and_trace() {
    let llm = Scripted::new(&[("main", code("(return {:count (count data/xs)})"))]);
    let agent = Agent::new("Count the xs.").signature("{count :int}");
    let step = mission(
        &llm,
        agent,
        json(serde_json::json!({"xs": [1, 2, 3]})),
        options(),
    )
    .await;
    assert_eq!(step.fail, None, "{step:?}");
    assert_eq!(
        step.return_value,
        Some(json(serde_json::json!({"count": 3})).keywordize())
    );
    assert_eq!((step.usage.turns, step.usage.requests), (1, 1));
    assert_eq!(step.usage.total_tokens, Some(15));
    assert_eq!(step.trace.len(), 1);
    let t = &step.trace[0];
    assert!(t.returned && t.parent.is_none() && t.agent == "main" && t.turn == 1);
    assert_eq!(
        t.program.as_deref(),
        Some("(return {:count (count data/xs)})")
    );
    let first = &llm.requests()[0];
    assert!(first.messages[0].content.contains("Count the xs."));
    assert!(first.messages[0].content.contains("data/xs: 3 items"));
    assert!(
        first.system.contains("\nmapcat - "),
        "the card is in the system prompt"
    );
}

#[tokio::test]
async fn memory_and_history_carry_across_turns() {
    let llm = Scripted::new(&[
        ("main", code("(def n 2)\n10")),
        ("main", code("(return [n memory/n mem/n *1])")),
    ]);
    let step = mission(&llm, Agent::new("Go."), Value::Nil, options()).await;
    assert_eq!(
        step.return_value,
        Some(json(serde_json::json!([2, 2, 2, 10]))),
        "{step:?}"
    );
    let fb = llm.last_message(1);
    assert!(
        fb.contains("Turn 1 of 5") && fb.contains("result: 10"),
        "{fb}"
    );
    assert!(
        fb.contains("stored in memory: :n") && fb.contains("<program_output>"),
        "{fb}"
    );
    assert_eq!(
        step.trace[0].memory_delta,
        json(serde_json::json!({"n": 2})).keywordize()
    );
}

#[tokio::test]
async fn a_return_that_does_not_match_is_fed_back_with_its_path() {
    let llm = Scripted::new(&[
        ("main", code("(return {:count \"three\"})")),
        ("main", code("(return {:count 3})")),
    ]);
    let agent = Agent::new("Count.").signature("{count :int}");
    let step = mission(&llm, agent, Value::Nil, options()).await;
    assert_eq!(
        step.return_value,
        Some(json(serde_json::json!({"count": 3})).keywordize())
    );
    assert_eq!(step.usage.turns, 2);
    let fb = llm.last_message(1);
    assert!(fb.contains("refused") && fb.contains("count"), "{fb}");
    assert_eq!(
        step.trace[0].fail.as_ref().unwrap().reason,
        FailReason::ValidationError
    );
}

#[tokio::test]
async fn no_code_block_or_two_blocks_cost_a_turn_each() {
    let llm = Scripted::new(&[
        ("main", text("I think the answer is 3.")),
        ("main", text("```clojure\n1\n```\nor\n```clojure\n2\n```")),
        ("main", code("(return 3)")),
    ]);
    let step = mission(&llm, Agent::new("Go."), Value::Nil, options()).await;
    assert_eq!(step.return_value, Some(Value::Int(3)));
    assert_eq!(step.usage.turns, 3);
    assert!(llm.last_message(1).contains("no ```clojure code block"));
    assert!(llm.last_message(2).contains("2 ```clojure code blocks"));
}

#[tokio::test]
async fn max_turns_exceeded_with_a_warning_before_the_last_turn() {
    let llm = Scripted::new(&[("main", code("1")), ("main", code("2"))]);
    let step = mission(&llm, Agent::new("Go.").max_turns(2), Value::Nil, options()).await;
    assert_eq!(
        step.reason(),
        Some(FailReason::MaxTurnsExceeded),
        "{step:?}"
    );
    assert!(
        llm.last_message(1)
            .contains("WARNING: the next turn is your last")
    );
    assert_eq!(step.trace.len(), 2);
}

#[tokio::test]
async fn the_turn_budget_spans_the_tree() {
    let llm = Scripted::new(&[
        ("main", code("1")),
        ("main", code("2")),
        ("main", code("3")),
    ]);
    let opts = Options {
        turn_budget: 2,
        ..options()
    };
    let step = mission(&llm, Agent::new("Go."), Value::Nil, opts).await;
    assert_eq!(
        step.reason(),
        Some(FailReason::TurnBudgetExhausted),
        "{step:?}"
    );
    assert_eq!((step.usage.turns, step.usage.requests), (2, 2));
}

#[tokio::test]
async fn the_token_budget_ends_the_mission() {
    let llm = Scripted::new(&[("main", code("1")), ("main", code("2"))]);
    let opts = Options {
        token_budget: Some(20),
        ..options()
    };
    let step = mission(&llm, Agent::new("Go."), Value::Nil, opts).await;
    assert_eq!(
        step.reason(),
        Some(FailReason::TokenBudgetExhausted),
        "{step:?}"
    );
    assert_eq!(step.usage.total_tokens, Some(30));
}

#[tokio::test]
async fn an_answer_over_the_size_limit_is_a_fatal_llm_error() {
    use ptc_shared::llm::MAX_ANSWER_BYTES;
    let program = "```clojure\n(return 1)\n```";
    let at_limit = format!("{program}{}", " ".repeat(MAX_ANSWER_BYTES - program.len()));
    assert_eq!(at_limit.len(), MAX_ANSWER_BYTES);
    let llm = Scripted::new(&[("main", text(&at_limit))]);
    let step = mission(&llm, Agent::new("Go."), Value::Nil, options()).await;
    assert_eq!(step.return_value, Some(Value::Int(1)), "{:?}", step.fail);
    let over = format!("{at_limit} ");
    let llm = Scripted::new(&[("main", text(&over)), ("main", code("(return 1)"))]);
    let step = mission(&llm, Agent::new("Go."), Value::Nil, options()).await;
    assert_eq!(step.reason(), Some(FailReason::LlmError), "{step:?}");
    let msg = &step.fail.as_ref().unwrap().message;
    assert!(msg.contains("over the limit of 262144"), "{msg}");
    // Not retried: a longer answer would not get shorter.
    assert_eq!(step.usage.requests, 1);
}

#[tokio::test]
async fn mission_timeout_kills_the_running_program() {
    let llm = Scripted::new(&[("main", code("(loop [] (recur))"))]);
    let opts = Options {
        mission_timeout: Some(Duration::from_millis(400)),
        ..options()
    };
    let started = std::time::Instant::now();
    let step = mission(
        &llm,
        Agent::new("Go.").turn_timeout_ms(10_000),
        Value::Nil,
        opts,
    )
    .await;
    assert_eq!(step.reason(), Some(FailReason::MissionTimeout), "{step:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(runners_gone().await, "a runner outlived the mission");
}

async fn runners_gone() -> bool {
    for _ in 0..200 {
        if common::runners().is_empty() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

#[tokio::test]
async fn cancelling_a_mission_mid_turn_kills_its_runner() {
    let llm = Scripted::new(&[("main", code("(loop [] (recur))"))]);
    let agent = Agent::new("Go.").turn_timeout_ms(10_000);
    let run = mission(&llm, agent, Value::Nil, options());
    tokio::select! {
        _ = run => panic!("the mission should still be running"),
        _ = async {
            // Wait until the runner is up and busy, then drop the mission.
            for _ in 0..300 {
                if !common::runners().is_empty() { break; }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        } => {}
    }
    assert!(
        runners_gone().await,
        "the cancelled mission's runner is still alive"
    );
}

#[tokio::test]
async fn retryable_llm_errors_are_retried_without_spending_turns() {
    let busy = || Err(LlmError::Retryable("429 rate limited".into()));
    let llm = Scripted::new(&[
        ("main", busy()),
        ("main", busy()),
        ("main", code("(return 1)")),
    ]);
    let step = mission(&llm, Agent::new("Go."), Value::Nil, options()).await;
    assert_eq!(step.return_value, Some(Value::Int(1)), "{step:?}");
    assert_eq!((step.usage.turns, step.usage.requests), (1, 3));

    let llm = Scripted::new(&[("main", busy()), ("main", busy()), ("main", busy())]);
    let step = mission(&llm, Agent::new("Go."), Value::Nil, options()).await;
    assert_eq!(step.reason(), Some(FailReason::LlmError));
    assert_eq!(step.usage.requests, 3);
    assert!(step.fail.unwrap().message.contains("3 attempt(s)"));

    let llm = Scripted::new(&[("main", Err(LlmError::Fatal("401 bad key".into())))]);
    let step = mission(&llm, Agent::new("Go."), Value::Nil, options()).await;
    assert_eq!(step.reason(), Some(FailReason::LlmError));
    assert_eq!(step.usage.requests, 1, "a fatal error is not retried");
}

#[tokio::test]
async fn a_missing_placeholder_is_a_template_error_before_any_llm_call() {
    let llm = Scripted::new(&[("main", code("(return 1)"))]);
    let agent = Agent::new("Find {{user}} in {{city}}.");
    let step = mission(
        &llm,
        agent,
        json(serde_json::json!({"user": "ann"})),
        options(),
    )
    .await;
    assert_eq!(step.reason(), Some(FailReason::TemplateError));
    assert!(step.fail.unwrap().message.contains("city"));
    assert!(llm.requests().is_empty());
}

#[tokio::test]
async fn chaining_a_step_passes_its_return_and_a_failed_one_is_refused() {
    let llm = Scripted::new(&[("main", code("(return (* 2 data/count))"))]);
    let prev = Step {
        return_value: Some(json(serde_json::json!({"count": 21}))),
        signature: Some("{count :int}".into()),
        ..Step::default()
    };
    let agent = Agent::new("Double {{count}}.").signature(":int");
    let step = mission_with(
        &llm,
        agent,
        Input::Step(Box::new(prev)),
        options(),
        Arc::new(NoTools),
    )
    .await;
    assert_eq!(step.return_value, Some(Value::Int(42)), "{step:?}");
    assert!(llm.requests()[0].messages[0].content.contains("Double 21."));

    let failed = Step::failed(
        ptc_shared::Fail::new(FailReason::Timeout, "too slow"),
        Value::Nil,
        Vec::new(),
    );
    let llm = Scripted::new(&[]);
    let step = mission_with(
        &llm,
        Agent::new("x"),
        Input::Step(Box::new(failed)),
        options(),
        Arc::new(NoTools),
    )
    .await;
    assert_eq!(step.reason(), Some(FailReason::ChainedFailure));
    assert!(llm.requests().is_empty());
}

#[tokio::test]
async fn a_custom_fail_reason_ends_the_mission_and_cannot_forge_a_system_reason() {
    let llm = Scripted::new(&[(
        "main",
        code("(fail {:reason :not_found :message \"User 123\"})"),
    )]);
    let step = mission(&llm, Agent::new("Find."), Value::Nil, options()).await;
    let f = step.fail.clone().unwrap();
    assert_eq!(
        (f.reason, f.reason_name(), f.message.as_str()),
        (FailReason::Failed, "not_found", "User 123")
    );
    let j = step.to_json();
    assert_eq!(j["fail"]["reason"], "not_found");
    assert_eq!(j["fail"]["kind"], "program");

    let llm = Scripted::new(&[("main", code("(fail {:reason :max_turns_exceeded})"))]);
    let step = mission(&llm, Agent::new("Find."), Value::Nil, options()).await;
    let f = step.fail.unwrap();
    assert_eq!((f.reason, f.reason_name()), (FailReason::Failed, "failed"));
}

#[tokio::test]
async fn ctx_fail_holds_the_previous_turns_failure() {
    let llm = Scripted::new(&[
        ("main", code("(/ 1 0)")),
        (
            "main",
            code("(return [(:reason ctx/fail) (string? (:message ctx/fail))])"),
        ),
    ]);
    let step = mission(&llm, Agent::new("Go."), Value::Nil, options()).await;
    let expected = Value::Vector(vec![Value::keyword("eval_error"), Value::Bool(true)]);
    assert_eq!(step.return_value, Some(expected), "{step:?}");
    assert!(llm.last_message(1).contains("error: eval_error"));
}

#[tokio::test]
async fn hidden_fields_are_usable_but_absent_from_every_prompt() {
    let llm = Scripted::new(&[
        ("main", code("(def r (first data/rows))\nr")),
        (
            "main",
            code("(return {:count (count data/rows) :_ids [(:_secret r) data/_token]})"),
        ),
    ]);
    let ctx = json(serde_json::json!({
        "rows": [{"id": 1, "_secret": "XSECRETX"}], "_token": "XTOKENX"}));
    let agent = Agent::new("Count.").signature("{count :int, _ids [:string]}");
    let step = mission(&llm, agent, ctx, options()).await;
    let ret = step.return_value.clone().unwrap();
    assert_eq!(
        ret,
        json(serde_json::json!({"count": 1, "_ids": ["XSECRETX", "XTOKENX"]})).keywordize(),
        "{step:?}"
    );
    let all = llm.all_prompt_text();
    assert!(
        !all.contains("XSECRETX") && !all.contains("XTOKENX"),
        "a hidden value leaked"
    );
    let fb = llm.last_message(1);
    assert!(fb.contains("result: {\"id\" 1}"), "{fb}");
}

#[tokio::test]
async fn reserved_and_unknown_names_are_refused_up_front() {
    let llm = Scripted::new(&[]);
    let decl = |n: &str| ptc_shared::protocol::ToolDecl {
        name: n.into(),
        signature: None,
        description: None,
    };
    let step = mission(
        &llm,
        Agent::new("x").tool(decl("return")),
        Value::Nil,
        options(),
    )
    .await;
    assert_eq!(step.reason(), Some(FailReason::ReservedToolName));
    let child = Agent::new("y").name("fail").description("d");
    let step = mission(&llm, Agent::new("x").agent(child), Value::Nil, options()).await;
    assert_eq!(step.reason(), Some(FailReason::ReservedToolName));
    let child = Agent::new("y").name("helper");
    let step = mission(&llm, Agent::new("x").agent(child), Value::Nil, options()).await;
    assert_eq!(
        step.reason(),
        Some(FailReason::InvalidRequest),
        "a nested agent needs a description"
    );
    assert!(llm.requests().is_empty());
}

#[tokio::test]
async fn a_catalog_tool_is_shown_but_not_callable() {
    let llm = Scripted::new(&[
        ("main", code("(tool/search {:q \"x\"})")),
        ("main", code("(return :planned)")),
    ]);
    let search = ptc_shared::protocol::ToolDecl {
        name: "search".into(),
        signature: Some("(q :string) -> [:string]".into()),
        description: Some("Full-text search".into()),
    };
    let agent = Agent::new("Plan.").catalog_tool(search);
    let step = mission(&llm, agent, Value::Nil, options()).await;
    assert_eq!(
        step.return_value,
        Some(Value::keyword("planned")),
        "{step:?}"
    );
    let first = &llm.requests()[0].messages[0].content;
    assert!(
        first.contains("planning only") && first.contains("search(q :string)"),
        "{first}"
    );
    let fb = llm.last_message(1);
    assert!(
        fb.contains("tool_not_found") && fb.contains("catalog for planning only"),
        "{fb}"
    );
}

#[tokio::test]
async fn a_judgment_agent_answers_in_one_call() {
    let llm = Scripted::new(&[("main", code("(return {:ok true :why \"fine\"})"))]);
    let agent = Agent::new("Is {{text}} polite?")
        .signature("{ok :bool, why :string}")
        .max_turns(1);
    let step = mission(
        &llm,
        agent,
        json(serde_json::json!({"text": "hi"})),
        options(),
    )
    .await;
    assert_eq!(step.fail, None, "{step:?}");
    assert_eq!((step.usage.turns, step.usage.requests), (1, 1));
    assert!(!llm.requests()[0].messages[0].content.contains("# Tools"));
}

#[tokio::test]
async fn the_llm_sees_the_retry_delay_as_exponential() {
    // 3 attempts with a 40 ms base wait 40 + 80 ms before the third.
    let busy = || Err(LlmError::Retryable("503".into()));
    let llm = Scripted::new(&[
        ("main", busy()),
        ("main", busy()),
        ("main", code("(return 1)")),
    ]);
    let mut opts = options();
    opts.retry.base = Duration::from_millis(40);
    let started = std::time::Instant::now();
    let step = mission(&llm, Agent::new("Go."), Value::Nil, opts).await;
    assert_eq!(step.return_value, Some(Value::Int(1)));
    assert!(started.elapsed() >= Duration::from_millis(120));
}

#[tokio::test]
async fn a_turn_past_its_timeout_is_fed_back_and_the_mission_goes_on() {
    let llm = Scripted::new(&[
        ("main", code("(loop [] (recur))")),
        ("main", code("(return (:reason ctx/fail))")),
    ]);
    let agent = Agent::new("Go.").turn_timeout_ms(300);
    let step = mission(&llm, agent, Value::Nil, options()).await;
    assert_eq!(
        step.return_value,
        Some(Value::keyword("timeout")),
        "{step:?}"
    );
    assert!(llm.last_message(1).contains("error: timeout"));
}

#[tokio::test]
async fn old_turns_are_compacted_past_keep_turns() {
    let llm = Scripted::new(&[
        ("main", code("(println \"first-output\") 1")),
        ("main", code("2")),
        ("main", code("(return 3)")),
    ]);
    let opts = Options {
        keep_turns: 1,
        ..options()
    };
    let step = mission(&llm, Agent::new("Go."), Value::Nil, opts).await;
    assert_eq!(step.return_value, Some(Value::Int(3)));
    let third = &llm.requests()[2];
    assert_eq!(third.messages.len(), 5, "first message + two exchanges");
    assert_eq!(third.messages[1].content, "(an earlier program, compacted)");
    assert!(third.messages[2].content.ends_with("(details compacted)"));
    assert!(!third.messages[2].content.contains("first-output"));
    assert!(
        third.messages[4].content.contains("<program_output>"),
        "the last exchange is whole"
    );
}

#[tokio::test]
async fn a_turn_timeout_looser_than_the_policy_is_not_kept_silently() {
    // The test engine's default policy allows 1000 ms; 60 s is looser: the turn runs under the
    // policy's limit (a program that loops ends in `timeout` after about a second, not a minute)
    // and the Step says so.
    let llm = Scripted::new(&[("main", code("(return 1)"))]);
    let step = mission(
        &llm,
        Agent::new("Go.").turn_timeout_ms(60_000),
        Value::Nil,
        options(),
    )
    .await;
    assert_eq!(step.return_value, Some(Value::Int(1)), "{step:?}");
    assert!(
        step.warnings
            .iter()
            .any(|w| w.contains("turn timeout of 60000 ms is looser than the policy's")),
        "{:?}",
        step.warnings
    );
    // Within the policy: no warning.
    let llm = Scripted::new(&[("main", code("(return 1)"))]);
    let step = mission(
        &llm,
        Agent::new("Go.").turn_timeout_ms(500),
        Value::Nil,
        options(),
    )
    .await;
    assert!(step.warnings.is_empty(), "{:?}", step.warnings);
}
