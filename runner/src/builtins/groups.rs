//! `group-by` and `frequencies`: a key's group (or count) found by one hash of the key, in
//! first-seen order, with the groups kept in a flat index (hashed and compared as a flat map's
//! keys are). A vector or list that only they hold gives its elements up instead of being copied.
//! Their entries in the builtin table are in `core.rs`, with the other collection builtins.

use crate::error::EvalResult;
use crate::eval::Interp;
use crate::value::{Coll, MapImpl, PVec, Text, Value, key_hash, same_key};

pub(super) fn group_by(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let mut g = Groups::default();
    let mut a = a.into_iter();
    let (f, coll) = (a.next().unwrap_or_default(), a.next().unwrap_or_default());
    match coll {
        // A vector or list is walked in place (its elements moved out when it is held only
        // here); anything else is realized first.
        Value::Vector(xs) | Value::List(xs) => {
            i.tick_n(xs.len() as u64)?;
            match xs.into_unique() {
                Ok(owned) => g.add_all(i, &f, owned.into_iter())?,
                Err(shared) => {
                    for x in shared.iter() {
                        g.add(i, &f, x.clone())?;
                    }
                }
            }
        }
        other => {
            let xs = i.seq_vec(&other)?;
            g.add_all(i, &f, xs.into_iter())?;
        }
    }
    let mut m = MapImpl::with_capacity(g.groups.len());
    for (k, v) in g.groups {
        m.insert_new(k, Value::Vector(Coll::new(PVec::from_vec(v))));
    }
    Ok(Value::map(m))
}

/// `group-by`'s groups in first-seen order, indexed by key (hashed and compared as a flat
/// map's keys are: integers and texts directly). A group fills a plain `Vec` (a push is a few
/// instructions, where a vector's is a few dozen) that becomes the vector at the end, its buffer
/// handed over, not copied.
#[derive(Default)]
struct Groups {
    groups: Vec<(Value, Vec<Value>)>,
    /// Positions in `groups`, by the hash of their keys.
    index: hashbrown::HashTable<usize>,
    /// Where a keyword `f` found its key in the last element.
    hint: crate::value::KeyHint,
}

impl Groups {
    fn add_all(
        &mut self,
        i: &mut Interp<'_>,
        f: &Value,
        xs: impl Iterator<Item = Value>,
    ) -> EvalResult<()> {
        for x in xs {
            self.add(i, f, x)?;
        }
        Ok(())
    }

    fn add(&mut self, i: &mut Interp<'_>, f: &Value, x: Value) -> EvalResult<()> {
        let k = match (f, &x) {
            // A keyword over a map (`(group-by :status rows)`): the key is read in place (the
            // read `apply1_ref` makes; a keyword's read charges nothing), and a group holding
            // that very key takes the element with no copy of the key made and dropped.
            (Value::Keyword(kw), Value::Map(m)) => {
                let key = m.get_keyword_hinted(kw, &self.hint);
                if let Some(v) = key.and_then(|key| self.few_identical(key)) {
                    v.push(x);
                    return Ok(());
                }
                key.cloned().unwrap_or_default()
            }
            _ => {
                let k = i.apply1_ref(f, &x, &self.hint)?;
                if let Some(v) = self.few_identical(&k) {
                    v.push(x);
                    // The key is the group's very text or integer: its count given back
                    // inline, not through `Value`'s out-of-line drop. (Not
                    // `builtins::release`: with its map and native arms here, p2 measured
                    // 0.7 % more instructions.)
                    match k {
                        Value::Str(t) | Value::Keyword(t) => drop(t),
                        Value::Int(_) => std::mem::forget(k),
                        k => drop(k),
                    }
                    return Ok(());
                }
                k
            }
        };
        let h = key_hash(&k);
        let groups = &mut self.groups;
        let found = self
            .index
            .find(h, |&g| {
                groups.get(g).is_some_and(|(key, _)| same_key(key, &k))
            })
            .copied();
        match found.and_then(|g| groups.get_mut(g)) {
            Some((_, v)) => v.push(x),
            None => {
                self.index.insert_unique(h, groups.len(), |&g| {
                    groups.get(g).map_or(0, |(key, _)| key_hash(key))
                });
                groups.push((k, vec![x]));
            }
        }
        Ok(())
    }

    /// Few groups (a status, a category) and keys that are the very same values (imported
    /// strings are interned, keywords too): a scan finds the group of `k` without hashing.
    /// `None` says only that the scan did not find it.
    fn few_identical(&mut self, k: &Value) -> Option<&mut Vec<Value>> {
        if self.groups.len() > FEW_GROUPS {
            return None;
        }
        self.groups
            .iter_mut()
            .find(|(key, _)| identical(key, k))
            .map(|(_, v)| v)
    }
}

/// Up to this many groups, `group-by` looks for a key's group by identity first.
const FEW_GROUPS: usize = 8;

/// Whether two keys are the same value without comparing contents: equal integers, or the
/// same string or keyword (so they are `=`; a `false` proves nothing).
fn identical(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Str(x), Value::Str(y)) | (Value::Keyword(x), Value::Keyword(y)) => {
            Text::ptr_eq(x, y)
        }
        _ => false,
    }
}

pub(super) fn frequencies(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let coll = a.into_iter().next().unwrap_or_default();
    // A vector or list is read in place (its elements moved out when it is held only here),
    // charged as `seq_vec` charges it; anything else is realized first.
    if let Value::Vector(xs) | Value::List(xs) = coll {
        i.tick_n(xs.len() as u64)?;
        return Ok(match xs.into_unique() {
            Ok(owned) => count_all(owned.into_iter()),
            Err(shared) => count_all(shared.iter().cloned()),
        });
    }
    Ok(count_all(i.seq_vec(&coll)?.into_iter()))
}

/// `frequencies` of `xs`: counts in first-seen order, found by one hash of each element (hashed
/// and compared as a flat map's keys are).
fn count_all(xs: impl Iterator<Item = Value>) -> Value {
    let mut counts: Vec<(Value, i64)> = Vec::new();
    let mut index = hashbrown::HashTable::<usize>::new();
    for x in xs {
        let h = key_hash(&x);
        let found = index
            .find(h, |&c| {
                counts.get(c).is_some_and(|(key, _)| same_key(key, &x))
            })
            .copied();
        match found.and_then(|c| counts.get_mut(c)) {
            Some((_, n)) => *n += 1,
            None => {
                index.insert_unique(h, counts.len(), |&c| {
                    counts.get(c).map_or(0, |(key, _)| key_hash(key))
                });
                counts.push((x, 1));
            }
        }
    }
    let mut m = MapImpl::with_capacity(counts.len());
    for (k, n) in counts {
        m.insert_new(k, Value::Int(n));
    }
    Value::map(m)
}
