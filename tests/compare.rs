//! Value comparison under the corpus's rules (see the crate docs).

use ptc_shared::Value;

/// Whether `actual` matches `expected`; `division` relaxes int/float equality.
pub fn matches(expected: &Value, actual: &Value, division: bool) -> bool {
    use Value::*;
    match (expected, actual) {
        (Float(a), Float(b)) => float_eq(*a, *b),
        (Int(a), Float(b)) | (Float(b), Int(a)) if division => float_eq(*a as f64, *b),
        (Vector(a) | List(a), Vector(b) | List(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| matches(x, y, division))
        }
        (Set(a), Set(b)) => {
            a.len() == b.len() && a.iter().all(|x| b.iter().any(|y| matches(x, y, division)))
        }
        (Map(a), Map(b)) => {
            a.len() == b.len()
                && a.iter().all(|(k, v)| {
                    b.iter()
                        .any(|(k2, v2)| matches(k, k2, false) && matches(v, v2, division))
                })
        }
        (a, b) => a == b,
    }
}

fn float_eq(a: f64, b: f64) -> bool {
    if a == b || (a.is_nan() && b.is_nan()) {
        return true;
    }
    let diff = (a - b).abs();
    diff <= 1e-12 || diff <= 1e-9 * a.abs().max(b.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        assert!(matches(
            &Value::List(vec![Value::Int(1)]),
            &Value::Vector(vec![Value::Int(1)]),
            false
        ));
        assert!(!matches(&Value::Int(2), &Value::Float(2.0), false));
        assert!(matches(&Value::Int(2), &Value::Float(2.0), true));
        assert!(matches(&Value::Float(0.1 + 0.2), &Value::Float(0.3), false));
        let mut a = ptc_shared::value::Map::new();
        a.insert(Value::keyword("a"), Value::Int(1));
        let mut b = ptc_shared::value::Map::new();
        b.insert(Value::string("a"), Value::Int(1));
        // Map keys compare exactly: a keyword key is not a string key (nor an int a float).
        assert!(!matches(
            &Value::Map(Box::new(a.clone())),
            &Value::Map(Box::new(b.clone())),
            false
        ));
        assert!(matches(
            &Value::Map(Box::new(a.clone())),
            &Value::Map(Box::new(a)),
            false
        ));
        assert!(matches(
            &Value::Map(Box::new(b.clone())),
            &Value::Map(Box::new(b)),
            false
        ));
        let mut i = ptc_shared::value::Map::new();
        i.insert(Value::Int(1), Value::Int(1));
        let mut f = ptc_shared::value::Map::new();
        f.insert(Value::Float(1.0), Value::Int(1));
        assert!(!matches(
            &Value::Map(Box::new(i)),
            &Value::Map(Box::new(f)),
            true
        ));
    }
}
