//! Runtime destructuring: writes the slots a `Pattern` names.
//!
//! Follows Clojure: missing elements bind nil; `& rest` binds nil (not `()`) when nothing is
//! left; `:or` applies only when the key is absent; map destructuring of a vector finds nothing;
//! a seq destructured as a map is read as key/value pairs (keyword arguments). Keyword keys
//! also find string keys (see the key-access rule in docs/language.md).

use super::{Env, Interp};
use crate::analyze::{MapEntryPat, Pattern};
use crate::error::{EvalError, EvalResult};
use crate::value::{MapImpl, Value};

impl Interp<'_> {
    #[inline]
    pub(crate) fn bind(&mut self, p: &Pattern, v: Value, env: &Env<'_>) -> EvalResult<()> {
        // A plain name, the usual binding, where the call is; patterns out of line.
        if let Pattern::Bind(slot) = p {
            self.set_slot(env, *slot, v);
            return Ok(());
        }
        self.bind_pattern(p, v, env)
    }

    fn bind_pattern(&mut self, p: &Pattern, v: Value, env: &Env<'_>) -> EvalResult<()> {
        match p {
            Pattern::Bind(slot) => {
                self.set_slot(env, *slot, v);
                Ok(())
            }
            Pattern::Seq {
                items,
                rest,
                as_slot,
            } => self.bind_seq(items, rest.as_deref(), *as_slot, v, env),
            Pattern::Map { entries, as_slot } => self.bind_map(entries, *as_slot, v, env),
        }
    }

    fn bind_seq(
        &mut self,
        items: &[Pattern],
        rest: Option<&Pattern>,
        as_slot: Option<u32>,
        v: Value,
        env: &Env<'_>,
    ) -> EvalResult<()> {
        // Clojure destructures vectors with nth, which maps, sets and numbers do not support.
        if !matches!(
            v,
            Value::Nil | Value::Vector(_) | Value::List(_) | Value::Str(_) | Value::Lazy(_)
        ) {
            let msg = format!(
                "nth not supported on {}: cannot destructure it as a sequence",
                v.type_name()
            );
            return Err(EvalError::type_err("destructure", msg));
        }
        if let Some(slot) = as_slot {
            self.set_slot(env, slot, v.clone());
        }
        // Realize only what the pattern needs, so infinite seqs destructure fine.
        let want = items.len() + usize::from(rest.is_some());
        let mut it = super::seq::SeqIter::new(self, &v)?;
        let mut taken = Vec::with_capacity(want);
        for _ in 0..items.len() {
            taken.push(it.next(self)?.unwrap_or_default());
        }
        for (p, x) in items.iter().zip(taken) {
            self.bind(p, x, env)?;
        }
        if let Some(rp) = rest {
            let remaining = it.rest_value(self)?;
            let remaining = match (rp, remaining) {
                (Pattern::Map { .. }, Value::List(xs)) => pairs_to_map(&xs),
                (_, r) => r,
            };
            self.bind(rp, remaining, env)?;
        }
        Ok(())
    }

    fn bind_map(
        &mut self,
        entries: &[MapEntryPat],
        as_slot: Option<u32>,
        v: Value,
        env: &Env<'_>,
    ) -> EvalResult<()> {
        let v = match v {
            Value::List(xs) => pairs_to_map(&xs),
            other => other,
        };
        if let Some(slot) = as_slot {
            self.set_slot(env, slot, v.clone());
        }
        for e in entries {
            let found = match &v {
                Value::Map(m) => m.get_lenient(&e.key).cloned(),
                other => crate::builtins::coll::get(other, &e.key),
            };
            let x = match (found, &e.default) {
                (Some(x), _) => x,
                (None, Some(d)) => self.eval(d, env)?,
                (None, None) => Value::Nil,
            };
            self.bind(&e.pattern, x, env)?;
        }
        Ok(())
    }
}

/// `(k1 v1 k2 v2)` → `{k1 v1, k2 v2}`; a single map element is the map itself.
fn pairs_to_map(xs: &crate::value::PVec) -> Value {
    if xs.len() == 1
        && let Some(m @ Value::Map(_)) = xs.front()
    {
        return m.clone();
    }
    let mut m = MapImpl::default();
    let mut it = xs.iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        m.insert(k.clone(), v.clone());
    }
    Value::map(m)
}
