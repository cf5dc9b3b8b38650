//! Unit tests through the public surface: the shorthand table, message forms, coercion, modes,
//! rendering and JSON Schema.
#![allow(clippy::unwrap_used)]

use super::*;
use serde_json::json;

fn sig(s: &str) -> Signature {
    Signature::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn schema(s: &str) -> Schema {
    Schema::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn perr(s: &str) -> String {
    Signature::parse(s).unwrap_err().to_string()
}

fn val(json: serde_json::Value) -> Value {
    Value::from_json(&json).unwrap()
}

fn kmap(pairs: &[(&str, Value)]) -> Value {
    Value::Map(
        pairs
            .iter()
            .map(|(k, v)| (Value::keyword(*k), v.clone()))
            .collect::<crate::value::Map>()
            .into(),
    )
}

fn errs(schema_text: &str, v: Value) -> Vec<String> {
    validate(&schema(schema_text), &v)
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn shorthand_to_malli_table() {
    let rows = [
        (":string", ":string"),
        (":int", ":int"),
        (":float", ":double"),
        (":double", ":double"),
        (":bool", ":boolean"),
        (":boolean", ":boolean"),
        (":keyword", ":keyword"),
        (":any", ":any"),
        (":nil", ":nil"),
        (":map", "[:map]"),
        (":datetime", ":datetime"),
        ("[:int]", "[:sequential :int]"),
        ("[{:id :int}]", "[:sequential [:map [:id :int]]]"),
        ("[:map]", "[:sequential :map]"),
        (
            "{id :int, name :string}",
            "[:map [:id :int] [:name :string]]",
        ),
        (
            "{:id :int :email :string?}",
            "[:map [:id :int] [:email {:optional true} [:maybe :string]]]",
        ),
        (
            "{items [:string]?}",
            "[:map [:items {:optional true} [:maybe [:sequential :string]]]]",
        ),
        (
            "{a {b {c :int}}}",
            "[:map [:a [:map [:b [:map [:c :int]]]]]]",
        ),
        (":int?", "[:maybe :int]"),
        ("[:int?]", "[:sequential [:maybe :int]]"),
        (
            r#"{status [:enum "a" "b"]}"#,
            r#"[:map [:status [:enum "a" "b"]]]"#,
        ),
    ];
    for (short, malli) in rows {
        assert_eq!(
            schema(short),
            Schema::parse_data(malli).unwrap(),
            "{short} vs {malli}"
        );
    }
    let fns = [
        (
            "(a :int, b [:string]) -> {count :int}",
            "[:=> [:cat [:map [:a :int] [:b [:sequential :string]]]] [:map [:count :int]]]",
        ),
        ("() -> :int", "[:=> [:cat] :int]"),
        (":int", "[:=> [:cat] :int]"),
        ("{count :int}", "[:=> [:cat] [:map [:count :int]]]"),
        (
            "(email :string?) -> :nil",
            "[:=> [:cat [:map [:email {:optional true} [:maybe :string]]]] :nil]",
        ),
    ];
    for (short, malli) in fns {
        assert_eq!(sig(short), sig(malli), "{short} vs {malli}");
    }
}

#[test]
fn json_array_data_form() {
    let s = Signature::from_malli_json(&json!([
        "=>",
        ["cat", ["map", ["q", "string"]]],
        ["vector", "int"]
    ]))
    .unwrap();
    assert_eq!(s, sig("[:=> [:cat [:map [:q :string]]] [:vector :int]]"));
    assert_eq!(
        sig(r#"["map", ["id", "int"]]"#).output(),
        &schema("{id :int}")
    );
    assert_eq!(s.text(), "(q :string) -> [:vector :int]");
    let text = r#"["=>", ["cat", ["map", ["q", "string"]]], ["vector", "int"]]"#;
    assert_eq!(sig(text), s);
    assert_eq!(sig(text).text(), text);
}

#[test]
fn parse_errors_name_the_column_and_hint() {
    let e = perr("(a :list) -> :int");
    assert!(
        e.contains("unknown type `:list` at column 4") && e.contains("hint: for a list write [T]"),
        "{e}"
    );
    let e = perr("{items :array}");
    assert!(e.contains("column 8") && e.contains("[T]"), "{e}");
    let e = perr("{user :object}");
    assert!(e.contains("column 7") && e.contains("{field :type"), "{e}");
    let e = perr("(a :int -> :int");
    assert!(
        e.contains("expected `)` to close the inputs before `->` at column 9"),
        "{e}"
    );
    let e = perr("(a :int) :int");
    assert!(
        e.contains("expected `->` after the inputs at column 10"),
        "{e}"
    );
    let e = perr("{a int}");
    assert!(
        e.contains("expected a type, found `int` at column 4") && e.contains("`:int`"),
        "{e}"
    );
    assert!(perr("{a}").contains("expected a type after `a`"));
    assert!(perr("[:map? :int]").contains("exactly one element type"));
    let e = perr("[:int :string]");
    assert!(
        e.contains("exactly one element type") && e.contains("column 7"),
        "{e}"
    );
    let e = perr("{a :int");
    assert!(e.contains("expected `}` before the end at column 8"), "{e}");
    assert!(perr("").contains("empty signature"));
    assert!(perr("-> :int").contains("`() -> T`"));
    assert!(perr("{xs list}").contains("hint: for a list write [T]"));
    assert!(perr("a :int -> :int").contains("types start with a colon"));
    assert!(
        perr(":int junk").contains("unexpected `j` after the end of the signature at column 6")
    );
    assert!(perr("{a :int, a :string}").contains("appears twice"));
    assert!(perr("(user_id :int, user-id :int) -> :int").contains("appears twice"));
    let e = perr("{a :int,\n b :lsit}");
    assert!(e.contains("line 2, column 4"), "{e}");
    assert!(perr("[:=> [:cat :int :string] :int]").contains("positional inputs are not supported"));
    assert!(perr("[:ref :user]").contains("unsupported Malli schema `:ref`"));
}

#[test]
fn nesting_is_bounded() {
    let ok = format!("{}:int{}", "[".repeat(63), "]".repeat(63));
    assert!(Signature::parse(&ok).is_ok());
    let deep = format!("{}:int{}", "[".repeat(64), "]".repeat(64));
    assert!(matches!(
        Signature::parse(&deep),
        Err(SignatureError::TooDeep { .. })
    ));
    let hostile = format!("{}:int{}", "{a ".repeat(100_000), "}".repeat(100_000));
    assert!(perr(&hostile).contains("nested deeper than 64"));
    // A deep value against a shallow schema is not walked.
    let mut v = Value::Nil;
    for _ in 0..400 {
        v = Value::Vector(vec![v]);
    }
    assert!(validate(&schema("[:any]"), &v).is_empty());
}

#[test]
fn error_message_forms() {
    let v = val(json!({"results": [{"customer": {"id": "abc"}}]}));
    assert_eq!(
        errs("{results [{customer {id :int}}]}", v),
        ["results[0].customer.id: expected int, got string \"abc\""]
    );
    assert_eq!(
        errs(
            r#"{status [:enum "pending" "active"]}"#,
            val(json!({"status": "unknown"}))
        ),
        [r#"status: expected one of ["pending" "active"], got "unknown""#]
    );
    assert_eq!(
        errs("{count :int}", val(json!({}))),
        ["count: missing required key"]
    );
    assert_eq!(errs(":int", Value::Nil), ["expected int, got nil"]);
    assert_eq!(
        errs("[:int]", val(json!({"a": 1}))),
        ["expected list, got map"]
    );
    assert_eq!(
        errs("{a :float}", val(json!({"a": 1}))),
        ["a: expected float, got int 1"]
    );
    assert_eq!(
        errs("[:tuple :int :int]", val(json!([1]))),
        ["expected a tuple of 2 elements, got vector of 1"]
    );
    assert_eq!(
        errs("[:and :int [:> 0]]", Value::Int(0)),
        ["expected a number > 0, got 0"]
    );
    assert_eq!(
        errs("[:<= 2.5]", "x".into()),
        ["expected a number <= 2.5, got string \"x\""]
    );
    assert_eq!(
        errs(r#"[:re "^a"]"#, "ba".into()),
        [r#"expected a string matching #"^a", got string "ba""#]
    );
    assert_eq!(
        errs("[:or :int :string]", Value::Bool(true)),
        ["expected int or string, got boolean true"]
    );
    assert_eq!(
        errs(":datetime", "yesterday".into()),
        ["expected ISO-8601 datetime string with offset, got string \"yesterday\""]
    );
    assert_eq!(
        errs("[:map-of :keyword :int]", val(json!({"a": "x"}))),
        [
            "a: expected keyword, got string \"a\"",
            "a: expected int, got string \"x\""
        ]
    );
    assert_eq!(
        errs(
            "[:set :int]",
            Value::Set(
                [Value::from("x")]
                    .into_iter()
                    .collect::<crate::value::Set>()
                    .into()
            )
        ),
        ["[0]: expected int, got string \"x\""]
    );
    // Every error is reported, each with its own path.
    let all = errs(
        "[{id :int, name :string}]",
        val(json!([{"id": "1"}, {"name": 2, "id": 3}])),
    );
    assert_eq!(
        all,
        [
            "[0].id: expected int, got string \"1\"",
            "[0].name: missing required key",
            "[1].name: expected string, got int 2"
        ]
    );
    // A union whose one map alternative has the value's shape reports that alternative's errors.
    assert_eq!(
        errs("[:or :nil [:map [:a :int]]]", val(json!({"a": "x"}))),
        ["a: expected int, got string \"x\""]
    );
}

/// Where `context_passes_unchanged` says a context passes as it is, validating it gives that
/// very context back with no warning; where it says not, some context of that shape changes or
/// fails (so the answer is not merely "no" to be safe).
#[test]
fn contexts_said_to_pass_unchanged_do() {
    let sigs = [
        ":int",
        "() -> :int",
        "{count :int}",
        "(n :int) -> :int",
        "(xs [:map]) -> :int",
    ];
    let modes = [Mode::Enabled, Mode::WarnOnly, Mode::Disabled, Mode::Strict];
    let contexts = [
        Value::Nil,
        kmap(&[]),
        kmap(&[("n", Value::string("7")), ("xs", val(json!([{"a": 1}])))]),
        val(json!({"n": 1, "other": [1, "x"], "xs": "not a vector"})),
        Value::Int(3),
    ];
    for text in sigs {
        let s = sig(text);
        for mode in modes {
            let mut some_differ = false;
            for c in &contexts {
                let map_or_nil = matches!(c, Value::Map(_) | Value::Nil);
                let got = s.validate_input_owned(c.clone(), mode);
                let same = matches!(&got, Ok(ch) if ch.value == *c && ch.warnings.is_empty());
                if s.context_passes_unchanged(mode, map_or_nil) {
                    assert!(same, "{text} {mode:?} {c:?}: {got:?}");
                } else {
                    some_differ |= !same;
                }
            }
            let any_refused = contexts.iter().any(|c| {
                !s.context_passes_unchanged(mode, matches!(c, Value::Map(_) | Value::Nil))
            });
            assert_eq!(any_refused, some_differ, "{text} {mode:?}");
        }
    }
}

#[test]
fn errors_are_capped() {
    let v = Value::Vector((0..MAX_ERRORS + 5).map(|_| Value::Nil).collect());
    let e = validate(&schema("[:int]"), &v);
    assert_eq!(e.len(), MAX_ERRORS + 1);
    assert_eq!(e[MAX_ERRORS].message, "5 more errors not shown");
}

#[test]
fn keys_match_keyword_string_and_either_spelling() {
    let s = sig("(user_id :int, limit :int) -> {full_name :string}");
    let ctx = Value::Map(
        [
            (Value::keyword("user-id"), Value::Int(1)),
            (Value::from("limit"), Value::Int(2)),
        ]
        .into_iter()
        .collect::<crate::value::Map>()
        .into(),
    );
    let out = s.validate_input(&ctx, Mode::Enabled).unwrap();
    let expected = Value::Map(
        [
            (Value::keyword("user_id"), Value::Int(1)),
            (Value::from("limit"), Value::Int(2)),
        ]
        .into_iter()
        .collect::<crate::value::Map>()
        .into(),
    );
    assert_eq!(out.value, expected);
    assert!(
        matches!(&out.value, Value::Map(m) if m.keys().next() == Some(&Value::keyword("user_id")))
    );
    assert!(out.warnings.is_empty());
    let r = s
        .validate_output(&val(json!({"full-name": "Ada"})), Mode::Enabled)
        .unwrap();
    assert_eq!(r.value, val(json!({"full_name": "Ada"})));
    let mixed = sig("{a_b_c :int}");
    assert_eq!(
        mixed
            .validate_output(&kmap(&[("a-b_c", 1.into())]), Mode::Enabled)
            .unwrap()
            .value,
        kmap(&[("a_b_c", 1.into())])
    );
}

#[test]
fn inputs_are_coerced_with_warnings() {
    let s = sig(
        "(limit :int, ratio :float, exact :float, on :bool, kind :keyword, name :string) -> :any",
    );
    let ctx =
        val(json!({"limit": "10", "ratio": "0.5", "exact": 2, "on": "false", "kind": "open"}));
    let mut ctx = ctx;
    if let Value::Map(m) = &mut ctx {
        m.insert("name".into(), Value::keyword("ada"));
    }
    let out = s.validate_input(&ctx, Mode::Enabled).unwrap();
    let expect = |k: &str| out.value.get_key(&Value::keyword(k)).cloned();
    assert_eq!(expect("limit"), Some(Value::Int(10)));
    assert_eq!(expect("ratio"), Some(Value::Float(0.5)));
    assert_eq!(expect("exact"), Some(Value::Float(2.0)));
    assert_eq!(expect("on"), Some(Value::Bool(false)));
    assert_eq!(expect("kind"), Some(Value::keyword("open")));
    assert_eq!(expect("name"), Some(Value::from("ada")));
    assert_eq!(
        out.warnings,
        [
            "limit: coerced string \"10\" to int",
            "ratio: coerced string \"0.5\" to float",
            "on: coerced string \"false\" to boolean",
            "kind: coerced string \"open\" to keyword",
            "name: coerced keyword :ada to string",
        ]
    );
    // Nested coercion keeps the path; a string that is not a number still fails.
    let s = sig("(items [{n :int}]) -> :any");
    let out = s
        .validate_input(
            &val(json!({"items": [{"n": 1}, {"n": "2"}]})),
            Mode::Enabled,
        )
        .unwrap();
    assert_eq!(out.warnings, ["items[1].n: coerced string \"2\" to int"]);
    assert_eq!(out.value, val(json!({"items": [{"n": 1}, {"n": 2}]})));
    let e = s
        .validate_input(&val(json!({"items": [{"n": "two"}]})), Mode::Enabled)
        .unwrap_err();
    assert_eq!(
        e[0].to_string(),
        "items[0].n: expected int, got string \"two\""
    );
}

#[test]
fn outputs_are_never_coerced() {
    let s = sig("{limit :int, ratio :float}");
    let e = s
        .validate_output(&val(json!({"limit": "10", "ratio": 1})), Mode::Enabled)
        .unwrap_err();
    let e: Vec<String> = e.iter().map(ToString::to_string).collect();
    assert_eq!(
        e,
        [
            "limit: expected int, got string \"10\"",
            "ratio: expected float, got int 1"
        ]
    );
}

#[test]
fn defaults_fill_missing_inputs_only() {
    let s = sig("[:=> [:cat [:map [:limit {:default 10} :int]]] [:map [:n {:default 1} :int]]]");
    let out = s.validate_input(&val(json!({})), Mode::Enabled).unwrap();
    assert_eq!(out.value, kmap(&[("limit", 10.into())]));
    assert_eq!(
        s.validate_output(&val(json!({})), Mode::Enabled)
            .unwrap()
            .value,
        val(json!({}))
    );
}

#[test]
fn modes() {
    let s = sig("(limit :int, q :string?) -> {n :int}");
    let extra = val(json!({"limit": 1, "other": true}));
    // enabled: extra fields allowed, optional inputs may be absent.
    assert!(s.validate_input(&extra, Mode::Enabled).is_ok());
    // strict: extras rejected, every declared input required, also in nested outputs.
    let e = s.validate_input(&extra, Mode::Strict).unwrap_err();
    let e: Vec<String> = e.iter().map(ToString::to_string).collect();
    assert_eq!(
        e,
        [
            "q: missing input (strict mode requires every declared input)",
            "other: unexpected key (not in the signature)"
        ]
    );
    let e = s
        .validate_output(&val(json!({"n": 1, "x": 2})), Mode::Strict)
        .unwrap_err();
    assert_eq!(e[0].to_string(), "x: unexpected key (not in the signature)");
    assert!(
        s.validate_output(&val(json!({"n": 1, "x": 2})), Mode::Enabled)
            .is_ok()
    );
    // warn_only: errors become warnings and the coerced value comes back.
    let out = s
        .validate_input(&val(json!({"limit": "5", "q": 3})), Mode::WarnOnly)
        .unwrap();
    assert_eq!(
        out.warnings,
        [
            "limit: coerced string \"5\" to int",
            "q: expected string, got int 3"
        ]
    );
    assert_eq!(
        out.value.get_key(&Value::keyword("limit")),
        Some(&Value::Int(5))
    );
    // disabled: nothing is checked or changed.
    let bad = val(json!({"limit": "5"}));
    assert_eq!(
        s.validate_input(&bad, Mode::Disabled).unwrap(),
        Checked {
            value: bad.clone(),
            warnings: vec![]
        }
    );
    assert!(s.validate_output(&Value::Nil, Mode::Disabled).is_ok());
    assert!(s.validate_output(&Value::Nil, Mode::Enabled).is_err());
    assert_eq!("warn_only".parse::<Mode>().unwrap(), Mode::WarnOnly);
    assert_eq!("strict".parse::<Mode>().unwrap(), Mode::Strict);
    assert_eq!("enabled".parse::<Mode>().unwrap(), Mode::Enabled);
    assert_eq!("disabled".parse::<Mode>().unwrap(), Mode::Disabled);
    for m in [Mode::Enabled, Mode::WarnOnly, Mode::Disabled, Mode::Strict] {
        assert_eq!(m.to_string().parse::<Mode>().unwrap(), m);
    }
    assert!(
        "loose"
            .parse::<Mode>()
            .unwrap_err()
            .to_string()
            .contains("unknown validation mode `loose`")
    );
    // A closed map rejects extras in every mode.
    let closed = sig("[:map {:closed true} [:a :int]]");
    assert!(
        closed
            .validate_output(&val(json!({"a": 1, "b": 2})), Mode::Enabled)
            .is_err()
    );
    // Inputs: nil is an empty context; anything else that is not a map fails.
    assert_eq!(
        s.validate_input(&Value::Nil, Mode::Enabled).unwrap_err()[0].to_string(),
        "limit: missing required key"
    );
    assert_eq!(
        s.validate_input(&Value::Int(1), Mode::Enabled).unwrap_err()[0].to_string(),
        "expected map, got int 1"
    );
}

#[test]
fn hidden_fields_validate_but_are_not_shown() {
    let s = sig("(query :string, _ids [:int]) -> {title :string, _raw :any}");
    assert!(s.params()[1].hidden && !s.params()[0].hidden);
    assert!(
        s.validate_input(&val(json!({"query": "x"})), Mode::Enabled)
            .is_err()
    );
    assert_eq!(
        s.render(),
        "(query :string, _ids [:int]) -> {title :string, _raw :any}"
    );
    assert_eq!(
        s.render_tool("search", Some("Find docs.")),
        "search(query :string) -> {title :string}  -- Find docs."
    );
}

#[test]
fn rendering() {
    let s = sig("(query :string, limit :int) -> [{id :int, title :string}]");
    assert_eq!(
        s.render_tool("search", None),
        "search(query :string, limit :int) -> [{id :int, title :string}]"
    );
    assert_eq!(sig(":int").render(), "() -> :int");
    assert_eq!(
        sig("{:a :float :b :bool, c :map}").render(),
        "() -> {a :float, b :bool, c :map}"
    );
    assert_eq!(
        sig(r#"{status [:enum "pending" "active"]}"#).render(),
        r#"() -> {status [:enum "pending" "active"]}"#
    );
    assert_eq!(
        sig("[:map [:a [:maybe :int]]]").render(),
        "() -> {a [:maybe :int]}"
    );
    assert_eq!(
        sig("[:map [:a {:optional true} :int]]").render(),
        "() -> [:map [:a {:optional true} :int]]"
    );
    assert_eq!(
        sig("[:maybe [:maybe :int]]").render(),
        "() -> [:maybe :int]?"
    );
    assert_eq!(
        sig("[:or :int [:vector :string]]").output().to_shorthand(),
        "[:or :int [:vector :string]]"
    );
    // Inputs shorthand cannot express make the whole signature data form; prompts stay compact.
    let j = Signature::from_json_schema(&json!({"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}, "required": ["q"]}), &json!({"type": "array", "items": {"type": "string"}})).unwrap();
    assert_eq!(
        j.render(),
        "[:=> [:cat [:map [:q :string] [:n {:optional true} :int]]] [:sequential :string]]"
    );
    assert_eq!(
        j.render_tool("find", Some("Look up\nthings")),
        "find(q :string, n :int?) -> [:string]  -- Look up things"
    );
    assert_eq!(sig(&j.render()), j);
}

#[test]
fn json_schema_export() {
    let s = sig(
        r#"(q :string, n :int?, _ids [:int]) -> {items [{id :int, at :datetime}], kind [:enum "a" "b"], tags [:set :keyword]}"#,
    );
    let (input, output) = s.to_json_schema();
    assert_eq!(
        input,
        json!({"type": "object", "properties": {
            "q": {"type": "string"},
            "n": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "_ids": {"type": "array", "items": {"type": "integer"}}}, "required": ["q", "_ids"]})
    );
    assert_eq!(
        output,
        json!({"type": "object", "properties": {
            "items": {"type": "array", "items": {"type": "object", "properties": {
                "id": {"type": "integer"}, "at": {"type": "string", "format": "date-time"}}, "required": ["id", "at"]}},
            "kind": {"enum": ["a", "b"]},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}},
            "required": ["items", "kind", "tags"]})
    );
    let refined = schema("[:and :int [:>= 1] [:< 10]]").to_json_schema();
    assert_eq!(
        refined,
        json!({"allOf": [{"type": "integer"}, {"minimum": 1}, {"exclusiveMaximum": 10}]})
    );
    assert_eq!(
        schema("[:tuple :int :string]").to_json_schema()["prefixItems"],
        json!([{"type": "integer"}, {"type": "string"}])
    );
    assert_eq!(
        schema("[:map {:closed true} [:a {:default 2} :int]]").to_json_schema(),
        json!({"type": "object", "properties": {"a": {"type": "integer", "default": 2}}, "additionalProperties": false})
    );
}

#[test]
fn json_schema_import() {
    let input = json!({"type": "object", "properties": {
        "q": {"type": "string", "description": "query"},
        "n": {"type": ["integer", "null"]},
        "when": {"type": "string", "format": "date-time"},
        "mode": {"enum": ["fast", "slow"]},
        "opts": {"type": "object", "properties": {"x": {"type": "boolean"}}, "required": ["x"], "additionalProperties": false},
        "counts": {"type": "object", "additionalProperties": {"type": "number"}},
        "xs": {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}},
        "required": ["q", "n", "when", "mode", "opts", "counts", "xs"]});
    let s = Signature::from_json_schema(&input, &json!({"type": "array"})).unwrap();
    let expected = sig(
        r#"(q :string, n [:maybe :int], when :datetime, mode [:enum "fast" "slow"], opts [:map {:closed true} [:x :boolean]], counts [:map-of :string :double], xs [[:or :int :string]]) -> [:any]"#,
    );
    assert_eq!(s, expected);
    // Closed maps reject extras; non-required properties are optional but not nullable.
    assert!(s.validate_output(&val(json!([1])), Mode::Enabled).is_ok());
    let e = Signature::from_json_schema(
        &json!({"type": "object", "properties": {"a": {"$ref": "#/x"}}}),
        &json!({}),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "JSON Schema at #/properties/a: unsupported JSON Schema keyword `$ref`"
    );
    let e = Signature::from_json_schema(&json!({"type": "string"}), &json!({})).unwrap_err();
    assert!(e.to_string().contains("input schema must be an object"));
    let e =
        Schema::from_json_schema(&json!({"type": "object", "properties": {}, "required": ["x"]}))
            .unwrap_err();
    assert!(e.to_string().contains("`required` names `x`"));
    assert_eq!(
        Signature::from_json_schema(&json!({}), &json!(true)).unwrap(),
        sig(":any")
    );
}

#[test]
fn json_schema_import_refinements_and_defaults() {
    let j = json!({"type": "object", "properties": {
        "n": {"type": "integer", "minimum": 1, "exclusiveMaximum": 10, "default": 5},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$", "maxLength": 3},
        "kind": {"const": "x"},
        "note": {"type": "string", "nullable": true},
        "alt": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
        "required": ["code", "kind", "note", "alt"]});
    let s = Schema::from_json_schema(&j).unwrap();
    let expected = schema(
        r#"[:map [:n {:default 5} [:and :int [:>= 1] [:< 10]]] [:code [:and :string [:re "^[A-Z]{3}$"]]] [:kind [:enum "x"]] [:note [:maybe :string]] [:alt [:maybe :int]]]"#,
    );
    assert_eq!(s, expected);
    // Exported schemas import back to the same schema for the types JSON Schema shares.
    let round =
        schema("{a :int, b [:string], c {d :bool?}, e :float, f :datetime, g [:maybe :int]}");
    assert_eq!(
        Schema::from_json_schema(&round.to_json_schema()).unwrap(),
        round
    );
    let e = Schema::from_json_schema(&json!({"type": "integer", "minimum": "x"})).unwrap_err();
    assert!(e.to_string().contains("must be a number"), "{e}");
}

#[test]
fn columns_count_characters() {
    let e = perr("{café :int, b :lst}");
    assert!(e.contains("column 15"), "{e}");
}

#[test]
fn names_shorthand_cannot_spell() {
    let input = json!({"type": "object", "properties": {"first name": {"type": "string"}}, "required": ["first name"]});
    let s = Signature::from_json_schema(&input, &json!({"type": "integer"})).unwrap();
    assert_eq!(
        s.render(),
        r#"[:=> [:cat [:map ["first name" :string]]] :int]"#
    );
    assert_eq!(sig(&s.render()), s);
    assert_eq!(
        s.render_tool("greet", None),
        r#"greet("first name" :string) -> :int"#
    );
    let ok = s
        .validate_input(&val(json!({"first name": "Ada"})), Mode::Strict)
        .unwrap();
    assert!(ok.warnings.is_empty());
}

#[test]
fn owned_variants_agree_with_borrowed_ones() {
    let s = sig(
        "(limit :int, q :string?, rows [{id :int, user_name :string}]) -> [{id :int, full_name :string}]",
    );
    let inputs = [
        json!({"limit": "3", "rows": [{"id": "1", "user-name": "a"}]}),
        json!({"limit": 1, "q": 2, "extra": true, "rows": []}),
        json!(null),
        json!(5),
    ];
    for mode in [Mode::Enabled, Mode::WarnOnly, Mode::Disabled, Mode::Strict] {
        for j in &inputs {
            let v = val(j.clone());
            assert_eq!(
                s.validate_input(&v, mode),
                s.validate_input_owned(v.clone(), mode),
                "{mode} {j}"
            );
            assert_eq!(
                s.validate_output(&v, mode),
                s.validate_output_owned(v.clone(), mode),
                "{mode} {j}"
            );
        }
        let out = val(json!([{"id": 1, "full-name": "Ada"}, {"id": "2", "full_name": 3}]));
        assert_eq!(
            s.validate_output(&out, mode),
            s.validate_output_owned(out.clone(), mode),
            "{mode}"
        );
    }
}
