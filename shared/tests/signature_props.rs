//! Property tests for signatures: rendering round-trips, values generated from a schema validate
//! against it, and a value mutated at one spot fails with an error whose path names that spot.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use ptc_shared::Value;
use ptc_shared::signature::{CmpOp, Field, MapSchema, Mode, Pattern, Schema, Signature, validate};
use ptc_shared::value::EncodedValue;
use std::collections::HashSet;

const PATTERNS: &[&str] = &["^[a-z]+$", "^x", "[0-9]{2}"];

fn name() -> impl Strategy<Value = String> {
    "[a-z_][a-z0-9_-]{0,6}"
}

fn enum_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::Int),
        "[ -~]{0,6}".prop_map(Value::Str),
        "[a-z][a-z0-9-]{0,4}".prop_map(Value::Keyword),
        (-1.0e9..1.0e9f64).prop_map(Value::Float),
        Just(Value::Bool(true)),
        Just(Value::Nil),
    ]
}

fn leaf() -> impl Strategy<Value = Schema> {
    prop_oneof![
        Just(Schema::Any),
        Just(Schema::Nil),
        Just(Schema::String),
        Just(Schema::Int),
        Just(Schema::Double),
        Just(Schema::Boolean),
        Just(Schema::Keyword),
        Just(Schema::Datetime),
        Just(Schema::Map(MapSchema::default())),
        prop::collection::vec(enum_value(), 1..4).prop_map(|mut vs| {
            let mut seen = HashSet::new();
            vs.retain(|v| seen.insert(v.clone()));
            Schema::Enum(vs)
        }),
        (-100i64..100).prop_map(|n| Schema::And(vec![
            Schema::Int,
            Schema::Compare(CmpOp::Gt, Value::Int(n))
        ])),
        (-100i64..100).prop_map(|n| Schema::Compare(CmpOp::Le, Value::Int(n))),
        prop::sample::select(PATTERNS).prop_map(|p| Schema::Re(Pattern::new(p).unwrap())),
    ]
}

fn fields(inner: impl Strategy<Value = Schema> + Clone) -> impl Strategy<Value = Vec<Field>> {
    let field = (name(), inner, 0u8..5, any::<i64>()).prop_map(|(n, s, kind, d)| match kind {
        0 => Field::new(n, Schema::Maybe(Box::new(s))).optional(),
        1 => Field::new(n, s).optional(),
        2 => Field::new(n, s).with_default(Value::Int(d)),
        _ => Field::new(n, s),
    });
    prop::collection::vec(field, 0..4).prop_map(|mut fs| {
        let mut seen = HashSet::new();
        fs.retain(|f| seen.insert(f.name.replace('-', "_")));
        fs
    })
}

fn schema() -> BoxedStrategy<Schema> {
    leaf()
        .prop_recursive(4, 48, 4, |inner| {
            prop_oneof![
                inner.clone().prop_map(|s| Schema::Sequential(Box::new(s))),
                inner.clone().prop_map(|s| Schema::Vector(Box::new(s))),
                inner.clone().prop_map(|s| Schema::Set(Box::new(s))),
                inner.clone().prop_map(|s| Schema::Maybe(Box::new(s))),
                (prop::bool::ANY, inner.clone()).prop_map(|(kw, v)| {
                    let k = if kw { Schema::Keyword } else { Schema::String };
                    Schema::MapOf(Box::new(k), Box::new(v))
                }),
                prop::collection::vec(inner.clone(), 0..3).prop_map(Schema::Tuple),
                prop::collection::vec(inner.clone(), 1..3).prop_map(Schema::Or),
                (fields(inner.clone()), prop::bool::ANY)
                    .prop_map(|(fields, closed)| Schema::Map(MapSchema { fields, closed })),
                fields(inner).prop_map(|fields| Schema::Map(MapSchema {
                    fields,
                    closed: false
                })),
            ]
        })
        .boxed()
}

fn datetime() -> impl Strategy<Value = Value> {
    (
        1000u32..9999,
        1u32..13,
        1u32..29,
        0u32..24,
        0u32..60,
        0u32..60,
        prop::bool::ANY,
    )
        .prop_map(|(y, mo, d, h, mi, s, z)| {
            let off = if z {
                "Z".to_string()
            } else {
                format!("+{:02}:30", h % 14)
            };
            Value::Str(format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}{off}"))
        })
}

/// A strategy for values the schema accepts.
fn value_for(s: &Schema) -> BoxedStrategy<Value> {
    match s {
        Schema::Any => any::<i64>().prop_map(Value::Int).boxed(),
        Schema::Nil => Just(Value::Nil).boxed(),
        Schema::String => "[a-z ]{0,8}".prop_map(Value::Str).boxed(),
        Schema::Int => any::<i64>().prop_map(Value::Int).boxed(),
        Schema::Double => (-1.0e6..1.0e6f64).prop_map(Value::Float).boxed(),
        Schema::Boolean => any::<bool>().prop_map(Value::Bool).boxed(),
        Schema::Keyword => "[a-z]{1,6}".prop_map(Value::Keyword).boxed(),
        Schema::Datetime => datetime().boxed(),
        Schema::Enum(vs) => prop::sample::select(vs.clone()).boxed(),
        Schema::And(parts) => match parts.as_slice() {
            [Schema::Int, Schema::Compare(CmpOp::Gt, Value::Int(n))] => {
                (n + 1..n + 1000).prop_map(Value::Int).boxed()
            }
            _ => unreachable!("generator only builds [:and :int [:> n]]"),
        },
        Schema::Compare(_, Value::Int(n)) => (n - 1000..=*n).prop_map(Value::Int).boxed(),
        Schema::Re(p) => {
            let pat = match p.as_str() {
                "^[a-z]+$" => "[a-z]{1,5}",
                "^x" => "x[a-z]{0,4}",
                _ => "[a-z]{0,3}[0-9]{2}",
            };
            pat.prop_map(Value::Str).boxed()
        }
        Schema::Vector(t) => prop::collection::vec(value_for(t), 0..4)
            .prop_map(Value::Vector)
            .boxed(),
        Schema::Sequential(t) => (prop::collection::vec(value_for(t), 0..4), any::<bool>())
            .prop_map(|(xs, list)| {
                if list {
                    Value::List(xs)
                } else {
                    Value::Vector(xs)
                }
            })
            .boxed(),
        Schema::Set(t) => prop::collection::vec(value_for(t), 0..4)
            .prop_map(|xs| Value::Set(xs.into_iter().collect::<ptc_shared::value::Set>().into()))
            .boxed(),
        Schema::Maybe(t) => prop_oneof![Just(Value::Nil), value_for(t)].boxed(),
        Schema::MapOf(k, v) => {
            let kw = matches!(**k, Schema::Keyword);
            prop::collection::vec(("[a-z]{1,5}", value_for(v)), 0..4)
                .prop_map(move |kvs| {
                    let key = |s: String| if kw { Value::Keyword(s) } else { Value::Str(s) };
                    Value::Map(
                        kvs.into_iter()
                            .map(|(k, v)| (key(k), v))
                            .collect::<ptc_shared::value::Map>()
                            .into(),
                    )
                })
                .boxed()
        }
        Schema::Tuple(ts) => ts
            .iter()
            .map(value_for)
            .collect::<Vec<_>>()
            .prop_map(Value::Vector)
            .boxed(),
        Schema::Or(alts) => {
            prop::strategy::Union::new(alts.iter().map(value_for).collect::<Vec<_>>()).boxed()
        }
        Schema::Map(ms) => map_value(ms),
        Schema::Compare(..) => unreachable!("generator only builds integer bounds"),
    }
}

/// A map with every required field, some optional ones, keyword or string keys, and (when the
/// map is open) sometimes an extra key.
fn map_value(ms: &MapSchema) -> BoxedStrategy<Value> {
    let entries: Vec<BoxedStrategy<Option<(String, Value)>>> = ms
        .fields
        .iter()
        .map(|f| {
            let name = f.name.clone();
            let v = value_for(&f.schema).prop_map(move |v| Some((name.clone(), v)));
            if f.optional {
                prop_oneof![Just(None), v].boxed()
            } else {
                v.boxed()
            }
        })
        .collect();
    let closed = ms.closed;
    (entries, any::<bool>(), any::<bool>())
        .prop_map(move |(es, kw, extra)| {
            let key = |s: String| if kw { Value::Keyword(s) } else { Value::Str(s) };
            let mut m: ptc_shared::value::Map =
                es.into_iter().flatten().map(|(k, v)| (key(k), v)).collect();
            if extra && !closed {
                m.insert(Value::Str("zz extra".into()), Value::Int(1));
            }
            Value::Map(Box::new(m))
        })
        .boxed()
}

fn schema_and_value() -> impl Strategy<Value = (Schema, Value)> {
    schema().prop_flat_map(|s| {
        let v = value_for(&s);
        (Just(s), v)
    })
}

/// Whether an empty set is certainly rejected by `s`.
fn rejects_set(s: &Schema) -> bool {
    match s {
        Schema::Any | Schema::Set(_) => false,
        Schema::Maybe(t) => rejects_set(t),
        Schema::Or(alts) => alts.iter().all(rejects_set),
        _ => true,
    }
}

#[derive(Clone, Debug)]
enum Step {
    Key(Value),
    Index(usize),
}

/// Every spot where replacing the value by an empty set must fail: (steps, expected path).
fn spots(
    s: &Schema,
    v: &Value,
    steps: &mut Vec<Step>,
    path: String,
    out: &mut Vec<(Vec<Step>, String)>,
) {
    if rejects_set(s) {
        out.push((steps.clone(), path.clone()));
    }
    let join = |name: &str| {
        if path.is_empty() {
            name.to_string()
        } else {
            format!("{path}.{name}")
        }
    };
    match (s, v) {
        (Schema::Maybe(t), v) if *v != Value::Nil => spots(t, v, steps, path.clone(), out),
        (Schema::Vector(t) | Schema::Sequential(t), Value::Vector(xs) | Value::List(xs)) => {
            for (i, x) in xs.iter().enumerate() {
                steps.push(Step::Index(i));
                spots(t, x, steps, format!("{path}[{i}]"), out);
                steps.pop();
            }
        }
        (Schema::Tuple(ts), Value::Vector(xs)) => {
            for (i, (t, x)) in ts.iter().zip(xs).enumerate() {
                steps.push(Step::Index(i));
                spots(t, x, steps, format!("{path}[{i}]"), out);
                steps.pop();
            }
        }
        (Schema::Map(ms), Value::Map(m)) => {
            for f in &ms.fields {
                let found = m
                    .get_key_value(&Value::Keyword(f.name.clone()))
                    .or_else(|| m.get_key_value(&Value::Str(f.name.clone())));
                if let Some((k, x)) = found {
                    steps.push(Step::Key(k.clone()));
                    spots(&f.schema, x, steps, join(&f.name), out);
                    steps.pop();
                }
            }
        }
        (Schema::MapOf(_, t), Value::Map(m)) => {
            for (k, x) in m.iter() {
                let (Value::Keyword(name) | Value::Str(name)) = k else {
                    continue;
                };
                steps.push(Step::Key(k.clone()));
                spots(t, x, steps, join(name), out);
                steps.pop();
            }
        }
        _ => {}
    }
}

fn replace(v: &mut Value, steps: &[Step], new: Value) {
    let Some((first, rest)) = steps.split_first() else {
        *v = new;
        return;
    };
    match (first, v) {
        (Step::Index(i), Value::Vector(xs) | Value::List(xs)) => replace(&mut xs[*i], rest, new),
        (Step::Key(k), Value::Map(m)) => replace(m.get_mut(k).unwrap(), rest, new),
        _ => unreachable!("steps follow the value"),
    }
}

fn stringify_ints(v: Value) -> Value {
    match v {
        Value::Int(i) => Value::Str(i.to_string()),
        Value::Vector(xs) => Value::Vector(xs.into_iter().map(stringify_ints).collect()),
        Value::List(xs) => Value::List(xs.into_iter().map(stringify_ints).collect()),
        Value::Map(m) => Value::Map(
            m.into_iter()
                .map(|(k, v)| (k, stringify_ints(v)))
                .collect::<ptc_shared::value::Map>()
                .into(),
        ),
        other => other,
    }
}

/// A value of no particular schema: a scalar, or a list or vector of them.
fn wrong_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        enum_value(),
        prop::collection::vec(enum_value(), 0..3).prop_map(Value::Vector),
        prop::collection::vec(enum_value(), 0..3).prop_map(Value::List),
    ]
}

/// A context for `fields`: each field present or not, its key in one of the spellings a
/// context may use, its value right, with ints as strings (to coerce) or wrong; and maybe an
/// undeclared key.
fn context_for(fields: &[Field]) -> BoxedStrategy<Value> {
    let entries: Vec<BoxedStrategy<Option<(Value, Value)>>> = fields
        .iter()
        .map(|f| {
            let name = f.name.clone();
            (value_for(&f.schema), wrong_value(), 0u8..6, 0u8..3)
                .prop_map(move |(v, wrong, spell, kind)| {
                    let v = match kind {
                        0 => v,
                        1 => stringify_ints(v),
                        _ => wrong,
                    };
                    let key = match spell {
                        0 => return None,
                        1 => Value::Str(name.clone()),
                        2 => Value::keyword(name.replace('_', "-")),
                        3 => Value::Str(name.replace('_', "-")),
                        _ => Value::keyword(&name),
                    };
                    Some((key, v))
                })
                .boxed()
        })
        .collect();
    (entries, prop::option::of((name(), enum_value())))
        .prop_map(|(entries, extra)| {
            let mut m = ptc_shared::value::Map::new();
            m.extend(entries.into_iter().flatten());
            m.extend(extra.map(|(k, v)| (Value::Str(k), v)));
            Value::Map(m.into())
        })
        .boxed()
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn parsing_junk_never_panics(text in r#"[\[\]{}():?,a-z_ "\-=>0-9.]{0,40}"#) {
        let _ = Signature::parse(&text);
        let _ = Schema::parse_data(&text);
    }

    #[test]
    fn schema_renders_and_parses_back(s in schema()) {
        let short = s.to_shorthand();
        prop_assert_eq!(&Schema::parse(&short).map_err(|e| TestCaseError::fail(format!("{short}: {e}")))?, &s, "shorthand {}", short);
        let malli = s.to_malli();
        prop_assert_eq!(&Schema::parse_data(&malli).map_err(|e| TestCaseError::fail(format!("{malli}: {e}")))?, &s, "malli {}", malli);
    }

    #[test]
    fn signature_renders_and_parses_back(params in fields(schema()), out in schema()) {
        let sig = Signature::new(params, out);
        let text = sig.render();
        prop_assert_eq!(&Signature::parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?, &sig, "{}", text);
    }

    #[test]
    fn generated_values_validate((s, v) in schema_and_value()) {
        let errors = validate(&s, &v);
        prop_assert!(errors.is_empty(), "{} on {}: {:?}", s.to_shorthand(), v, errors);
    }

    #[test]
    fn owned_and_borrowed_validation_agree((s, v) in schema_and_value(), as_string in any::<bool>()) {
        // Stringify every int so that inputs have something to coerce.
        let v = if as_string { stringify_ints(v) } else { v };
        let sig = Signature::new(vec![Field::new("x", s.clone())], s);
        let ctx = Value::Map([(Value::keyword("x"), v.clone())].into_iter().collect::<ptc_shared::value::Map>().into());
        for mode in [Mode::Enabled, Mode::WarnOnly, Mode::Strict] {
            prop_assert_eq!(sig.validate_output(&v, mode), sig.validate_output_owned(v.clone(), mode));
            prop_assert_eq!(sig.validate_input(&ctx, mode), sig.validate_input_owned(ctx.clone(), mode));
        }
    }

    #[test]
    fn mutations_fail_at_their_path((s, v) in schema_and_value(), pick in any::<prop::sample::Index>()) {
        let mut found = Vec::new();
        spots(&s, &v, &mut Vec::new(), String::new(), &mut found);
        prop_assume!(!found.is_empty());
        let (steps, path) = pick.get(&found).clone();
        let mut bad = v.clone();
        replace(&mut bad, &steps, Value::Set(Default::default()));
        let errors = validate(&s, &bad);
        prop_assert!(errors.iter().any(|e| e.path == path),
            "{} with a set at `{}`: {:?}", s.to_shorthand(), path, errors);
    }

    /// Checking a context in its encoding gives what checking its tree gives: the same
    /// errors, warnings and value, entries in the same order (compared as encodings).
    #[test]
    fn encoded_and_owned_input_validation_agree(
        (params, ctx) in fields(schema()).prop_flat_map(|fs| {
            let ctx = context_for(&fs);
            (Just(fs), ctx)
        })
    ) {
        let sig = Signature::new(params, Schema::Any);
        let encoded = EncodedValue::encode(&ctx);
        for mode in [Mode::Enabled, Mode::WarnOnly, Mode::Strict, Mode::Disabled] {
            let tree = sig.validate_input_owned(ctx.clone(), mode);
            let stream = sig.validate_input_encoded(&encoded, mode);
            match (tree, stream) {
                (Ok(t), Ok(s)) => {
                    prop_assert_eq!(&t.warnings, &s.warnings);
                    let got = s.value.unwrap_or_else(|| encoded.clone());
                    prop_assert_eq!(EncodedValue::encode(&t.value), got, "{:?}", mode);
                }
                (Err(t), Err(s)) => prop_assert_eq!(t, s),
                (t, s) => prop_assert!(false, "{:?}: tree {:?}, encoded {:?}", mode, t, s),
            }
        }
    }
}
