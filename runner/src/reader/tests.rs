use super::*;

fn read1(s: &str) -> FormKind {
    read_all(s, 1 << 20, 256)
        .map(|mut f| f.remove(0).kind)
        .unwrap_or(FormKind::Nil)
}

fn err(s: &str) -> ParseError {
    match read_all(s, 1 << 20, 256) {
        Err(e) => e,
        Ok(f) => panic!("expected a parse error for {s}, got {f:?}"),
    }
}

#[test]
fn literals() {
    assert_eq!(read1("-42"), FormKind::Int(-42));
    assert_eq!(read1("+5"), FormKind::Int(5));
    assert_eq!(read1("1e3"), FormKind::Float(1000.0));
    assert_eq!(read1("-0.5"), FormKind::Float(-0.5));
    assert_eq!(read1("\"a\\n\\u00e9\""), FormKind::Str("a\n\u{e9}".into()));
    assert_eq!(read1("\\newline"), FormKind::Char('\n'));
    assert_eq!(read1(":a/b"), FormKind::Keyword("a/b".into()));
    assert_eq!(
        read1("clojure.string/join"),
        FormKind::Symbol("clojure.string/join".into())
    );
    assert_eq!(read1("##-Inf"), FormKind::Float(f64::NEG_INFINITY));
}

#[test]
fn discard_comments_commas() {
    let forms = read_all("; c\n[1, #_ 2 3] #_(x) 4", 1 << 20, 256).unwrap_or_default();
    assert_eq!(forms.len(), 2);
    match &forms[0].kind {
        FormKind::Vector(v) => assert_eq!(v.len(), 2),
        other => panic!("{other:?}"),
    }
}

#[test]
fn anon_fn_expands() {
    let f = read1("#(+ % %2 %&)");
    let FormKind::List(items) = f else { panic!() };
    assert!(items[0].is_sym("fn"));
    let FormKind::Vector(params) = &items[1].kind else {
        panic!()
    };
    let names: Vec<_> = params.iter().filter_map(|p| p.as_sym()).collect();
    assert_eq!(names, vec!["%1", "%2", "&", "%&"]);
}

#[test]
fn errors_have_positions_and_hints() {
    let e = err("(+ 1\n  2");
    assert_eq!(e.pos, crate::error::Pos { line: 1, col: 1 });
    assert!(err("{:a}").message.contains("odd"));
    assert!(err("#{1 1}").message.contains("duplicate"));
    assert!(err("1N").message.contains("big number"));
    assert!(err("#(#(%))").message.contains("nested"));
    assert!(err("99999999999999999999").message.contains("64 bits"));
    let e = err("(a]");
    assert_eq!(e.pos, crate::error::Pos { line: 1, col: 3 });
}

#[test]
fn nesting_and_size_caps() {
    let deep = "[".repeat(100_000);
    assert!(err(&deep).message.contains("nesting"));
    assert!(read_all("(+ 1 2)", 3, 256).is_err());
}
