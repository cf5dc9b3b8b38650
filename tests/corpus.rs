//! Reading the conformance corpus: `cases/X.edn` + `expected/X.edn` (Clojure-judged) and
//! `ptc/X.edn` (expectations inside each case).

use ptc_shared::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// What a case must produce.
#[derive(Debug, Clone)]
pub enum Expect {
    Value(Value),
    /// Must fail with this fail reason (every failing case states one).
    Error(String),
}

/// One case, from either format.
#[derive(Debug, Clone)]
pub struct Case {
    pub id: String,
    pub file: String,
    pub tags: Vec<String>,
    pub program: String,
    pub context: Value,
    pub tools: Value,
    pub memory: Value,
    pub history: Value,
    pub limits: Value,
    pub expect: Expect,
    pub expect_memory: Option<Value>,
    pub expect_delta: Option<Value>,
    pub expect_prints: Option<Value>,
}

impl Case {
    pub fn has_tag(&self, t: &str) -> bool {
        self.tags.iter().any(|x| x == t)
    }
}

/// The corpus directory.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance")
}

fn get<'v>(m: &'v Value, k: &str) -> Option<&'v Value> {
    m.get_key(&Value::keyword(k))
}

fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::Str(s)) | Some(Value::Keyword(s)) => s.clone(),
        _ => String::new(),
    }
}

fn lines(path: &Path) -> Result<Vec<Value>, String> {
    let body = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    body.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with(';'))
        .map(|(n, l)| {
            ptc_runner::edn::parse(l).map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))
        })
        .collect()
}

fn base_case(m: &Value, file: &str, expect: Expect) -> Case {
    let tags = match get(m, "tags") {
        Some(Value::Vector(ts)) => ts.iter().map(|t| text(Some(t))).collect(),
        _ => Vec::new(),
    };
    Case {
        id: text(get(m, "id")),
        file: file.to_string(),
        tags,
        program: text(get(m, "program")),
        context: get(m, "context").cloned().unwrap_or_default(),
        tools: get(m, "tools").cloned().unwrap_or_default(),
        memory: get(m, "memory").cloned().unwrap_or_default(),
        history: get(m, "history").cloned().unwrap_or_default(),
        limits: get(m, "limits").cloned().unwrap_or_default(),
        expect,
        expect_memory: get(m, "expect-memory").cloned(),
        expect_delta: get(m, "expect-delta").cloned(),
        expect_prints: get(m, "expect-prints").cloned(),
    }
}

/// The `.edn` files of a corpus directory, sorted, with their stems.
fn edn_files(dir: &Path) -> Result<Vec<(String, PathBuf)>, String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "edn"))
        .collect();
    files.sort();
    Ok(files
        .into_iter()
        .map(|p| {
            (
                p.file_stem()
                    .map(|s| s.to_string_lossy().to_string())
                    .unwrap_or_default(),
                p,
            )
        })
        .collect())
}

/// Clojure-judged cases where we differ on purpose (`overrides.edn`): id → (DIV id, our
/// expectation). A line that does not parse, or has no expectation, is an error.
pub fn overrides() -> Result<HashMap<String, (String, Expect)>, String> {
    let path = root().join("overrides.edn");
    let mut out = HashMap::new();
    for m in lines(&path)? {
        let id = text(get(&m, "id"));
        let expect = match (get(&m, "expect"), get(&m, "expect-error")) {
            (_, Some(r)) => Expect::Error(text(Some(r))),
            (Some(v), None) => Expect::Value(v.clone()),
            (None, None) => {
                return Err(format!(
                    "overrides.edn: {id} has no :expect or :expect-error"
                ));
            }
        };
        out.insert(id, (text(get(&m, "div")), expect));
    }
    Ok(out)
}

/// The fail reasons of the shared sample's failing cases (`public-reasons.edn`: the sample,
/// `cases/public.edn`, is kept byte for byte as shared, so its reasons live beside it).
fn public_reasons() -> Result<HashMap<String, String>, String> {
    let path = root().join("public-reasons.edn");
    Ok(lines(&path)?
        .into_iter()
        .map(|m| (text(get(&m, "id")), text(get(&m, "reason"))))
        .collect())
}

/// Every Clojure-judged case with Clojure's expectation. A case that failed in Clojure must say
/// with which of our reasons it fails (`:reason`): a corpus where one does not is an error.
pub fn clojure_cases() -> Result<Vec<Case>, String> {
    let public = public_reasons()?;
    let mut out = Vec::new();
    for (stem, path) in edn_files(&root().join("cases"))? {
        let expected: HashMap<String, Value> =
            lines(&root().join("expected").join(format!("{stem}.edn")))?
                .into_iter()
                .map(|m| (text(get(&m, "id")), m))
                .collect();
        for m in lines(&path)? {
            let id = text(get(&m, "id"));
            let e = expected
                .get(&id)
                .ok_or_else(|| format!("{stem}: no expected result for {id}"))?;
            let expect = match (get(e, "ok"), get(e, "error")) {
                (Some(v), _) => Expect::Value(v.clone()),
                (None, Some(_)) => {
                    let reason = get(e, "reason")
                        .or_else(|| get(&m, "reason"))
                        .map(|r| text(Some(r)))
                        .or_else(|| public.get(&id).cloned())
                        .ok_or_else(|| {
                            format!("{stem}: {id} fails in Clojure but has no :reason")
                        })?;
                    Expect::Error(reason)
                }
                (None, None) => Expect::Value(Value::Nil),
            };
            out.push(base_case(&m, &stem, expect));
        }
    }
    Ok(out)
}

/// Every PTC-specific case.
pub fn ptc_cases() -> Result<Vec<Case>, String> {
    let mut out = Vec::new();
    for (stem, path) in edn_files(&root().join("ptc"))? {
        for m in lines(&path)? {
            let expect = match (get(&m, "expect"), get(&m, "expect-error")) {
                (_, Some(r)) => Expect::Error(text(Some(r))),
                (Some(v), None) => Expect::Value(v.clone()),
                (None, None) => Expect::Value(Value::Nil),
            };
            out.push(base_case(&m, &stem, expect));
        }
    }
    Ok(out)
}
