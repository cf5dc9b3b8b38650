//! The validator: one walk that checks a value against a schema, collects every error with its
//! path, and (for inputs) coerces.
//!
//! The walk returns `Some(new)` only where something changed (a coercion, a key respelled to the
//! signature's name, a default filled in), so validating data that is already right allocates
//! nothing but the answer. Paths are kept as a stack of borrowed segments and only turned into
//! text when an error or warning is reported. `owned.rs` walks an owned value the same way,
//! changing it in place. Invariant: the walk follows the schema, never the value, and stops at
//! [`MAX_SCHEMA_DEPTH`], so its recursion is bounded whatever it is given; errors beyond
//! [`MAX_ERRORS`] are counted, not stored.

use super::coerce::{coerce, is_datetime, short};
use super::malli::{CmpOp, Field, MapSchema, Schema, fold_name};
use super::{MAX_SCHEMA_DEPTH, ValidationError};
use crate::value::{Map, Value, pr_str};
use std::cmp::Ordering;

/// Errors stored per validation; the rest are summarised in one final error.
pub const MAX_ERRORS: usize = 1000;

/// What a walk may do besides checking.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Opts {
    /// Inputs: apply coercions and defaults.
    pub coerce: bool,
    /// Reject keys a map schema with fields does not declare.
    pub strict: bool,
}

pub(super) enum Seg<'s> {
    Field(&'s str),
    Index(usize),
    Key(String),
}

pub(crate) struct Walker<'s> {
    pub(super) opts: Opts,
    pub(super) path: Vec<Seg<'s>>,
    pub errors: Vec<ValidationError>,
    pub warnings: Vec<String>,
    omitted: usize,
}

impl<'s> Walker<'s> {
    pub fn new(opts: Opts) -> Walker<'s> {
        Walker {
            opts,
            path: Vec::new(),
            errors: Vec::new(),
            warnings: Vec::new(),
            omitted: 0,
        }
    }

    /// Errors found, with a summary line when some were left out.
    pub fn into_errors(mut self) -> (Vec<ValidationError>, Vec<String>) {
        if self.omitted > 0 {
            let message = format!("{} more errors not shown", self.omitted);
            self.errors.push(ValidationError {
                path: String::new(),
                message,
            });
        }
        (self.errors, self.warnings)
    }

    fn path_text(&self) -> String {
        let mut out = String::new();
        for seg in &self.path {
            match seg {
                Seg::Field(name) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(name);
                }
                Seg::Index(i) => out.push_str(&format!("[{i}]")),
                Seg::Key(k) => out.push_str(k),
            }
        }
        out
    }

    fn fail(&mut self, message: impl Into<String>) {
        if self.errors.len() >= MAX_ERRORS {
            self.omitted += 1;
            return;
        }
        self.errors.push(ValidationError {
            path: self.path_text(),
            message: message.into(),
        });
    }

    fn type_error(&mut self, schema: &Schema, v: &Value) {
        let message = format!("expected {}, got {}", describe(schema), got(v));
        self.fail(message);
    }

    fn warn(&mut self, message: String) {
        let path = self.path_text();
        self.warnings.push(if path.is_empty() {
            message
        } else {
            format!("{path}: {message}")
        });
    }

    /// Checks `v`; returns the replacement value when it had to change.
    pub fn check(&mut self, schema: &'s Schema, v: &Value, depth: usize) -> Option<Value> {
        if depth > MAX_SCHEMA_DEPTH {
            self.fail(format!(
                "schema nested deeper than {MAX_SCHEMA_DEPTH} levels"
            ));
            return None;
        }
        let ok = match (schema, v) {
            (Schema::Any, _)
            | (Schema::Nil, Value::Nil)
            | (Schema::String, Value::Str(_))
            | (Schema::Int, Value::Int(_))
            | (Schema::Double, Value::Float(_))
            | (Schema::Boolean, Value::Bool(_))
            | (Schema::Keyword, Value::Keyword(_))
            | (Schema::Maybe(_), Value::Nil) => true,
            (Schema::Datetime, Value::Str(s)) => is_datetime(s),
            (Schema::Enum(members), _) => members.contains(v),
            _ => false,
        };
        if ok {
            return None;
        }
        match schema {
            Schema::Vector(t) => match v {
                Value::Vector(xs) => self.seq(t, xs, depth).map(Value::Vector),
                _ => self.mismatch(schema, v),
            },
            Schema::Sequential(t) => match v {
                Value::Vector(xs) => self.seq(t, xs, depth).map(Value::Vector),
                Value::List(xs) => self.seq(t, xs, depth).map(Value::List),
                _ => self.mismatch(schema, v),
            },
            Schema::Set(t) => self.set(schema, t, v, depth),
            Schema::Map(ms) => self.map(ms, v, depth),
            Schema::MapOf(k, t) => self.map_of(k, t, v, depth),
            Schema::Tuple(ts) => self.tuple(ts, v, depth),
            Schema::Or(alts) => self.or(schema, alts, v, depth),
            Schema::And(parts) => self.and(parts, v, depth),
            Schema::Maybe(t) => self.check(t, v, depth + 1),
            Schema::Compare(op, bound) => {
                self.compare(*op, bound, v);
                None
            }
            Schema::Re(p) => {
                match v {
                    Value::Str(s) if p.is_match(s) => {}
                    Value::Str(_) => {
                        self.fail(format!("expected {}, got {}", describe(schema), got(v)))
                    }
                    _ => self.type_error(schema, v),
                }
                None
            }
            _ => self.mismatch(schema, v),
        }
    }

    /// A primitive or enum that did not match: coerce when allowed, else report.
    fn mismatch(&mut self, schema: &Schema, v: &Value) -> Option<Value> {
        if self.opts.coerce
            && let Some((new, warning)) = coerce(schema, v)
        {
            if let Some(w) = warning {
                self.warn(w);
            }
            return Some(new);
        }
        match schema {
            Schema::Enum(members) => {
                let list = pr_str(&Value::Vector(members.clone()));
                self.fail(format!("expected one of {list}, got {}", short(v)));
            }
            _ => self.type_error(schema, v),
        }
        None
    }

    fn seq(&mut self, t: &'s Schema, xs: &[Value], depth: usize) -> Option<Vec<Value>> {
        let mut out: Option<Vec<Value>> = None;
        for (i, x) in xs.iter().enumerate() {
            self.path.push(Seg::Index(i));
            let new = self.check(t, x, depth + 1);
            self.path.pop();
            match (new, &mut out) {
                (Some(n), None) => {
                    let mut o = xs.get(..i).unwrap_or_default().to_vec();
                    o.push(n);
                    out = Some(o);
                }
                (Some(n), Some(o)) => o.push(n),
                (None, Some(o)) => o.push(x.clone()),
                (None, None) => {}
            }
        }
        out
    }

    fn set(&mut self, schema: &Schema, t: &'s Schema, v: &Value, depth: usize) -> Option<Value> {
        let Value::Set(xs) = v else {
            return self.mismatch(schema, v);
        };
        let items: Vec<Value> = xs.iter().cloned().collect();
        self.seq(t, &items, depth)
            .map(|ys| Value::Set(ys.into_iter().collect::<crate::value::Set>().into()))
    }

    fn tuple(&mut self, ts: &'s [Schema], v: &Value, depth: usize) -> Option<Value> {
        let xs = match v.as_seq() {
            Some(xs) if xs.len() == ts.len() => xs,
            Some(xs) => {
                self.fail(format!(
                    "expected a tuple of {} elements, got {} of {}",
                    ts.len(),
                    v.type_name(),
                    xs.len()
                ));
                return None;
            }
            None => {
                self.fail(format!(
                    "expected a tuple of {} elements, got {}",
                    ts.len(),
                    got(v)
                ));
                return None;
            }
        };
        let mut out: Option<Vec<Value>> = None;
        for (i, (t, x)) in ts.iter().zip(xs).enumerate() {
            self.path.push(Seg::Index(i));
            if let Some(n) = self.check(t, x, depth + 1) {
                let o = out.get_or_insert_with(|| xs.to_vec());
                if let Some(slot) = o.get_mut(i) {
                    *slot = n;
                }
            }
            self.path.pop();
        }
        out.map(Value::Vector)
    }

    /// Runs `check` on the side: its errors and warnings are returned, not recorded.
    fn trial(
        &mut self,
        s: &'s Schema,
        v: &Value,
        depth: usize,
        coerce: bool,
    ) -> (Option<Value>, Vec<ValidationError>, Vec<String>) {
        let (e0, w0, saved) = (self.errors.len(), self.warnings.len(), self.opts.coerce);
        self.opts.coerce = coerce;
        let new = self.check(s, v, depth);
        self.opts.coerce = saved;
        (new, self.errors.split_off(e0), self.warnings.split_off(w0))
    }

    /// First alternative that accepts the value as is; then, for inputs, one that accepts it coerced.
    fn or(
        &mut self,
        schema: &Schema,
        alts: &'s [Schema],
        v: &Value,
        depth: usize,
    ) -> Option<Value> {
        let passes = if self.opts.coerce {
            vec![false, true]
        } else {
            vec![false]
        };
        let mut last_errors = Vec::new();
        let mut same_kind = 0;
        for coerce in passes {
            for alt in alts {
                let (new, errors, warnings) = self.trial(alt, v, depth + 1, coerce);
                if errors.is_empty() {
                    self.warnings.extend(warnings);
                    return new;
                }
                if !coerce && same_shape(alt, v) {
                    same_kind += 1;
                    last_errors = errors;
                }
            }
        }
        // When exactly one alternative has the value's shape, its errors say more than "expected a or b".
        if same_kind == 1 && !matches!(v, Value::Nil) && !is_scalar(v) {
            for e in last_errors {
                self.fail_at(e);
            }
        } else {
            self.type_error(schema, v);
        }
        None
    }

    fn fail_at(&mut self, e: ValidationError) {
        if self.errors.len() >= MAX_ERRORS {
            self.omitted += 1;
        } else {
            self.errors.push(e);
        }
    }

    /// Every part must accept the value; a part that coerces hands the new value on.
    fn and(&mut self, parts: &'s [Schema], v: &Value, depth: usize) -> Option<Value> {
        let mut cur: Option<Value> = None;
        for part in parts {
            let before = self.errors.len() + self.omitted;
            let new = self.check(part, cur.as_ref().unwrap_or(v), depth + 1);
            if new.is_some() {
                cur = new;
            }
            if self.errors.len() + self.omitted > before {
                break;
            }
        }
        cur
    }

    fn compare(&mut self, op: CmpOp, bound: &Value, v: &Value) {
        let ord = match (v, bound) {
            (Value::Int(a), Value::Int(b)) => Some(a.cmp(b)),
            #[allow(clippy::cast_precision_loss)]
            (Value::Int(a), Value::Float(b)) => (*a as f64).partial_cmp(b),
            #[allow(clippy::cast_precision_loss)]
            (Value::Float(a), Value::Int(b)) => a.partial_cmp(&(*b as f64)),
            (Value::Float(a), Value::Float(b)) => a.partial_cmp(b),
            _ => {
                self.fail(format!(
                    "expected a number {} {}, got {}",
                    op.as_str(),
                    pr_str(bound),
                    got(v)
                ));
                return;
            }
        };
        let ok = match (op, ord) {
            (CmpOp::Gt, Some(o)) => o == Ordering::Greater,
            (CmpOp::Ge, Some(o)) => o != Ordering::Less,
            (CmpOp::Lt, Some(o)) => o == Ordering::Less,
            (CmpOp::Le, Some(o)) => o != Ordering::Greater,
            (_, None) => false,
        };
        if !ok {
            self.fail(format!(
                "expected a number {} {}, got {}",
                op.as_str(),
                pr_str(bound),
                short(v)
            ));
        }
    }

    fn map(&mut self, ms: &'s MapSchema, v: &Value, depth: usize) -> Option<Value> {
        let Value::Map(m) = v else {
            self.type_error(&Schema::Map(MapSchema::default()), v);
            return None;
        };
        let closed = ms.closed || (self.opts.strict && !ms.fields.is_empty());
        self.fields(&ms.fields, m, closed, false, depth)
            .map(|x| Value::Map(Box::new(x)))
    }

    /// Checks `fields` of map `m`. `require_all` makes optional fields required (strict inputs).
    pub fn fields(
        &mut self,
        fields: &'s [Field],
        m: &Map,
        closed: bool,
        require_all: bool,
        depth: usize,
    ) -> Option<Map> {
        let mut changes: Vec<(usize, Option<Value>, Option<Value>)> = Vec::new();
        let mut added: Vec<(Value, Value)> = Vec::new();
        let mut matched: Vec<usize> = Vec::new();
        for (n, f) in fields.iter().enumerate() {
            self.path.push(Seg::Field(&f.name));
            match lookup(m, f, n) {
                Some((i, key, val)) => {
                    let new_val = self.check(&f.schema, val, depth + 1);
                    let new_key = respell(key, f);
                    if new_key.is_some() || new_val.is_some() {
                        changes.push((i, new_key, new_val));
                    }
                    if closed {
                        matched.push(i);
                    }
                }
                None => added.extend(self.missing(f, m, require_all)),
            }
            self.path.pop();
        }
        if closed && matched.len() < m.len() {
            self.extras(m, &matched);
        }
        if changes.is_empty() && added.is_empty() {
            return None;
        }
        Some(rebuild(m, changes, added))
    }

    /// A field absent from `m` (the path names it): the default to add, or an error if required.
    pub(super) fn missing(
        &mut self,
        f: &Field,
        m: &Map,
        require_all: bool,
    ) -> Option<(Value, Value)> {
        match &f.default {
            Some(d) if self.opts.coerce => return Some((default_key(m, f), d.clone())),
            _ if require_all && f.optional => {
                self.fail("missing input (strict mode requires every declared input)");
            }
            _ if !f.optional => self.fail("missing required key"),
            _ => {}
        }
        None
    }

    /// Reports every key of `m` whose index is not in `matched`.
    pub(super) fn extras(&mut self, m: &Map, matched: &[usize]) {
        let mut seen = vec![false; m.len()];
        for &i in matched {
            if let Some(s) = seen.get_mut(i) {
                *s = true;
            }
        }
        for (k, seen) in m.keys().zip(seen) {
            if !seen {
                self.path.push(key_seg(k, self.path.is_empty()));
                self.fail("unexpected key (not in the signature)");
                self.path.pop();
            }
        }
    }

    fn map_of(&mut self, ks: &'s Schema, vs: &'s Schema, v: &Value, depth: usize) -> Option<Value> {
        let Value::Map(m) = v else {
            self.type_error(&Schema::Map(MapSchema::default()), v);
            return None;
        };
        let mut changes = Vec::new();
        for (i, (k, x)) in m.iter().enumerate() {
            self.path.push(key_seg(k, self.path.is_empty()));
            let new_key = self.check(ks, k, depth + 1);
            let new_val = self.check(vs, x, depth + 1);
            self.path.pop();
            if new_key.is_some() || new_val.is_some() {
                changes.push((i, new_key, new_val));
            }
        }
        (!changes.is_empty()).then(|| Value::Map(Box::new(rebuild(m, changes, Vec::new()))))
    }
}

/// Maps this small are searched by comparing names, which is cheaper than hashing a key.
const SCAN_LEN: usize = 8;

/// Whether `k` is the keyword or string `name`.
fn key_is(k: &Value, name: &str) -> bool {
    matches!(k, Value::Keyword(s) | Value::Str(s) if s == name)
}

/// Finds a field's entry: keyword or string key, either hyphen/underscore spelling. `hint` is
/// where the field sits in the schema: data built from the same shape has it at that index.
pub(super) fn lookup<'m>(
    m: &'m Map,
    f: &Field,
    hint: usize,
) -> Option<(usize, &'m Value, &'m Value)> {
    if let Some((k, v)) = m.get_index(hint)
        && key_is(k, &f.name)
    {
        return Some((hint, k, v));
    }
    let exact = if m.len() <= SCAN_LEN {
        m.iter()
            .enumerate()
            .find(|(_, (k, _))| key_is(k, &f.name))
            .map(|(i, (k, v))| (i, k, v))
    } else {
        m.get_full(&f.keys.keyword)
            .or_else(|| m.get_full(&f.keys.string))
    };
    if exact.is_some() {
        return exact;
    }
    let (kw, st) = f.keys.alt.as_ref()?;
    if let Some(hit) = m.get_full(kw).or_else(|| m.get_full(st)) {
        return Some(hit);
    }
    // Mixed spellings (`a-b_c`): compare folded names; only reached when the field is missing.
    let folded = fold_name(&f.name);
    m.iter().enumerate().find_map(|(i, (k, v))| match k {
        Value::Keyword(s) | Value::Str(s) if fold_name(s) == folded => Some((i, k, v)),
        _ => None,
    })
}

/// The key in the signature's spelling, keeping whether it was a keyword or a string.
pub(super) fn respell(key: &Value, f: &Field) -> Option<Value> {
    match key {
        Value::Keyword(k) if *k != f.name => Some(f.keys.keyword.clone()),
        Value::Str(s) if *s != f.name => Some(f.keys.string.clone()),
        _ => None,
    }
}

/// A filled-in default uses the kind of key the map already has (string keys for JSON data).
fn default_key(m: &Map, f: &Field) -> Value {
    match m.keys().next() {
        Some(Value::Str(_)) => f.keys.string.clone(),
        _ => f.keys.keyword.clone(),
    }
}

fn rebuild(
    m: &Map,
    changes: Vec<(usize, Option<Value>, Option<Value>)>,
    added: Vec<(Value, Value)>,
) -> Map {
    let mut slots: Vec<(Option<Value>, Option<Value>)> = vec![(None, None); m.len()];
    for (i, k, v) in changes {
        if let Some(slot) = slots.get_mut(i) {
            *slot = (k, v);
        }
    }
    let mut out = Map::with_capacity(m.len() + added.len());
    for ((k, v), (nk, nv)) in m.iter().zip(slots) {
        out.insert(
            nk.unwrap_or_else(|| k.clone()),
            nv.unwrap_or_else(|| v.clone()),
        );
    }
    out.extend(added);
    out
}

fn key_seg<'s>(k: &Value, first: bool) -> Seg<'s> {
    match k {
        Value::Keyword(s) | Value::Str(s)
            if !s.is_empty() && s.chars().all(super::edn::is_word_char) =>
        {
            Seg::Key(if first { s.clone() } else { format!(".{s}") })
        }
        other => Seg::Key(format!("[{}]", short(other))),
    }
}

fn is_scalar(v: &Value) -> bool {
    !matches!(
        v,
        Value::Vector(_) | Value::List(_) | Value::Map(_) | Value::Set(_)
    )
}

/// Whether `schema` expects the same kind of collection as `v` is.
fn same_shape(schema: &Schema, v: &Value) -> bool {
    match schema {
        Schema::Map(_) | Schema::MapOf(..) => matches!(v, Value::Map(_)),
        Schema::Vector(_) | Schema::Sequential(_) | Schema::Tuple(_) => v.as_seq().is_some(),
        Schema::Set(_) => matches!(v, Value::Set(_)),
        Schema::And(parts) => parts.first().is_some_and(|p| same_shape(p, v)),
        _ => false,
    }
}

/// "string \"abc\"", "nil", "map": what a value is, for messages.
pub(crate) fn got(v: &Value) -> String {
    match v {
        Value::Nil => "nil".to_string(),
        Value::Vector(_) | Value::List(_) | Value::Map(_) | Value::Set(_) => {
            v.type_name().to_string()
        }
        _ => format!("{} {}", v.type_name(), short(v)),
    }
}

/// What a schema expects, for messages ("int", "list", "int or nil"). Depth-bounded by callers.
pub(crate) fn describe(s: &Schema) -> String {
    describe_at(s, 0)
}

fn describe_at(s: &Schema, depth: usize) -> String {
    if depth > 3 {
        return "a value of the declared shape".to_string();
    }
    match s {
        Schema::Any => "any value".into(),
        Schema::Nil => "nil".into(),
        Schema::String => "string".into(),
        Schema::Int => "int".into(),
        Schema::Double => "float".into(),
        Schema::Boolean => "boolean".into(),
        Schema::Keyword => "keyword".into(),
        Schema::Datetime => "ISO-8601 datetime string with offset".into(),
        Schema::Vector(_) => "vector".into(),
        Schema::Sequential(_) => "list".into(),
        Schema::Set(_) => "set".into(),
        Schema::Map(_) | Schema::MapOf(..) => "map".into(),
        Schema::Tuple(ts) => format!("a tuple of {} elements", ts.len()),
        Schema::Enum(members) => format!("one of {}", pr_str(&Value::Vector(members.clone()))),
        Schema::Or(alts) => alts
            .iter()
            .map(|a| describe_at(a, depth + 1))
            .collect::<Vec<_>>()
            .join(" or "),
        Schema::And(parts) => parts
            .first()
            .map_or_else(|| "any value".into(), |p| describe_at(p, depth + 1)),
        Schema::Maybe(t) => format!("{} or nil", describe_at(t, depth + 1)),
        Schema::Compare(op, b) => format!("a number {} {}", op.as_str(), pr_str(b)),
        Schema::Re(p) => format!(
            "a string matching #{}",
            pr_str(&Value::Str(p.as_str().to_string()))
        ),
    }
}
