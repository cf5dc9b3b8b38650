//! Behaviour of the text-side standard library (strings, format, regex, sets, walk, JSON, dates,
//! PTC helpers) through the public `run` API, for cases the conformance corpus does not reach:
//! Java-format corner cases, Java replacement-string errors, date arithmetic, JSON options,
//! `describe`'s shape, and deep data that must not overflow the stack.

use ptc_runner::{RunOptions, run};

/// The printed result of a program, or `error:<reason>` if it failed.
fn eval(src: &str) -> String {
    match run(src, RunOptions::default()) {
        Ok(step) => step
            .return_value
            .map_or_else(|| "nil".to_string(), |v| v.to_string()),
        Err(step) => format!(
            "error:{}",
            step.fail.map_or("?".into(), |f| f.reason.to_string())
        ),
    }
}

fn fails(src: &str) -> bool {
    eval(src).starts_with("error:")
}

#[test]
fn format_conversions_follow_java() {
    assert_eq!(eval(r#"(format "%,.2f" 1234567.891)"#), r#""1,234,567.89""#);
    assert_eq!(eval(r#"(format "%g" 0.0001234)"#), r#""0.000123400""#);
    assert_eq!(eval(r#"(format "%g" 123456789.0)"#), r#""1.23457e+08""#);
    assert_eq!(
        eval(r#"(format "%x|%X|%o" -1 255 8)"#),
        r#""ffffffffffffffff|FF|10""#
    );
    assert_eq!(eval(r#"(format "%(d %+d % d" -5 5 5)"#), r#""(5) +5  5""#);
    assert_eq!(eval(r#"(format "%2$s %1$s %<s" "a" "b")"#), r#""b a a""#);
    assert_eq!(
        eval(r#"(format "%.3s|%-4S|" "abcdef" "ab")"#),
        r#""abc|AB  |""#
    );
    assert_eq!(eval(r#"(format "%.0f %.0e" 0.5 9.5)"#), r#""1 1e+01""#);
    assert_eq!(
        eval(r#"(format "%b %b %c %n" nil 0 65)"#),
        "\"false true A \\n\""
    );
    assert_eq!(eval(r#"(format "%08.2f" -3.14159)"#), r#""-0003.14""#);
    assert_eq!(
        eval(r#"(format "%.2f|%5d|%s" nil nil nil)"#),
        r#""null| null|null""#
    );
}

#[test]
fn format_rejects_mismatched_or_missing_arguments() {
    assert!(fails(r#"(format "%d" 1.0)"#));
    assert!(fails(r#"(format "%f" 1)"#));
    assert!(fails(r#"(format "%s %s" 1)"#));
    assert!(fails(r#"(format "%q" 1)"#));
    assert!(fails(r#"(format "%")"#));
    // A width that would allocate without bound is refused.
    assert!(fails(r#"(format "%999999999d" 1)"#));
}

#[test]
fn replacement_strings_follow_java_matcher() {
    assert_eq!(
        eval(r#"(str/replace "abc" #"(?<x>b)" "[${x}]")"#),
        r#""a[b]c""#
    );
    // $11 with one group is group 1 followed by a literal 1.
    assert_eq!(eval(r#"(str/replace "abc" #"(b)" "$11")"#), r#""ab1c""#);
    assert_eq!(eval(r#"(str/replace "abc" #"b" "\\$")"#), r#""a$c""#);
    assert!(fails(r#"(str/replace "ab" #"b" "$2")"#));
    assert!(fails(r#"(str/replace "ab" #"b" "$")"#));
    assert!(fails(r#"(str/replace "ab" #"b" (fn [m] 1))"#));
    // A literal pattern takes its replacement literally.
    assert_eq!(
        eval(r#"(str/replace-first "a.b.c" "." "$1")"#),
        r#""a$1b.c""#
    );
}

#[test]
fn split_and_index_of_edges() {
    assert_eq!(
        eval(r#"(str/split "a1b22c" #"\d+" -1)"#),
        r#"["a" "b" "c"]"#
    );
    assert_eq!(eval(r#"(str/split "aXbXc" #"X" 1)"#), r#"["aXbXc"]"#);
    assert_eq!(eval(r#"(str/split ",,a,," #",")"#), r#"["" "" "a"]"#);
    assert_eq!(eval(r#"(str/last-index-of "héllo wörld" "ö")"#), "7");
    assert_eq!(eval(r#"(str/index-of "héllo" \l 3)"#), "3");
    assert_eq!(eval(r#"(str/last-index-of "aaa" "" 10)"#), "3");
    assert_eq!(eval(r#"(str/index-of "abc" "c" -5)"#), "2");
    assert_eq!(eval(r#"(str/last-index-of "abc" "a" -1)"#), "nil");
}

#[test]
fn string_methods_and_java_whitespace() {
    assert_eq!(eval("(.trim \"\\u00a0x \")"), "\"\u{a0}x\"");
    assert_eq!(eval("(str/trim \"\\u2003x\\u00a0\")"), "\"x\u{a0}\"");
    assert_eq!(
        eval(r#"[(.indexOf "hello" "l" 3) (.lastIndexOf "hello" "l" 2) (.matches "abc" "a.c")]"#),
        "[3 2 true]"
    );
    assert_eq!(
        eval("[(.indexOf [1 2 3] 2) (.contains #{1} 1) (.size {:a 1}) (.get [5 6] 1)]"),
        "[1 true 1 6]"
    );
    assert!(fails("(.nope \"a\")"));
    assert!(fails("(.length nil)"));
}

#[test]
fn date_arithmetic_and_iso_text() {
    assert_eq!(
        eval(r#"(str (.plusMonths (LocalDate/parse "2024-01-31") 1))"#),
        r#""2024-02-29""#
    );
    assert_eq!(
        eval(r#"(str (.minusYears (LocalDate/parse "2024-02-29") 1))"#),
        r#""2023-02-28""#
    );
    assert_eq!(
        eval(r#"(.getDayOfYear (LocalDate/parse "2024-12-31"))"#),
        "366"
    );
    assert_eq!(
        eval(r#"(str (Instant/parse "2024-01-31T10:00:00.5+01:00"))"#),
        r#""2024-01-31T09:00:00.500Z""#
    );
    assert_eq!(
        eval(
            r#"(str (Duration/between (Instant/parse "2024-01-01T00:00:00Z") (Instant/parse "2024-01-02T01:30:00Z")))"#
        ),
        r#""PT25H30M""#
    );
    assert_eq!(eval("(str (LocalDate/of 2024 2 29))"), r#""2024-02-29""#);
    assert!(fails("(LocalDate/of 2023 2 29)"));
    // Every shift keeps to the years LocalDate/of accepts, in days as in months.
    assert_eq!(
        eval(r#"(str (.plusWeeks (LocalDate/parse "2024-02-29") -2))"#),
        r#""2024-02-15""#
    );
    assert!(fails(
        r#"(.plusYears (LocalDate/parse "2024-01-01") 1000000)"#
    ));
    assert!(fails(
        r#"(.minusDays (LocalDate/parse "2024-01-01") 1000000000)"#
    ));
    assert!(fails(
        r#"(.plusDays (LocalDate/parse "2024-01-01") 9223372036854775807)"#
    ));
    // Each class parses only its own text.
    assert!(fails(r#"(LocalDate/parse "2024-01-01T00:00:00Z")"#));
    assert!(fails(r#"(Instant/parse "2024-01-01")"#));
}

#[test]
fn json_options_and_errors() {
    assert_eq!(
        eval(r#"(json/parse-string "{\"b\":1,\"a\":2}" (fn [k] (keyword (str "x" k))))"#),
        "{:xb 1, :xa 2}"
    );
    assert_eq!(
        eval(r#"(json/generate-string {:a [1 {:b 2}]} {:pretty true})"#),
        r#""{\n  \"a\": [\n    1,\n    {\n      \"b\": 2\n    }\n  ]\n}""#
    );
    assert_eq!(
        eval(r#"(json/generate-string {:k :a/b :s #{1} :d (LocalDate/parse "2024-01-31")})"#),
        r#""{\"k\":\"a/b\",\"s\":[1],\"d\":\"2024-01-31\"}""#
    );
    assert!(fails("(json/generate-string inc)"));
    assert!(fails("(json/generate-string ##NaN)"));
    assert!(fails(r#"(json/parse-string "[1,]")"#));
}

#[test]
fn describe_summarises_shape() {
    assert_eq!(
        eval(r#"(describe [{:a 1 :b "x"} {:a 2} 3])"#),
        r#"{:type :vector, :count 3, :item-types {:map 2, :int 1}, :keys {:a 2, :b 1}, :example {:a 1, :b "x"}}"#
    );
    assert_eq!(
        eval("(describe {:a 1 :b [1]})"),
        "{:type :map, :count 2, :keys {:a :int, :b :vector}}"
    );
    assert_eq!(eval("(describe nil)"), "{:type :nil}");
}

#[test]
fn helpers_keep_integer_sums_and_report_overflow() {
    assert_eq!(eval("(sum-by :n [{:n 1} {:n nil} {:n 2}])"), "3");
    assert!(fails("(sum [9223372036854775807 1])"));
    assert_eq!(
        eval("(max-by :n [{:n 2 :id 1} {:n 2 :id 2}])"),
        "{:n 2, :id 1}"
    );
    assert_eq!(eval("(pcalls)"), "()");
}

#[test]
fn set_join_with_key_map_from_either_side() {
    let big = r#"#{{:user 1 :total 5} {:user 1 :total 7} {:user 2 :total 1}}"#;
    let small = r#"#{{:id 1 :name "ann"}}"#;
    assert_eq!(
        eval(&format!("(count (set/join {small} {big} {{:id :user}}))")),
        "2"
    );
    assert_eq!(
        eval(&format!("(count (set/join {big} {small} {{:user :id}}))")),
        "2"
    );
    // As in Clojure: a smaller first set is tested with `contains?`, which on a vector means
    // "is a valid index", so 0 and 1 are removed.
    assert_eq!(eval("(set/difference #{0 1} [5 6 7])"), "#{}");
    // Set print order is a hash order (DIV-7): compare contents.
    assert_eq!(eval("(sort (set/difference #{0 1 7} [5 6 7]))"), "(0 1)");
}

#[test]
fn deep_data_does_not_overflow_the_stack() {
    let deep = "(loop [i 0 x 1] (if (< i 20000) (recur (inc i) [x]) x))";
    assert_eq!(
        eval(&format!("(count (walk/postwalk identity {deep}))")),
        "1"
    );
    assert_eq!(
        eval(&format!("(count (walk/prewalk identity {deep}))")),
        "1"
    );
    assert_eq!(
        eval(&format!("(count (json/generate-string {deep}))")),
        "40001"
    );
}
