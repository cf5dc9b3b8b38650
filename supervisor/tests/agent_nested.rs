//! Nested agents with scripted LLMs on the real engine: a three-level mission and its trace
//! tree, models by name or inherited, depth limits, and a child's failure as its parent sees it.
#![allow(clippy::unwrap_used)]

mod agent_support;
mod common;

use agent_support::*;
use ptc_shared::{FailReason, Step, Value};
use ptc_supervisor::agent::{LlmSet, run_mission};
use ptc_supervisor::engine::NoTools;
use std::sync::Arc;

fn three_levels() -> Agent {
    let fetcher = Agent::new("Fetch {{q}}.")
        .name("fetcher")
        .description("Fetches a number for a query")
        .signature("(q :string) -> {v :int, _raw :string}");
    let researcher = Agent::new("Research {{topic}}.")
        .name("researcher")
        .description("Researches a topic")
        .signature("(topic :string) -> {n :int}")
        .model("small")
        .turn_timeout_ms(20_000)
        .agent(fetcher);
    Agent::new("Solve.")
        .signature("{n :int}")
        .turn_timeout_ms(30_000)
        .agent(researcher)
}

async fn run(set: LlmSet, agent: Agent, options: Options) -> Step {
    run_mission(
        engine(),
        set,
        Arc::new(NoTools),
        request(agent, Input::Context(Value::Nil), options),
    )
    .await
}

#[tokio::test]
async fn a_three_level_mission_keeps_its_trace_tree() {
    let big = Scripted::new(&[
        ("main", code("(def r (tool/researcher {:topic \"x\"}))\nr")),
        ("main", code("(return r)")),
    ]);
    let small = Scripted::new(&[
        (
            "main/researcher",
            code("(return {:n (* 2 (:v (tool/fetcher {:q \"y\"})))})"),
        ),
        (
            "main/researcher/fetcher",
            code("(return {:v 21 :_raw \"XRAWX\"})"),
        ),
    ]);
    let set = LlmSet::new(as_llm(&big)).with_model("small", as_llm(&small));
    let step = run(set, three_levels(), options()).await;
    assert_eq!(step.fail, None, "{step:?}");
    assert_eq!(
        step.return_value,
        Some(json(serde_json::json!({"n": 42})).keywordize())
    );
    assert_eq!((step.usage.turns, step.usage.requests), (4, 4));
    assert_eq!(step.usage.total_tokens, Some(60));

    // The tree: main#1 calls researcher, whose turn calls fetcher; ids grow as things start.
    let t = &step.trace;
    assert_eq!(t.len(), 4, "{t:#?}");
    let by_agent = |a: &str| t.iter().find(|e| e.agent == a).unwrap();
    let (main1, res, fet) = (
        by_agent("main"),
        by_agent("main/researcher"),
        by_agent("main/researcher/fetcher"),
    );
    assert_eq!((main1.parent, main1.depth, main1.turn), (None, 0, 1));
    assert_eq!((res.parent, res.depth), (Some(main1.id), 1));
    assert_eq!((fet.parent, fet.depth), (Some(res.id), 2));
    assert!(main1.id < res.id && res.id < fet.id);
    assert_ne!(res.run, main1.run);
    assert!(t.windows(2).all(|w| w[0].id < w[1].id), "sorted by id");

    // Models: the researcher names `small`, the fetcher inherits it; main uses the default.
    assert_eq!(res.model.as_deref(), Some("small"));
    assert_eq!(fet.model.as_deref(), Some("small"));
    assert_eq!(big.requests().len(), 2);
    assert_eq!(small.requests().len(), 2);

    // The parent's prompts show the child's tools and never its hidden field.
    assert!(
        small.requests()[0].messages[0]
            .content
            .contains("fetcher(q :string)")
    );
    assert!(!big.all_prompt_text().contains("XRAWX"));
    assert!(!small.all_prompt_text().contains("XRAWX"));
}

#[tokio::test]
async fn depth_past_max_depth_ends_the_mission() {
    let big = Scripted::new(&[("main", code("(tool/researcher {:topic \"x\"})"))]);
    let set = LlmSet::new(as_llm(&big)).with_model("small", as_llm(&big));
    let opts = Options {
        max_depth: 0,
        ..options()
    };
    let step = run(set, three_levels(), opts).await;
    assert_eq!(
        step.reason(),
        Some(FailReason::MaxDepthExceeded),
        "{step:?}"
    );
    assert_eq!(step.usage.turns, 1);
}

#[tokio::test]
async fn an_unknown_model_is_model_not_found_before_any_call() {
    let big = Scripted::new(&[]);
    let set = LlmSet::new(as_llm(&big)).with_model("large", as_llm(&big));
    let step = run(set, three_levels(), options()).await;
    assert_eq!(step.reason(), Some(FailReason::ModelNotFound), "{step:?}");
    assert!(step.fail.unwrap().message.contains("small"));
    assert!(big.requests().is_empty());
}

#[tokio::test]
async fn a_failing_child_is_a_tool_error_its_parent_can_handle() {
    let llm = Scripted::new(&[
        ("main", code("(tool/researcher {:topic \"x\"})")),
        (
            "main/researcher",
            code("(fail {:reason :no_data :message \"nothing on x\"})"),
        ),
        ("main", code("(return {:n 0})")),
    ]);
    let agent = Agent::new("Solve.").signature("{n :int}").agent(
        Agent::new("Research {{topic}}.")
            .name("researcher")
            .description("Researches")
            .signature("(topic :string) -> {n :int}"),
    );
    let step = run(LlmSet::new(as_llm(&llm)), agent, options()).await;
    assert_eq!(step.fail, None, "{step:?}");
    let fb = llm.last_message(2);
    assert!(
        fb.contains("agent researcher failed: no_data: nothing on x"),
        "{fb}"
    );
}

#[tokio::test]
async fn a_child_spending_the_tree_budget_ends_the_mission() {
    let llm = Scripted::new(&[
        ("main", code("(tool/researcher {:topic \"x\"})")),
        ("main/researcher", code("1")),
        ("main/researcher", code("2")),
    ]);
    let agent = Agent::new("Solve.").agent(
        Agent::new("Research {{topic}}.")
            .name("researcher")
            .description("Researches"),
    );
    let opts = Options {
        turn_budget: 3,
        ..options()
    };
    let step = run(LlmSet::new(as_llm(&llm)), agent, opts).await;
    assert_eq!(
        step.reason(),
        Some(FailReason::TurnBudgetExhausted),
        "{step:?}"
    );
    assert_eq!(step.usage.turns, 3);
}
