//! Golden tests: every payload of the `lisp_eval` protocol, byte for byte.

use super::*;
use crate::value::Map;
use serde_json::json;

fn ok_step(ret: Value) -> Step {
    Step {
        return_value: Some(ret),
        ..Step::default()
    }
}

fn map(pairs: &[(&str, Value)]) -> Value {
    let mut m = Map::new();
    for (k, v) in pairs {
        m.insert(Value::keyword(*k), v.clone());
    }
    Value::Map(Box::new(m))
}

fn fail(reason: FailReason, msg: &str) -> Fail {
    Fail::new(reason, msg)
}

#[test]
fn profiles_are_fixed_constants() {
    assert_eq!(Profile::McpNoTools.description(), DESCRIPTION_MCP_NO_TOOLS);
    assert_eq!(
        Profile::InProcessWithAppTools.description(),
        DESCRIPTION_IN_PROCESS_WITH_APP_TOOLS
    );
    assert_eq!(
        Profile::InProcessTextMode.description(),
        DESCRIPTION_IN_PROCESS_TEXT_MODE
    );
    // Capabilities only: the MCP profile promises no tools and no memory across calls.
    assert!(DESCRIPTION_MCP_NO_TOOLS.contains("No tools are callable inside the program"));
    assert!(DESCRIPTION_MCP_NO_TOOLS.contains("`data/KEY`"));
    assert!(DESCRIPTION_IN_PROCESS_WITH_APP_TOOLS.contains("(tool/NAME {...})"));
}

#[test]
fn success_golden() {
    let step = Step {
        prints: vec!["hi".into()],
        ..ok_step(Value::Int(3))
    };
    assert_eq!(
        render_success(&step, &SuccessOptions::default()).text(),
        r#"{"status":"ok","result":"user=> 3","prints":["hi"],"feedback":null,"truncated":false}"#
    );
}

#[test]
fn success_drops_result_only_when_value_and_preview_are_nil() {
    let nil = ok_step(Value::Nil);
    assert_eq!(
        render_success(&nil, &SuccessOptions::default()).text(),
        r#"{"status":"ok","prints":[],"feedback":null,"truncated":false}"#
    );
    let with_preview = SuccessOptions {
        result: Some("nil".into()),
        ..SuccessOptions::default()
    };
    assert_eq!(
        render_success(&nil, &with_preview).text(),
        r#"{"status":"ok","result":"user=> nil","prints":[],"feedback":null,"truncated":false}"#
    );
    let kw = ok_step(map(&[("a", Value::string("x"))]));
    assert_eq!(
        render_success(&kw, &SuccessOptions::default()).text(),
        r#"{"status":"ok","result":"user=> {:a \"x\"}","prints":[],"feedback":null,"truncated":false}"#
    );
}

#[test]
fn success_with_warnings_memory_and_validated() {
    let step = Step {
        memory: map(&[("x", Value::Int(5)), ("f", Value::Nil)]),
        memory_delta: map(&[("x", Value::Int(5))]),
        warnings: vec!["w1".into(), "w2".into()],
        ..ok_step(Value::Int(5))
    };
    let opts = SuccessOptions {
        include_memory: true,
        validated: Some(json!(5)),
        ..SuccessOptions::default()
    };
    assert_eq!(
        render_success(&step, &opts).text(),
        r#"{"status":"ok","result":"user=> 5","prints":[],"feedback":"w1\nw2","truncated":false,"memory":{"changed":{"x":"5"},"stored_keys":["x","f"],"truncated":false},"validated":5}"#
    );
}

#[test]
fn success_caps_prints_result_memory_and_validated() {
    let caps = Caps {
        result_bytes: 4,
        prints_bytes: 11,
        print_entry_bytes: 3,
        validated_bytes: 3,
        memory_preview_bytes: 2,
    };
    let step = Step {
        prints: vec!["abcdef".into(), "üü".into(), "zz".into()],
        memory: map(&[("x", Value::Int(12345))]),
        memory_delta: map(&[("x", Value::Int(12345))]),
        ..ok_step(Value::Vector(vec![Value::Int(1000); 3]))
    };
    let opts = SuccessOptions {
        include_memory: true,
        validated: Some(json!([1000, 1000, 1000])),
        caps,
        ..SuccessOptions::default()
    };
    // "ü" is two bytes: the second entry is cut on its char boundary (and its `…` counts), so
    // the third no longer fits in 11 bytes.
    assert_eq!(
        render_success(&step, &opts).text(),
        r#"{"status":"ok","result":"user=> [100…","prints":["abc…","ü…"],"feedback":null,"truncated":true,"memory":{"changed":{"x":"12…"},"stored_keys":["x"],"truncated":true}}"#
    );
}

#[test]
fn long_string_result_preview_is_cut_not_emptied() {
    let step = ok_step(Value::string("x".repeat(100)));
    let opts = SuccessOptions {
        caps: Caps {
            result_bytes: 5,
            ..Caps::default()
        },
        ..SuccessOptions::default()
    };
    assert_eq!(
        render_success(&step, &opts).text(),
        r#"{"status":"ok","result":"user=> \"xxxx…","prints":[],"feedback":null,"truncated":true}"#
    );
}

#[test]
fn error_golden_for_every_reason() {
    for r in Reason::ALL {
        let got = render_error(r, "m", &ErrorOptions::default()).text();
        let want = if r == Reason::Fail {
            r#"{"status":"error","reason":"fail","message":"m","feedback":"m","result":null}"#
                .to_string()
        } else {
            format!(
                r#"{{"status":"error","reason":"{}","message":"m","feedback":"m"}}"#,
                r.as_str()
            )
        };
        assert_eq!(got, want);
    }
    let names: Vec<&str> = Reason::ALL.iter().map(|r| r.as_str()).collect();
    assert_eq!(
        names,
        [
            "parse_error",
            "runtime_error",
            "timeout",
            "memory_limit",
            "args_error",
            "fail",
            "validation_error",
            "busy",
            "cancelled",
            "shutting_down",
            "unknown_session",
            "session_expired",
            "session_limit"
        ]
    );
    for r in Reason::ALL {
        assert_eq!(serde_json::to_value(r).ok(), Some(json!(r.as_str())));
    }
}

#[test]
fn error_options_feedback_and_result() {
    let opts = ErrorOptions {
        feedback: Some("try again".into()),
        result: Some("{:x 1}".into()),
    };
    assert_eq!(
        render_error(Reason::Fail, "boom", &opts).text(),
        r#"{"status":"error","reason":"fail","message":"boom","feedback":"try again","result":"{:x 1}"}"#
    );
    // `result` belongs to `fail` only.
    assert_eq!(
        render_error(Reason::Timeout, "slow", &opts).text(),
        r#"{"status":"error","reason":"timeout","message":"slow","feedback":"try again"}"#
    );
}

#[test]
fn unknown_options_are_ignored() {
    let s = SuccessOptions::from_json(&json!({"include_memory": true, "from_the_future": 1}));
    assert_eq!(
        s,
        Ok(SuccessOptions {
            include_memory: true,
            ..SuccessOptions::default()
        })
    );
    let e = ErrorOptions::from_json(&json!({"feedback": "f", "colour": "red"}));
    assert_eq!(e.map(|e| e.feedback), Ok(Some("f".to_string())));
    assert!(ErrorOptions::from_json(&json!({"feedback": 3})).is_err());
}

#[test]
fn every_fail_reason_maps_into_the_closed_set() {
    use FailReason as F;
    let cases = [
        (F::ParseError, Reason::ParseError),
        (F::AnalysisError, Reason::RuntimeError),
        (F::EvalError, Reason::RuntimeError),
        (F::Timeout, Reason::Timeout),
        (F::MemoryExceeded, Reason::MemoryLimit),
        (F::ValidationError, Reason::ValidationError),
        (F::ToolError, Reason::RuntimeError),
        (F::ToolNotFound, Reason::RuntimeError),
        (F::Failed, Reason::Fail),
        (F::LimitExceeded, Reason::RuntimeError),
        (F::SandboxViolation, Reason::RuntimeError),
        (F::RunnerCrashed, Reason::RuntimeError),
        (F::Busy, Reason::Busy),
        (F::Cancelled, Reason::Cancelled),
        (F::PermissionDenied, Reason::RuntimeError),
        (F::InvalidRequest, Reason::ArgsError),
    ];
    for (f, want) in cases {
        assert_eq!(Reason::of(&fail(f, "x")).0, want, "{f}");
    }
}

#[test]
fn limits_map_by_kind_and_keep_their_name() {
    let lim = |name: &str| fail(FailReason::LimitExceeded, "too much").with_detail("limit", name);
    assert_eq!(
        Reason::of(&lim("max_steps")),
        (
            Reason::Timeout,
            "limit max_steps exceeded: too much".to_string()
        )
    );
    assert_eq!(Reason::of(&lim("cpu")).0, Reason::Timeout);
    assert_eq!(Reason::of(&lim("timeout_ms")).0, Reason::Timeout);
    assert_eq!(Reason::of(&lim("heap_bytes")).0, Reason::MemoryLimit);
    assert_eq!(Reason::of(&lim("grant_bytes")).0, Reason::MemoryLimit);
    assert_eq!(
        Reason::of(&lim("max_depth")),
        (
            Reason::RuntimeError,
            "limit max_depth exceeded: too much".to_string()
        )
    );
    assert_eq!(
        Reason::of(&fail(FailReason::LimitExceeded, "?")).1,
        "limit a resource limit exceeded: ?"
    );
}

#[test]
fn render_step_golden_for_failures() {
    let parse = Step::failed(
        fail(FailReason::ParseError, "unexpected `)` at 1:4"),
        Value::Nil,
        Vec::new(),
    );
    assert_eq!(
        render_step(&parse, &SuccessOptions::default()).text(),
        r#"{"status":"error","reason":"parse_error","message":"unexpected `)` at 1:4","feedback":"unexpected `)` at 1:4"}"#
    );
    let failed = Step::failed(
        fail(FailReason::Failed, "{:x 1}").with_detail("value", map(&[("x", Value::Int(1))])),
        Value::Nil,
        Vec::new(),
    );
    let p = render_step(&failed, &SuccessOptions::default());
    assert!(p.is_error);
    assert_eq!(
        p.text(),
        r#"{"status":"error","reason":"fail","message":"{:x 1}","feedback":"{:x 1}","result":"{:x 1}"}"#
    );
    let ok = render_step(&ok_step(Value::Int(1)), &SuccessOptions::default());
    assert!(!ok.is_error);
}

#[test]
fn validate_program_messages() {
    let check = |j: Option<Json>| validate_program(j.as_ref()).map(str::to_string);
    assert_eq!(check(Some(json!("(+ 1 2)"))), Ok("(+ 1 2)".to_string()));
    assert_eq!(
        check(None),
        Err(ArgsError(
            "lisp_eval needs a `program` argument: a string of PTC-Lisp source".into()
        ))
    );
    assert_eq!(check(Some(Json::Null)), check(None));
    assert_eq!(
        check(Some(json!(42))),
        Err(ArgsError("`program` must be a string, got a number".into()))
    );
    assert_eq!(
        check(Some(json!(""))),
        Err(ArgsError("`program` is an empty string".into()))
    );
    assert_eq!(
        check(Some(json!(" \n\t"))),
        Err(ArgsError("`program` holds only whitespace".into()))
    );
    assert_eq!(
        ArgsError("`program` is an empty string".into())
            .render()
            .text(),
        r#"{"status":"error","reason":"args_error","message":"`program` is an empty string","feedback":"`program` is an empty string"}"#
    );
}

#[test]
fn to_json_value_converts_collections() {
    let mut set = crate::value::Set::new();
    set.insert(Value::keyword("a"));
    let mut m = Map::new();
    m.insert(
        Value::Int(1),
        Value::List(vec![Value::Nil, Value::Float(0.5)]),
    );
    m.insert(Value::keyword("s"), Value::Set(Box::new(set)));
    m.insert(Value::string("t"), Value::Bool(true));
    assert_eq!(
        to_json_value(&Value::Map(Box::new(m))).map(|j| j.to_string()),
        Ok(r#"{"1":[null,0.5],"s":["a"],"t":true}"#.to_string())
    );
}

#[test]
fn to_json_value_names_the_path() {
    let row = map(&[("id", Value::Int(1)), ("ts", Value::Float(f64::INFINITY))]);
    let v = map(&[("rows", Value::Vector(vec![row]))]);
    let err = to_json_value(&v).err().map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some("non-JSON-encodable value at rows[0].ts: the float ##Inf has no JSON form")
    );
    let root = to_json_value(&Value::Float(f64::NAN)).err().map(|e| e.path);
    assert_eq!(root.as_deref(), Some("(root)"));
    let odd = map(&[("a b", Value::Vector(vec![Value::Float(f64::NAN)]))]);
    let err = to_json_value(&odd).err().map(|e| e.path);
    assert_eq!(err.as_deref(), Some(r#"["a b"][0]"#));
    let mut dup = Map::new();
    dup.insert(Value::keyword("a"), Value::Int(1));
    dup.insert(Value::string("a"), Value::Int(2));
    let err = to_json_value(&Value::Map(Box::new(dup)))
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some("non-JSON-encodable value at a: two keys print as the same JSON key")
    );
}

#[test]
fn to_json_value_bounds_depth() {
    let mut v = Value::Nil;
    for _ in 0..(MAX_DEPTH + 2) {
        v = Value::Vector(vec![v]);
    }
    let err = to_json_value(&v).err().map(|e| e.why);
    assert_eq!(
        err.as_deref(),
        Some(format!("nested deeper than {MAX_DEPTH} levels").as_str())
    );
}

#[test]
fn parse_signature_is_reexported() {
    let sig = parse_signature("(limit :int) -> [:int]");
    assert_eq!(sig.map(|s| s.params().len()).ok(), Some(1));
    assert!(parse_signature("(limit :nope) ->").is_err());
}
