//! Flat maps whose keys are all integers close together find them through a dense table of
//! positions instead of the hash index (`value::flat::Dense`), and switch to the hash index
//! when a key breaks this. Checked through the public `run`: random sequences of `into`,
//! `assoc`, `update`, `dissoc` and lookups over integer keys (ascending, descending, shuffled,
//! offset, with gaps, at the ends of `i64`, with a non-integer key now and then) must give the
//! lookups, sizes and keys of a model, and the same results and steps as the same program over
//! keys spread far apart (`k * ODD`, wrapping: a bijection of `i64`), which the hash index holds.
#![allow(clippy::unwrap_used)]

#[path = "support/outcome.rs"]
mod support;

#[path = "support/rng.rs"]
mod rng;

use ptc_shared::Limits;
use rng::Rng;
use support::{assert_same_at_budget, outcome};

/// Spreads integer keys far apart; odd, so multiplying by it (wrapping) keeps keys distinct.
const ODD: i64 = 1_000_003;

/// Keys that are not integers, none equal to an integer.
const OTHERS: [&str; 5] = ["1.0", "\"1\"", ":a", "nil", "[1]"];

#[derive(Clone, Copy, PartialEq, Debug)]
enum Key {
    Int(i64),
    Other(usize),
}

impl Key {
    fn lit(self, spread: bool) -> String {
        match self {
            Key::Int(k) if spread => k.wrapping_mul(ODD).to_string(),
            Key::Int(k) => k.to_string(),
            Key::Other(i) => OTHERS[i].to_string(),
        }
    }
}

fn int(n: usize) -> i64 {
    i64::try_from(n).unwrap()
}

/// Integer keys in one of the shapes programs make (and some they rarely do).
fn int_key(rng: &mut Rng, shape: usize, i: usize) -> i64 {
    let i = int(i);
    match shape {
        0 => i,
        1 => 1000 + i,
        2 => 500 - i,
        3 => int(rng.below(60)) - 20,
        4 => int(rng.below(400)),
        5 => [i64::MIN, i64::MAX, 0, -1, 1][rng.below(5)],
        _ => i * 3 - 90,
    }
}

fn key(rng: &mut Rng, shape: usize, i: usize) -> Key {
    if rng.below(50) == 0 {
        Key::Other(rng.below(OTHERS.len()))
    } else {
        Key::Int(int_key(rng, shape, i))
    }
}

/// A map built by `into` and a chain of updates, read as `[count lookups contains? lookup]`:
/// the program with the map's keys listed too and the model's answer to it, and the program
/// without the listing over dense and over spread keys.
fn case(rng: &mut Rng) -> (String, String, String, String) {
    let shape = rng.below(7);
    let n = rng.below(70);
    let mut model: Vec<(Key, i64)> = Vec::new();
    let set =
        |model: &mut Vec<(Key, i64)>, k: Key, v: i64| match model.iter_mut().find(|e| e.0 == k) {
            Some(e) => e.1 = v,
            None => model.push((k, v)),
        };
    let (mut into, mut chain) = (Vec::new(), Vec::new());
    for i in 0..n {
        let k = key(rng, shape, i);
        let v = int(i);
        if i < n / 2 {
            into.push((k, v));
            set(&mut model, k, v);
            continue;
        }
        match rng.below(30) {
            0 => {
                chain.push(("(dissoc {k})".to_string(), k));
                model.retain(|e| e.0 != k);
            }
            1..=5 => {
                chain.push(("(update {k} (fnil inc 0))".to_string(), k));
                let old = model.iter().find(|e| e.0 == k).map_or(1, |e| e.1 + 1);
                set(&mut model, k, old);
            }
            _ => {
                chain.push((format!("(assoc {{k}} {v})"), k));
                set(&mut model, k, v);
            }
        }
    }
    let queries: Vec<Key> = (0..12)
        .map(|i| match rng.below(3) {
            0 if !model.is_empty() => model[rng.below(model.len())].0,
            _ => key(rng, shape, i),
        })
        .collect();
    let program = |spread: bool, keys: bool| {
        let into: Vec<String> = into
            .iter()
            .map(|(k, v)| format!("[{} {v}]", k.lit(spread)))
            .collect();
        let chain: Vec<String> = chain
            .iter()
            .map(|(op, k)| op.replace("{k}", &k.lit(spread)))
            .collect();
        let qs: Vec<String> = queries.iter().map(|q| q.lit(spread)).collect();
        let listing = if keys {
            " (sort (map str (keys m)))"
        } else {
            ""
        };
        format!(
            "(let [m (-> (into {{}} [{}]) {}) qs [{}]] \
             [(count m) (mapv #(get m % :none) qs) (mapv #(contains? m %) qs) (m {}){listing}])",
            into.join(" "),
            chain.join(" "),
            qs.join(" "),
            queries.first().map_or("0".to_string(), |q| q.lit(spread)),
        )
    };
    let found = |q: &Key| model.iter().find(|e| e.0 == *q).map(|e| e.1);
    let mut keys: Vec<String> = model.iter().map(|e| print_key(e.0)).collect();
    keys.sort();
    let want = format!(
        "[{} [{}] [{}] {} ({})]",
        model.len(),
        queries
            .iter()
            .map(|q| found(q).map_or(":none".to_string(), |v| v.to_string()))
            .collect::<Vec<_>>()
            .join(" "),
        queries
            .iter()
            .map(|q| found(q).is_some().to_string())
            .collect::<Vec<_>>()
            .join(" "),
        queries
            .first()
            .and_then(found)
            .map_or("nil".to_string(), |v| v.to_string()),
        keys.iter()
            .map(|k| format!("{k:?}"))
            .collect::<Vec<_>>()
            .join(" "),
    );
    (
        program(false, true),
        want,
        program(false, false),
        program(true, false),
    )
}

/// What `str` makes of a key.
fn print_key(k: Key) -> String {
    match k {
        Key::Int(i) => i.to_string(),
        Key::Other(i) => ["1.0", "1", ":a", "", "[1]"][i].to_string(),
    }
}

#[test]
fn integer_keyed_maps_answer_as_the_model_and_as_the_hash_index() {
    let mut rng = Rng(0x5eed_0d3e);
    let free = Limits {
        max_steps: u64::MAX / 2,
        ..Limits::default()
    };
    for round in 0..400 {
        let (listed, want, dense, spread) = case(&mut rng);
        assert_eq!(outcome(&listed, free).0, want, "round {round}: {listed}");
        let (got, steps) = outcome(&dense, free);
        assert_eq!(
            outcome(&spread, free),
            (got, steps),
            "round {round}: {dense}"
        );
        if round % 10 == 0 {
            assert_same_at_budget(&dense, &spread, steps, outcome);
        }
    }
}
