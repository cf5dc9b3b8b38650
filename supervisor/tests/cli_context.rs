//! `ptc run --context FILE.json`: the file is transcoded straight into the wire encoding (no
//! tree), and a run sees exactly the data today's parse-then-encode path gives, in every mode
//! (`--connect`, sandboxed, `--in-process`); bad JSON is a usage error naming the byte; the
//! policy's `max_context_bytes` counts the same encoded bytes.
#![allow(clippy::unwrap_used)]

mod daemon_support;

use daemon_support::*;
use ptc_shared::Value;
use ptc_shared::value::EncodedValue;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).trim().to_string()
}

/// Escapes, surrogate pairs, a repeated key (first position, last value), 64-bit edges,
/// floats, empty containers and deep nesting: the program returns every field, and every
/// mode prints what the same fields of the context read through a `Value` print.
#[test]
fn a_json_context_reads_the_same_in_every_mode() {
    let d = DaemonProcess::start("");
    let dir = common::temp_dir("cli-context");
    let deep = format!("{}7{}", "[".repeat(100), "]".repeat(100));
    let json = format!(
        r#"{{"s": "a\u00e9\ud83d\ude00\n\"", "k": 1, "big": 9223372036854775807,
            "min": -9223372036854775808, "huge": 123456789012345678901234, "f": [1.5e3, -0.0, 1e-7],
            "k": {{"x": [], "y": {{}}, "x": null}}, "deep": {deep}, "": "empty key"}}"#
    );
    let path = dir.join("ctx.json");
    std::fs::write(&path, &json).unwrap();
    let Value::Map(tree) = Value::from_json_text(json.as_bytes()).unwrap() else {
        panic!("not a map")
    };
    let fields = ["s", "k", "big", "min", "huge", "f", "deep"];
    let program = format!("[{}]", fields.map(|f| format!("data/{f}")).join(" "));
    let values = fields.map(|f| tree.get(&Value::string(f)).cloned().unwrap());
    let want = ptc_shared::value::pr_str(&Value::Vector(values.to_vec()));
    let modes = [
        Mode::Connect(d.socket.clone()),
        Mode::Sandboxed,
        Mode::InProcess,
    ];
    for mode in &modes {
        let o = run_in(mode, &["-e", &program, "--context", path.to_str().unwrap()]);
        assert_eq!(text(&o.stdout), want, "{}", text(&o.stderr));
        assert_eq!(o.status.code(), Some(0));
    }
    assert!(want.starts_with(r#"["aé😀\n\"" {"x" nil, "y" {}} 9223372036854775807"#));
    assert_eq!(tree.len(), 8);
}

/// A file that is not JSON, or holds an integer no 64-bit signed integer holds, is a usage
/// error (exit 2) naming the file and the byte where reading stopped; nothing runs.
#[test]
fn bad_json_is_refused_with_its_byte_offset() {
    let dir = common::temp_dir("cli-context-bad");
    for (name, body, want) in [
        ("cut.json", "{\"a\": [1, 2,", "invalid JSON at byte 12"),
        (
            "junk.json",
            "[1, 2]\n x",
            "invalid JSON at byte 9 (line 2, column 2)",
        ),
        (
            "num.json",
            "{\"n\": 9223372036854775808}",
            "at byte 25 is out of range",
        ),
        (
            "deep.json",
            &format!("{}{}", "[".repeat(200), "]".repeat(200)),
            "JSON nested too deeply at byte 128",
        ),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, body).unwrap();
        let o = run_in(
            &Mode::InProcess,
            &["-e", "1", "--context", path.to_str().unwrap()],
        );
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(name) && err.contains(want), "{name}: {err}");
        assert!(o.stdout.is_empty());
    }
}

/// The `strict` policy accepts 1 MiB of encoded context: a file of rows just over it is
/// refused with the size encoding its `Value` gives, and the same rows under the default
/// policy run.
#[test]
fn max_context_bytes_counts_the_encoding_of_the_file() {
    let dir = common::temp_dir("cli-context-limit");
    let rows: Vec<String> = (0..30_000)
        .map(|i| {
            format!(
                r#"{{"id": {i}, "cat": "c{}", "amount": {}.5}}"#,
                i % 7,
                i % 100
            )
        })
        .collect();
    let json = format!("{{\"rows\": [{}]}}", rows.join(", "));
    let path = dir.join("rows.json");
    std::fs::write(&path, &json).unwrap();
    let size = EncodedValue::encode(&Value::from_json_text(json.as_bytes()).unwrap()).encoded_len();
    assert!(size > 1 << 20 && size < 2 << 20, "{size}");
    let path = path.to_str().unwrap();
    let o = run_in(
        &Mode::Sandboxed,
        &[
            "--policy",
            "strict",
            "-e",
            "(count data/rows)",
            "--context",
            path,
        ],
    );
    let err = text(&o.stderr);
    assert_eq!(
        err,
        format!("error: limit_exceeded: context is {size} bytes, the limit is 1048576")
    );
    assert_eq!(o.status.code(), Some(1));
    let o = run_in(
        &Mode::Sandboxed,
        &["-e", "(count data/rows)", "--context", path],
    );
    assert_eq!(text(&o.stdout), "30000", "{}", text(&o.stderr));
}
