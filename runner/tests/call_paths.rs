//! The evaluator's shortcuts on the call path, each against the general path it stands for,
//! through the public `run`:
//!
//! - `(op x y)` of a comparison or `=` written in the source (an inline `Prim` node) answers as
//!   the builtin's general entry (`apply`) does, over numbers of both kinds, NaN, infinities,
//!   equal texts in two allocations, and values that are errors for the comparisons, with
//!   constant operands (read in place) on either side;
//! - `(:k x)` on a local or a captured value (read in place, no copy) answers as `get` does, also
//!   as an operand of a prim beside a constant (`(= "paid" (:status o))`), where it is charged the
//!   same steps as the call it stands for;
//! - a lambda with one fixed arity is entered without the arity search, and its errors (wrong
//!   argument count, depth) read as those of the general path (several arities, variadic).
#![allow(clippy::unwrap_used)]

use ptc_runner::{RunOptions, run};

/// The printed result of `src`, or the failure's message.
fn eval(src: &str) -> String {
    match run(src, RunOptions::default()) {
        Ok(step) => step.return_value.map(|v| v.to_string()).unwrap_or_default(),
        Err(step) => format!("failed: {:?}", step.fail.map(|f| f.message)),
    }
}

const GRID: &str = r#"[1 -7 0 2 2.5 1.0 -0.0 0.0 ##NaN ##Inf ##-Inf 9223372036854775807 -9223372036854775808
                       9007199254740993 9.007199254740992E15 "ab" (str "a" "b") "abc" :ab \a nil true]"#;

#[test]
fn inline_comparisons_and_equality_answer_as_the_general_entries() {
    let src = format!(
        r#"(defn safe [f] (try (pr-str (f)) (catch Exception e (str "error: " (ex-message e)))))
           (let [xs {GRID}]
             [(count (for [x xs y xs] 1))
              (vec (for [x xs y xs
                         [op inline general]
                           [["<" (safe #(< x y)) (safe #(apply < [x y]))]
                            [">" (safe #(> x y)) (safe #(apply > [x y]))]
                            ["<=" (safe #(<= x y)) (safe #(apply <= [x y]))]
                            [">=" (safe #(>= x y)) (safe #(apply >= [x y]))]
                            ["=" (safe #(= x y)) (safe #(apply = [x y]))]
                            ["+" (safe #(+ x y)) (safe #(apply + [x y]))]
                            ["-" (safe #(- x y)) (safe #(apply - [x y]))]
                            ["*" (safe #(* x y)) (safe #(apply * [x y]))]
                            ["mod" (safe #(mod x y)) (safe #(apply mod [x y]))]
                            ["const = left" (safe #(= "ab" y)) (safe #(apply = ["ab" y]))]
                            ["const < left" (safe #(< 1 y)) (safe #(apply < [1 y]))]
                            ["const > right" (safe #(> x 2.5)) (safe #(apply > [x 2.5]))]
                            ["const + right" (safe #(+ x 9223372036854775807)) (safe #(apply + [x 9223372036854775807]))]
                            ["local =" (let [a x b y] (= a b)) (apply = [x y])]
                            ["local with constants"
                             (safe (fn [] (let [z x] [(> z 2.5) (= z "ab") (+ z 1) (mod z 7) (< z y) z])))
                             (safe (fn [] [(apply > [x 2.5]) (apply = [x "ab"]) (apply + [x 1])
                                           (apply mod [x 7]) (apply < [x y]) x]))]
                            ["local <" (let [a x b y] (safe #(< a b))) (safe #(apply < [x y]))]]
                         :when (not= inline general)]
                     [op x y inline general]))])"#
    );
    assert_eq!(eval(&src), "[484 []]");
}

#[test]
fn inline_comparisons_keep_their_answers() {
    // Spot checks of the rules themselves, not only agreement: NaN compares false, an integer
    // meets a double as a double, `=` tells 1 from 1.0 and compares texts by content.
    let src = r#"[(> 2.5 1) (< 1 1.0) (<= 1 1.0) (> ##NaN 1) (< 1 ##NaN) (>= ##NaN ##NaN)
                  (< ##-Inf -9223372036854775808) (= 1 1.0) (= "ab" (str "a" "b")) (= :a :a)
                  (= nil nil) (= nil false) (> (:x {:x 3.5}) 3)]"#;
    assert_eq!(
        eval(src),
        "[true false true false false false true false true true true false true]"
    );
    assert!(
        eval("(< 1 \"a\")").contains("failed"),
        "{}",
        eval("(< 1 \"a\")")
    );
}

#[test]
fn keyword_reads_of_locals_and_captures_answer_as_get() {
    let src = r#"(let [vs [{:a 1} {"a" 2} {:b 3} {"x" 1 "a" 4} nil [7 8] #{:a} "str" 5 {:a nil}
                           {:q 1 :r 2 :s 3 :t 4 :u 5 :v 6 :w 7 :x 8 :y 9 :a 10}]]
                   (vec (for [v vs
                              :let [local (let [m v] [(:a m) (:a m)])
                                    captured ((fn [] (:a v)))
                                    general (get v :a)]
                              :when (not= local [general general])
                              :when (not= captured general)]
                          v)))"#;
    assert_eq!(eval(src), "[]");
    // The local is still there after a read in place: later reads and moves see it unchanged.
    assert_eq!(
        eval("(let [m {:a 1 :b 2}] [(:a m) (:b m) (assoc m :c 3) (:a m) m])"),
        "[1 2 {:a 1, :b 2, :c 3} 1 {:a 1, :b 2}]"
    );
}

#[test]
fn lambda_calls_by_one_fixed_arity_read_as_the_general_path() {
    let one = "(let [f (fn [x] (* x 2))] [(f 3) (map f [1 2]) (filter #(odd? %) [1 2 3]) (reduce (fn [a x] (+ a x)) [1 2 3])])";
    assert_eq!(eval(one), "[6 (2 4) (1 3) 6]");
    // Wrong counts: one fixed arity, several arities, variadic; all the same error form.
    for (src, want) in [
        ("((fn f [x] x))", "wrong number of args (0) passed to f"),
        ("((fn f [x] x) 1 2)", "wrong number of args (2) passed to f"),
        (
            "((fn f ([x] x) ([x y] y)) 1 2 3)",
            "wrong number of args (3) passed to f",
        ),
        ("((fn f [x & r] x))", "wrong number of args (0) passed to f"),
        (
            "(map (fn [a b] a) [1 2])",
            "wrong number of args (1) passed to fn",
        ),
    ] {
        let got = eval(src);
        assert!(got.contains(want), "{src}: {got}");
    }
    assert_eq!(eval("((fn [x & r] [x r]) 1 2 3)"), "[1 (2 3)]");
    assert_eq!(eval("((fn [x & r] [x r]) 1)"), "[1 nil]");
    let deep = eval("(defn down [n] (if (zero? n) 0 (inc (down (dec n))))) (down 100000)");
    assert!(deep.contains("recursion deeper than"), "{deep}");
}

#[test]
fn prims_over_a_local_field_and_a_constant_answer_as_the_general_entries() {
    let src = r#"(defn safe [f] (try (pr-str (f)) (catch Exception e (str "error: " (ex-message e)))))
        (let [vs [{:a 1} {"a" 2} {:a 2.5} {:a "x"} {"a" "x"} {:b 1 "a" "x"} nil [7 8] {:b 1} {:a nil} 5 "s"]]
          (vec (for [v vs
                     :let [captured [(safe #(> (:a v) 1)) (safe #(= "x" (:a v))) (safe #(< 1 (:a v)))]
                           general [(safe #(apply > [(get v :a) 1])) (safe #(apply = ["x" (get v :a)]))
                                    (safe #(apply < [1 (get v :a)]))]
                           local (safe (fn [] (let [m v] [(> (:a m) 1) (= "x" (:a m)) (+ (:a m) 1) (:a m)])))
                           general-local (safe (fn [] [(apply > [(get v :a) 1]) (apply = ["x" (get v :a)])
                                                       (apply + [(get v :a) 1]) (get v :a)]))
                           moved (safe (fn [] (let [m v] (= (:a m) "x"))))]
                     :when (or (not= captured general) (not= local general-local)
                               (not= moved (safe #(apply = [(get v :a) "x"]))))]
                 [v captured general local general-local moved])))"#;
    assert_eq!(eval(src), "[]");
}

#[test]
fn a_field_read_in_place_costs_the_steps_of_the_call() {
    // Each program's steps, read in place or through a copy, must be the same.
    let steps = |src: &str| {
        let step = run(src, RunOptions::default()).unwrap();
        step.usage.eval_steps
    };
    let in_place = steps(r#"(let [m {:a 1}] (filter #(= 1 (:a %)) [m m m]))"#);
    let copied = steps(r#"(let [m {:a 1}] (filter #(= 1 (identity (:a %))) [m m m]))"#);
    let plain = steps(r#"(let [m {:a 1}] (filter #(= 1 (:a (identity %))) [m m m]))"#);
    assert_eq!(copied, plain);
    // The two `identity` calls cost one step each per element, and nothing else differs.
    assert_eq!(in_place + 3, copied, "{in_place} {copied}");
}

/// `(fnil f d...)` called with one or two arguments (`map`, `reduce`, `update`) skips the
/// argument vector; `apply` takes the general path. Same answers and errors for every mix of
/// nil and non-nil arguments, defaults given or not, nested fnils and lambdas.
#[test]
fn fnil_with_one_or_two_arguments_answers_as_the_general_path() {
    let src = r#"(defn safe [f] (try (pr-str (f)) (catch Exception e (str "error: " (ex-message e)))))
      (let [fs [(fnil + 0) (fnil + 0 10) (fnil str "x") (fnil inc 0) (fnil (fn [a b] [a b]) :d)
                (fnil (fnil + 0) 1 2) (fnil (fn [a] (* 2 a)) 7) (fnil + nil 5)]
            xs [nil 1 2.5 "a" :k]]
        (vec (for [f fs x xs y xs
                   [fast general] [[(safe #(first (map f [x]))) (safe #(apply f [x]))]
                                   [(safe #(reduce f x [y])) (safe #(apply f [x y]))]
                                   [(safe #(get (update {:k x} :k f y) :k)) (safe #(apply f [x y]))]]
                   :when (not= fast general)]
               [fast general])))"#;
    assert_eq!(eval(src), "[]");
    // The answers themselves, so that both paths cannot be wrong together.
    assert_eq!(
        eval(
            "[((fnil + 0) nil 2) ((fnil + 0 10) nil nil) (reduce (fnil + 0) nil [5]) (update {} :n (fnil inc 0))]"
        ),
        "[2 10 5 {:n 1}]"
    );
}

/// A chain of fnils is one call deeper per level on both paths: the depth limit ends the same
/// chains, with the same message.
#[test]
fn nested_fnils_reach_the_depth_limit_at_the_same_length_on_both_paths() {
    for n in (380..=420).step_by(4) {
        let chain = format!("(def g (reduce (fn [f _] (fnil f 0)) + (range {n})))");
        let fast = eval(&format!("{chain} (reduce g nil [1])"));
        let general = eval(&format!("{chain} (apply g [nil 1])"));
        assert_eq!(fast, general, "a chain of {n}");
    }
    assert!(
        eval("(def g (reduce (fn [f _] (fnil f 0)) + (range 420))) (reduce g nil [1])")
            .contains("deeper")
    );
    assert_eq!(
        eval("(def g (reduce (fn [f _] (fnil f 0)) + (range 380))) (reduce g nil [1])"),
        "1"
    );
}

/// `juxt` and `comp` called with one argument (`map`, `sort-by` keys: `Interp::apply1`) call
/// each of their fns without an argument vector; `apply` with one argument is the general path.
/// Builtins, keywords, lambdas, nested natives, fns that fail, over values of several kinds.
#[test]
fn juxt_and_comp_with_one_argument_answer_as_the_general_path() {
    let src = r#"(defn safe [f] (try (pr-str (f)) (catch Exception e (str "error: " (ex-message e)))))
      (let [fs [(juxt inc dec) (juxt :a count) (juxt (comp - val) key) (comp - val) (comp inc inc)
                (comp str :a) (juxt (fn [x] [x x]) (comp vector first)) (comp (juxt inc) inc)
                (juxt (juxt :a) (comp count str)) (comp) (juxt identity) (comp (fnil inc 0) :a)]
            xs [nil 1 2.5 "a" :k {:a 1} [3 4] (first {:a 2})]]
        (vec (for [f fs x xs
                   :let [fast (safe #(first (map f [x]))) general (safe #(apply f [x]))]
                   :when (not= fast general)]
               [fast general])))"#;
    assert_eq!(eval(src), "[]");
    // The answers themselves, so that both paths cannot be wrong together.
    assert_eq!(
        eval(
            "[(map (juxt inc dec) [1 2]) (map (comp - val) {:a 1}) (sort-by (juxt (comp - val) key) {:b 2 :a 2 :c 3})]"
        ),
        "[([2 0] [3 1]) (-1) ([:c 3] [:a 2] [:b 2])]"
    );
}

/// A chain of `comp`s or `juxt`s is one call deeper per level on both paths: the depth limit
/// ends the same chains, with the same message.
#[test]
fn nested_juxts_and_comps_reach_the_depth_limit_at_the_same_length_on_both_paths() {
    for native in ["juxt", "comp"] {
        for n in (380..=420).step_by(4) {
            // `(comp f)` is `f` itself: a second fn makes each level a native.
            let chain =
                format!("(def g (reduce (fn [f _] ({native} f identity)) inc (range {n})))");
            let fast = eval(&format!("{chain} (first (map g [1]))"));
            let general = eval(&format!("{chain} (apply g [1])"));
            assert_eq!(fast, general, "a chain of {n} {native}s");
        }
    }
    let deep = "(def g (reduce (fn [f _] (juxt f)) inc (range 420))) (first (map g [1]))";
    let shallow =
        "(def g (reduce (fn [f _] (comp f identity)) inc (range 380))) (first (map g [1]))";
    assert_eq!(eval(shallow), "2");
    assert!(eval(deep).contains("deeper"), "{}", eval(deep));
}

/// A fn body is run once without the `recur` loop around it; a `recur` on that first run
/// enters the loop. Plain and destructured parameters, several arities, closures.
#[test]
fn recur_to_a_fn_from_its_first_run_and_after() {
    for (src, want) in [
        (
            "((fn [n acc] (if (pos? n) (recur (dec n) (+ acc n)) acc)) 100 0)",
            "5050",
        ),
        (
            "((fn [[a b]] (if (< a 5) (recur [(inc a) (* 2 b)]) [a b])) [0 1])",
            "[5 32]",
        ),
        (
            "((fn f ([n] (f n 1)) ([n acc] (if (zero? n) acc (recur (dec n) (* acc n))))) 10)",
            "3628800",
        ),
        (
            "(let [k 3] ((fn [n] (if (< n k) (recur (inc n)) n)) 0))",
            "3",
        ),
        ("((fn [n] n) 7)", "7"),
        (
            "((fn [n & more] (if (seq more) (recur (+ n (first more)) (next more)) n)) 1 2 3)",
            "6",
        ),
    ] {
        assert_eq!(eval(src), want, "{src}");
    }
}

/// Leaves are read in the inlined `eval` and every other node in `eval_node`: an expression
/// nested 250 levels deep (the reader stops at 256) still runs on a thread with a small stack,
/// the stack checks growing it.
#[test]
fn deeply_nested_expressions_run_on_a_small_stack() {
    let src = format!("{}0{}", "(inc ".repeat(250), ")".repeat(250));
    let vector = format!("{}(inc 0){}", "[".repeat(120), "]".repeat(120));
    let out = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || (eval(&src), eval(&format!("(flatten {vector})"))))
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(out, ("250".to_string(), "(1)".to_string()));
}

/// Recursion that passes through the segments other code grows (`nested` for a native's call,
/// a lazy seq's realization) and through lambdas, thousands of levels deep on a thread with a
/// small stack: every node checks where the stack pointer is against bounds taken on its own
/// segment, so a node on a segment it did not take bounds on takes them first, above or below.
#[test]
fn recursion_through_grown_segments_runs_on_a_small_stack() {
    let limits = ptc_runner::Limits {
        max_depth: 10_000,
        ..ptc_runner::Limits::default()
    };
    let programs = [
        "(defn down [n] (if (zero? n) 0 (inc ((comp down) (dec n))))) (down 2000)",
        "(defn lz [n] (if (zero? n) 0 (inc (first (map lz (take 1 (iterate dec (dec n)))))))) (lz 2000)",
        "(defn mix [n] (if (zero? n) 0 (inc ((partial (fn [m] (first (map mix [m])))) (dec n))))) (mix 1500)",
    ];
    let out = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            programs.map(|src| {
                let opts = RunOptions {
                    limits,
                    ..RunOptions::default()
                };
                match run(src, opts) {
                    Ok(step) => step.return_value.map(|v| v.to_string()).unwrap_or_default(),
                    Err(step) => format!("failed: {:?}", step.fail.map(|f| f.message)),
                }
            })
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(out, ["2000", "2000", "1500"].map(String::from));
}
