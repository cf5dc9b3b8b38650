//! `update` on maps against its definition, `(assoc m k (f (get m k) x...))`, through the
//! evaluator: random sequences of updates, `assoc`es, `dissoc`s and ordered reads take maps from
//! small through flat (`value::flat`) to persistent, with versions kept alive so that updates of
//! shared maps copy. `update` changes an exact key's value in place and calls `f` through
//! `apply1`/`apply2`; every form must print and compare exactly as the definition's. Pairs
//! conjoined into maps (`into {}`, `conj`) against `assoc`: a fresh pair is taken apart in
//! place, a shared one must be left whole.
#![allow(clippy::unwrap_used)]

#[path = "support/outcome.rs"]
mod support;

#[path = "support/rng.rs"]
mod rng;
use rng::Rng;

/// Keys: integers, texts, a keyword and a string of one text (a keyword's `get` finds the
/// string key when the keyword is absent), a vector.
const KEYS: &[&str] = &[
    "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16",
    "\"s0\"", "\"s1\"", "\"s2\"", ":a", "\"a\"", ":b", "[1 2]", "nil",
];

/// `f` and its extra arguments, one or two (`apply1`/`apply2`) or three (an argument vector).
const FNS: &[&str] = &[
    "(fnil + 0) 5",
    "(fnil * 1) 3",
    "(fnil + 0) 1 2",
    "(fnil + 0) 1 2 3",
    "(fn [o] (if o (inc o) 0))",
    "(fn [o x] (if o (- o x) x)) 4",
    "(constantly 7)",
    "#(if %1 (+ %1 %2 %3) 0) 1 1",
];

/// One step as `update` (`fast`) and as its definition (`general`), or another operation.
fn step(rng: &mut Rng) -> (String, String) {
    let k = KEYS[rng.below(KEYS.len())];
    match rng.below(12) {
        0 => (format!("(dissoc {k})"), format!("(dissoc {k})")),
        1 => (format!("(assoc {k} 1)"), format!("(assoc {k} 1)")),
        // An ordered read (builds a flat map's tree; later updates then go to the tree).
        2 => {
            let read = "((fn [m] (first m) m))".to_string();
            (read.clone(), read)
        }
        _ => {
            let f = FNS[rng.below(FNS.len())];
            let (func, extra) = split_fn(f);
            (
                format!("(update {k} {f})"),
                format!("((fn [m] (assoc m {k} ({func} (get m {k}) {extra}))))"),
            )
        }
    }
}

/// `"(fnil + 0) 5"` -> (`"(fnil + 0)"`, `"5"`): the fn is the first balanced form.
fn split_fn(f: &str) -> (&str, &str) {
    let mut depth = 0;
    for (i, c) in f.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return (&f[..=i], f[i + 1..].trim());
                }
            }
            _ => {}
        }
    }
    (f, "")
}

fn run(src: &str) -> String {
    support::result_of(src, None)
}

#[test]
fn update_gives_what_its_definition_gives_on_every_map_form() {
    for seed in 1..=40u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        // Three stretches: m2 and m3 both continue from m1, so the first update of each copies.
        let stretches: Vec<Vec<(String, String)>> = (0..3)
            .map(|_| (0..40).map(|_| step(&mut rng)).collect())
            .collect();
        let program = |pick: fn(&(String, String)) -> &String| {
            let ops: Vec<String> = stretches
                .iter()
                .map(|s| s.iter().map(pick).cloned().collect::<Vec<_>>().join(" "))
                .collect();
            format!(
                "(let [m1 (-> {{}} {}) m2 (-> m1 {}) m3 (-> m1 {})] [m1 m2 m3])",
                ops[0], ops[1], ops[2]
            )
        };
        let fast = program(|(f, _)| f);
        let general = program(|(_, g)| g);
        let (a, b) = (run(&fast), run(&general));
        assert_eq!(a, b, "seed {seed}:\n{fast}\n{general}");
        assert_eq!(run(&format!("(= {fast} {general})")), "true", "seed {seed}");
    }
}

/// The maps the test above builds do grow past a small map (so flat and persistent maps are
/// what it compares), and an update's result prints in the same order as the map it updated.
#[test]
fn updates_keep_a_large_maps_order() {
    let got = run("(let [m (into {} (map (fn [i] [i i]) (range 40)))
               u (reduce (fn [acc i] (update acc i (fnil + 0) 100)) m (range 40))]
           [(count u) (= (keys m) (keys u)) (= (map #(- % 100) (vals u)) (vals m))])");
    assert_eq!(got, "[40 true true]");
}

/// `group-by` and `frequencies` index their keys as flat maps do (integers and texts hashed
/// directly): over random keys of every kind, including equal ones of different kinds (a vector
/// and a list), they give exactly the map that `update` builds one element at a time, in the
/// same order (first-seen, then the persistent map's past eight keys). No keyword shares a
/// string's text here: `get` (so `update`) finds string key `"a"` for keyword `:a`, by design.
#[test]
fn group_by_and_frequencies_match_their_definitions() {
    const POOL: &[&str] = &[
        "0", "1", "2", "3", "17", "-1", "1.0", "0.0", "\"a\"", ":k", "\"\"", "\"b\"", "[1 2]",
        "'(1 2)", "nil", "true", "{:a 1}", "#{1}", "\\a", "'x",
    ];
    for seed in 1..=30u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let n = 1 + rng.below(60);
        let xs: Vec<&str> = (0..n).map(|_| POOL[rng.below(POOL.len())]).collect();
        let src = format!(
            "(let [xs [{}]
                   g (group-by identity xs)
                   g2 (reduce (fn [m x] (update m x (fnil conj []) x)) {{}} xs)
                   f (frequencies xs)
                   f2 (reduce (fn [m x] (update m x (fnil inc 0))) {{}} xs)]
               [(= g g2) (= (pr-str g) (pr-str g2)) (= f f2) (= (pr-str f) (pr-str f2))
                (= (keys f) (keys g))])",
            xs.join(" ")
        );
        assert_eq!(
            run(&src),
            "[true true true true true]",
            "seed {seed}: {src}"
        );
    }
}

/// With few groups, `group-by` finds a key's group by identity before hashing (the same
/// string or keyword, an equal integer). Keys here are bound once and reused (identical), or
/// made again (equal, not identical), or equal-looking of another kind (`1.0`, a keyword of the
/// same text as a string is not used: see above); group counts run from 1 past eight, where
/// the scan stops. The result must be the map `update` builds, in the same order.
#[test]
fn group_by_by_identity_matches_its_definition() {
    const KEYS: &[&str] = &[
        "s",
        "s",
        "(str s)",
        "t",
        "(str t)",
        "k",
        "(keyword \"k\")",
        "1",
        "1",
        "1.0",
        "2",
        "-1",
        "nil",
        "[1]",
        "\"u\"",
        "(str \"v\" 1)",
        "(subs \"ab\" 1)",
        "\"b\"",
        "3",
        "4",
        "5",
        "6",
    ];
    for seed in 1..=40u64 {
        let mut rng = Rng(seed.wrapping_mul(0x2545_f491_4f6c_dd1d));
        let groups = 1 + rng.below(KEYS.len());
        let n = 1 + rng.below(50);
        let xs: Vec<String> = (0..n)
            .map(|i| format!("[{} {i}]", KEYS[rng.below(groups)]))
            .collect();
        let src = format!(
            "(let [s \"a\" t \"b\" k :k
                   xs [{}]
                   g (group-by first xs)
                   g2 (reduce (fn [m x] (update m (first x) (fnil conj []) x)) {{}} xs)]
               [(= g g2) (= (pr-str g) (pr-str g2)) (count g)])",
            xs.join(" ")
        );
        let out = run(&src);
        assert!(
            out.starts_with("[true true "),
            "seed {seed}: {src} -> {out}"
        );
    }
}

/// `(update m k (fnil op d) x)` with a builtin number op is answered without the native's call
/// layers (`hof::call_native2`, under `Interp::apply2`): over values of every kind (overflow,
/// NaN, texts that are errors), each op and default must give what the definition, which calls
/// the fnil itself, gives, and an error must read the same.
#[test]
fn update_through_a_fnil_of_a_number_op_answers_as_its_definition() {
    let src = r#"(defn safe [f] (try (pr-str (f)) (catch Exception e (str "error: " (ex-message e)))))
      (let [vs [nil 0 3 -2 9223372036854775807 2.5 ##NaN "a" :k [1]]
            ds [0 1.5 nil "d"]
            out (for [v vs d ds x vs
                      [op fast general]
                        [["+" (safe #(update {:a v} :a (fnil + d) x))
                              (safe #(assoc {:a v} :a ((fnil + d) (get {:a v} :a) x)))]
                         ["-" (safe #(update {:a v} :a (fnil - d) x))
                              (safe #(assoc {:a v} :a ((fnil - d) (get {:a v} :a) x)))]
                         ["*" (safe #(update {:a v} :a (fnil * d) x))
                              (safe #(assoc {:a v} :a ((fnil * d) (get {:a v} :a) x)))]
                         ["<" (safe #(update {:a v} :a (fnil < d) x))
                              (safe #(assoc {:a v} :a ((fnil < d) (get {:a v} :a) x)))]
                         ["=" (safe #(update {:a v} :a (fnil = d) x))
                              (safe #(assoc {:a v} :a ((fnil = d) (get {:a v} :a) x)))]
                         ["mod" (safe #(update {:a v} :a (fnil mod d) x))
                                (safe #(assoc {:a v} :a ((fnil mod d) (get {:a v} :a) x)))]]
                      :when (not= fast general)]
                  [op v d x fast general])]
        [(count vs) (vec out)])"#;
    assert_eq!(run(src), "[10 []]");
    assert_eq!(run("(update {:a nil} :a (fnil + 0) 2.5)"), "{:a 2.5}");
}

/// The fnil is one call deeper on both paths: from a recursion of `n` levels, the depth limit
/// ends the same `n`s, with the same message.
#[test]
fn update_through_a_fnil_reaches_the_depth_limit_where_its_definition_does() {
    let at = |body: &str, n: u32| {
        let src =
            format!("(defn down [n] (if (zero? n) {body} (first [(down (dec n))]))) (down {n})");
        support::outcome(&src, ptc_shared::Limits::default()).0
    };
    let mut failed = 0;
    for n in 394..=402 {
        let fast = at("(update {:a 1} :a (fnil + 0) 2)", n);
        let general = at("(assoc {:a 1} :a ((fnil + 0) (get {:a 1} :a) 2))", n);
        assert_eq!(fast, general, "{n} levels");
        failed += usize::from(fast.contains("deeper"));
    }
    assert!(failed > 0 && failed < 9, "the limit falls inside the range");
}

/// `into {}` and `conj` of `[k v]` pairs: a fresh pair, held only by the call, is taken apart
/// in place (`coll::pair`); one that is also held elsewhere is copied and must be left whole.
/// Over random keys and values (collections among them, so what is taken out is not only
/// numbers), every way gives the map that `assoc` of each pair gives, and the pairs kept in a
/// vector print as they were built.
#[test]
fn pairs_conjoined_into_maps_match_assoc_and_stay_whole_where_shared() {
    const POOL: &[&str] = &[
        "0", "1", "7", "-3", "\"a\"", "\"b\"", ":k", "nil", "[1 2]", "{:x [3]}", "2.5", "#{4}",
    ];
    for seed in 1..=30u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let n = 1 + rng.below(24);
        let pairs: Vec<String> = (0..n)
            .map(|_| format!("[{} {}]", rng.pick(POOL), rng.pick(POOL)))
            .collect();
        let src = format!(
            "(let [ps [{}]
                   want (reduce (fn [m [k v]] (assoc m k v)) {{}} ps)
                   fresh (into {{}} (map (fn [[k v]] [k v]) ps))
                   kept (vec (map (fn [[k v]] [k v]) ps))
                   shared (into {{}} kept)
                   conjed (reduce (fn [m [k v]] (conj m [k v])) {{}} ps)]
               [(= want fresh shared conjed) (= (pr-str want) (pr-str fresh) (pr-str conjed))
                (= kept ps) (pr-str kept)])",
            pairs.join(" ")
        );
        let whole = format!("[true true true {:?}]", format!("[{}]", pairs.join(" ")));
        let got = run(&src);
        assert_eq!(got, whole, "seed {seed}: {src}");
    }
}
