// The parts the p3 measurement drivers (`p3_native`, `p3_vm`) share, `include!`d at an
// example's root: the context as `eval_repeat` imports it, hinted keyword reads, and p3's
// last stage (the accumulator's top five by total, then name).

use ptc_runner::convert::import_encoded;
use ptc_runner::value::{KeyHint, Text, Value};
use ptc_shared::value::EncodedValue;

/// The JSON context at `path`, imported as a run imports it.
fn load_context(path: &str) -> Value {
    let text = std::fs::read(path).expect("context file");
    let e = EncodedValue::from_json_text(&text, usize::MAX).expect("context is JSON");
    import_encoded(&e).expect("context imports")
}

/// A keyword's text with a hint of its own, as a call site in the source holds one.
fn kw(name: &str) -> (Text, KeyHint) {
    (Text::from(name), KeyHint::default())
}

/// `(:k m)`, read in place.
fn field<'a>(m: &'a Value, k: &(Text, KeyHint)) -> &'a Value {
    match m {
        Value::Map(map) => map.get_keyword_hinted(&k.0, &k.1).unwrap_or(&Value::Nil),
        _ => &Value::Nil,
    }
}

/// The five entries of `acc` with the largest totals, ties by name: p3's answer.
#[inline(always)]
fn top_five(acc: &Value) -> Vec<(Value, Value)> {
    let mut rows: Vec<(Value, Value)> = match acc {
        Value::Map(m) => m
            .iter_unordered()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        _ => Vec::new(),
    };
    rows.sort_by(|a, b| match (&a.1, &b.1) {
        (Value::Float(x), Value::Float(y)) => y.total_cmp(x).then_with(|| a.0.cmp(&b.0)),
        _ => std::cmp::Ordering::Equal,
    });
    rows.truncate(5);
    rows
}
