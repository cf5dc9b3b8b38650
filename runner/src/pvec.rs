//! The elements of a vector or list: a plain `Vec` while the collection is being built or is
//! owned by one place (transient-style), a persistent `imbl` vector once it is copied while shared.
//!
//! Most sequences a program makes are fresh (`map`, `filter`, `for`, `group-by`'s groups, a
//! vector literal) and are read, not updated, before they are dropped: pushing to and walking a
//! `Vec` costs a few instructions per element, where the persistent tree costs 40–80. Updating
//! stays O(1) or O(log n) as Clojure promises:
//!
//! - a collection held in one place (`Rc::make_mut` finds it unshared) is updated in place;
//!   `push_back`, `pop_back`, `set` and `truncate` keep it flat; the ops that are O(n) on a `Vec`
//!   (`push_front`, `insert`, `remove`, `split_at`) first turn a long one into a tree, once;
//! - a copy of a shared flat collection (what `make_mut` makes before an update) is a tree built
//!   from it; the flat original keeps that tree (`tree`), so every later copy or slice of the
//!   same original shares it: a shared collection is converted at most once, however often it is
//!   updated from (no quadratic cliff). The cache is dropped by any in-place update.
//!
//! Every operation gives the same elements in either form: the tests below check each one
//! against a plain `Vec` model, flat and tree alike.

use crate::value::Value;
use std::cell::OnceCell;

/// The persistent form.
pub type Tree = imbl::GenericVector<Value, imbl::shared_ptr::RcK>;

/// Up to this many elements, a flat collection is copied as a flat one and O(n) updates stay
/// flat (a memmove of at most this many values costs less than a tree).
const SMALL: usize = 64;

/// A vector's or list's elements (see the module header).
#[derive(Default)]
pub struct PVec {
    repr: Repr,
    /// For a flat collection: the tree made the first time it was copied or sliced while shared.
    tree: OnceCell<Box<Tree>>,
}

/// Up to this many elements live inside the collection's own allocation (pairs, `[k v]`
/// entries and small tuples like `[id sku amount]` are the commonest vectors; with 2 inline,
/// pipeline p5's 3-tuples cost a second allocation each and 6.5 % more instructions).
pub type Flat = smallvec::SmallVec<[Value; 3]>;

enum Repr {
    Flat(Flat),
    Tree(Box<Tree>),
}

impl Default for Repr {
    fn default() -> Repr {
        Repr::Flat(Flat::new())
    }
}

impl PVec {
    pub fn new() -> PVec {
        PVec::default()
    }

    pub fn unit(x: Value) -> PVec {
        PVec::flat(smallvec::smallvec![x])
    }

    /// Three elements, in the flat form, straight from an array (a `[id sku amt]` literal):
    /// no push and its capacity check per element.
    pub fn from_three(xs: [Value; 3]) -> PVec {
        PVec::flat(Flat::from_buf(xs))
    }

    /// Two elements, in the flat form (a `[k v]` literal): written in place, the third inline
    /// slot left empty (a nil there is never read nor dropped).
    pub fn from_two(a: Value, b: Value) -> PVec {
        PVec::flat(Flat::from_buf_and_len([a, b, Value::Nil], 2))
    }

    /// The elements of `v`, in order, in the flat form: a builder fills a plain `Vec` (a push
    /// is a few instructions) and hands it over; a long one's buffer is kept, not copied.
    pub fn from_vec(v: Vec<Value>) -> PVec {
        PVec::flat(Flat::from_vec(v))
    }

    /// The elements a builder pushed to a [`Flat`] of its own (a split's pieces, a match and
    /// its group): a push there is inline, with no check of the form per element.
    pub fn from_flat(v: Flat) -> PVec {
        PVec::flat(v)
    }

    fn flat(v: Flat) -> PVec {
        PVec {
            repr: Repr::Flat(v),
            tree: OnceCell::new(),
        }
    }

    fn from_tree(t: Tree) -> PVec {
        PVec {
            repr: Repr::Tree(Box::new(t)),
            tree: OnceCell::new(),
        }
    }

    /// Whether the elements are a plain `Vec` (for tests of the two forms).
    pub fn is_flat_form(&self) -> bool {
        matches!(self.repr, Repr::Flat(_))
    }

    /// The same elements in the persistent form (for tests of the two forms).
    pub fn into_tree_form(mut self) -> PVec {
        self.make_tree();
        self
    }

    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Flat(v) => v.len(),
            Repr::Tree(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, i: usize) -> Option<&Value> {
        match &self.repr {
            Repr::Flat(v) => v.get(i),
            Repr::Tree(t) => t.get(i),
        }
    }

    pub fn front(&self) -> Option<&Value> {
        self.get(0)
    }

    pub fn back(&self) -> Option<&Value> {
        match &self.repr {
            Repr::Flat(v) => v.last(),
            Repr::Tree(t) => t.back(),
        }
    }

    pub fn last(&self) -> Option<&Value> {
        self.back()
    }

    pub fn iter(&self) -> Iter<'_> {
        match &self.repr {
            Repr::Flat(v) => Iter::Flat(v.iter()),
            Repr::Tree(t) => Iter::Tree(t.iter()),
        }
    }

    /// The elements as one slice, when flat.
    /// The elements of a flat form kept inside the collection's own allocation (not spilled to
    /// a buffer of their own), for a drop that gives them back in place.
    pub fn inline_mut(&mut self) -> Option<&mut Flat> {
        match &mut self.repr {
            Repr::Flat(v) if !v.spilled() => Some(v),
            _ => None,
        }
    }

    pub fn as_slice(&self) -> Option<&[Value]> {
        match &self.repr {
            Repr::Flat(v) => Some(v),
            Repr::Tree(_) => None,
        }
    }

    /// Pushes clones of the elements from `i` to the end of the run (leaf chunk) that holds
    /// `i` onto `out`, last first (so `pop` yields them in order); the index after that run.
    pub fn chunk_rev_into(&self, i: usize, out: &mut Vec<Value>) -> usize {
        match &self.repr {
            Repr::Flat(v) => {
                out.extend(v.iter().skip(i).rev().cloned());
                v.len()
            }
            Repr::Tree(t) => {
                if i >= t.len() {
                    return t.len();
                }
                let mut focus = t.focus();
                let (range, chunk) = focus.chunk_at(i);
                let from = i.saturating_sub(range.start);
                out.extend(chunk.iter().skip(from).rev().cloned());
                range.end.max(i + 1)
            }
        }
    }

    fn make_tree(&mut self) {
        if let Repr::Flat(v) = &mut self.repr {
            let t = match self.tree.take() {
                Some(t) => t,
                None => Box::new(std::mem::take(v).into_iter().collect()),
            };
            self.repr = Repr::Tree(t);
        }
    }

    /// Mutable access to the elements in their form; a flat collection's kept tree is dropped
    /// (an update would make it stale).
    fn form(&mut self) -> Form<'_> {
        match &mut self.repr {
            Repr::Flat(v) => {
                // Checked first: taking an empty cell still writes it.
                if self.tree.get().is_some() {
                    self.tree.take();
                }
                Form::Flat(v)
            }
            Repr::Tree(t) => Form::Tree(t),
        }
    }

    /// [`PVec::form`] for an update that is O(n) on a `Vec`: a long flat collection becomes a
    /// tree first (once); a short one stays flat.
    fn form_for_shift(&mut self) -> Form<'_> {
        if self.len() > SMALL {
            self.make_tree();
        }
        self.form()
    }

    /// The persistent form of a collection that may be shared, leaving it as it is: a tree's
    /// own (O(1) to copy), or the one a flat collection keeps (built on first use).
    fn shared_tree(&self) -> Tree {
        match &self.repr {
            Repr::Flat(v) => Tree::clone(
                self.tree
                    .get_or_init(|| Box::new(v.iter().cloned().collect())),
            ),
            Repr::Tree(t) => Tree::clone(t),
        }
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut Value> {
        match self.form() {
            Form::Flat(v) => v.get_mut(i),
            Form::Tree(t) => t.get_mut(i),
        }
    }

    pub fn iter_mut(&mut self) -> IterMut<'_> {
        match self.form() {
            Form::Flat(v) => IterMut::Flat(v.iter_mut()),
            Form::Tree(t) => IterMut::Tree(t.iter_mut()),
        }
    }

    pub fn push_back(&mut self, x: Value) {
        match self.form() {
            Form::Flat(v) => v.push(x),
            Form::Tree(t) => t.push_back(x),
        }
    }

    pub fn pop_back(&mut self) -> Option<Value> {
        match self.form() {
            Form::Flat(v) => v.pop(),
            Form::Tree(t) => t.pop_back(),
        }
    }

    pub fn push_front(&mut self, x: Value) {
        match self.form_for_shift() {
            Form::Flat(v) => v.insert(0, x),
            Form::Tree(t) => t.push_front(x),
        }
    }

    pub fn pop_front(&mut self) -> Option<Value> {
        if self.is_empty() {
            return None;
        }
        match self.form_for_shift() {
            Form::Flat(v) => Some(v.remove(0)),
            Form::Tree(t) => t.pop_front(),
        }
    }

    /// Inserts at `i`, clamped to the length (imbl panics past it).
    pub fn insert(&mut self, i: usize, x: Value) {
        match self.form_for_shift() {
            Form::Flat(v) => v.insert(i.min(v.len()), x),
            Form::Tree(t) => t.insert(i.min(t.len()), x),
        }
    }

    /// Removes and returns the element at `i`; nil past the end (imbl panics there).
    pub fn remove(&mut self, i: usize) -> Value {
        if i >= self.len() {
            return Value::Nil;
        }
        match self.form_for_shift() {
            Form::Flat(v) => v.remove(i),
            Form::Tree(t) => t.remove(i),
        }
    }

    /// Replaces the element at `i`, returning the old one; nil past the end (imbl panics there).
    pub fn set(&mut self, i: usize, x: Value) -> Value {
        match self.get_mut(i) {
            Some(slot) => std::mem::replace(slot, x),
            None => Value::Nil,
        }
    }

    pub fn truncate(&mut self, n: usize) {
        match self.form() {
            Form::Flat(v) => v.truncate(n),
            Form::Tree(t) => t.truncate(n.min(t.len())),
        }
    }

    /// Appends `other`'s elements: moved onto a flat collection, concatenated onto a tree.
    pub fn append(&mut self, other: PVec) {
        match self.form() {
            Form::Flat(v) => v.extend(other),
            Form::Tree(t) => match other.repr {
                Repr::Flat(xs) => t.extend(xs),
                Repr::Tree(o) => t.append(*o),
            },
        }
    }

    /// The first `n` elements (clamped) as a new collection.
    pub fn take(&self, n: usize) -> PVec {
        let n = n.min(self.len());
        match &self.repr {
            Repr::Flat(v) if n <= SMALL => PVec::flat(Flat::from(&v[..n])),
            _ => PVec::from_tree(self.shared_tree().take(n)),
        }
    }

    /// All but the first `n` elements (clamped) as a new collection: through the tree form when
    /// long, so `rest` in a loop stays O(log n) a step.
    pub fn skip(&self, n: usize) -> PVec {
        let n = n.min(self.len());
        match &self.repr {
            Repr::Flat(v) if v.len() - n <= SMALL => PVec::flat(Flat::from(&v[n..])),
            _ => PVec::from_tree(self.shared_tree().skip(n)),
        }
    }

    /// Elements `range` (clamped to the length) as a new collection.
    pub fn slice(&self, range: std::ops::Range<usize>) -> PVec {
        let end = range.end.min(self.len());
        let start = range.start.min(end);
        self.skip(start).take(end - start)
    }

    /// Splits at `i` (clamped to the length).
    pub fn split_at(self, i: usize) -> (PVec, PVec) {
        (self.take(i), self.skip(i))
    }
}

enum Form<'a> {
    Flat(&'a mut Flat),
    Tree(&'a mut Tree),
}

impl Clone for PVec {
    /// What `Rc::make_mut` calls before updating a shared collection: a short flat one is copied
    /// flat; anything else shares its tree form (see the module header).
    fn clone(&self) -> PVec {
        match &self.repr {
            Repr::Flat(v) if v.len() <= SMALL => PVec::flat(v.clone()),
            _ => PVec::from_tree(self.shared_tree()),
        }
    }
}

impl From<Vec<Value>> for PVec {
    fn from(v: Vec<Value>) -> PVec {
        PVec::flat(Flat::from_vec(v))
    }
}

impl FromIterator<Value> for PVec {
    fn from_iter<I: IntoIterator<Item = Value>>(iter: I) -> PVec {
        PVec::flat(iter.into_iter().collect())
    }
}

impl Extend<Value> for PVec {
    fn extend<I: IntoIterator<Item = Value>>(&mut self, iter: I) {
        match self.form() {
            Form::Flat(v) => v.extend(iter),
            Form::Tree(t) => t.extend(iter),
        }
    }
}

impl std::fmt::Debug for PVec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Borrowing iterator over either form.
pub enum Iter<'a> {
    Flat(std::slice::Iter<'a, Value>),
    Tree(imbl::vector::Iter<'a, Value, imbl::shared_ptr::RcK>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a Value;
    #[inline]
    fn next(&mut self) -> Option<&'a Value> {
        match self {
            Iter::Flat(i) => i.next(),
            Iter::Tree(i) => i.next(),
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Iter::Flat(i) => i.size_hint(),
            Iter::Tree(i) => i.size_hint(),
        }
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Flat(i) => i.next_back(),
            Iter::Tree(i) => i.next_back(),
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

/// Mutable iterator over either form.
pub enum IterMut<'a> {
    Flat(std::slice::IterMut<'a, Value>),
    Tree(imbl::vector::IterMut<'a, Value, imbl::shared_ptr::RcK>),
}

impl<'a> Iterator for IterMut<'a> {
    type Item = &'a mut Value;
    fn next(&mut self) -> Option<&'a mut Value> {
        match self {
            IterMut::Flat(i) => i.next(),
            IterMut::Tree(i) => i.next(),
        }
    }
}

/// Consuming iterator over either form.
pub enum IntoIter {
    Flat(smallvec::IntoIter<[Value; 3]>),
    Tree(imbl::vector::ConsumingIter<Value, imbl::shared_ptr::RcK>),
}

impl Iterator for IntoIter {
    type Item = Value;
    #[inline]
    fn next(&mut self) -> Option<Value> {
        match self {
            IntoIter::Flat(i) => i.next(),
            IntoIter::Tree(i) => i.next(),
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            IntoIter::Flat(i) => i.size_hint(),
            IntoIter::Tree(i) => i.size_hint(),
        }
    }
}

impl DoubleEndedIterator for IntoIter {
    fn next_back(&mut self) -> Option<Value> {
        match self {
            IntoIter::Flat(i) => i.next_back(),
            IntoIter::Tree(i) => i.next_back(),
        }
    }
}

impl ExactSizeIterator for IntoIter {}

impl IntoIterator for PVec {
    type Item = Value;
    type IntoIter = IntoIter;
    fn into_iter(self) -> IntoIter {
        match self.repr {
            Repr::Flat(v) => IntoIter::Flat(v.into_iter()),
            Repr::Tree(t) => IntoIter::Tree((*t).into_iter()),
        }
    }
}

impl<'a> IntoIterator for &'a PVec {
    type Item = &'a Value;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl std::fmt::Debug for Iter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("pvec::Iter")
    }
}

impl std::fmt::Debug for IterMut<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("pvec::IterMut")
    }
}

impl std::fmt::Debug for IntoIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("pvec::IntoIter")
    }
}

#[cfg(test)]
mod tests {
    use super::{PVec, SMALL};
    use crate::value::Value;

    /// Both forms of the same elements: the flat one as built, and its tree form.
    fn both(xs: &[i64]) -> [PVec; 2] {
        let flat: PVec = xs.iter().map(|&x| Value::Int(x)).collect();
        assert!(flat.is_flat_form());
        let tree = flat.clone().into_tree_form();
        assert!(!tree.is_flat_form());
        [flat, tree]
    }

    fn ints(v: &PVec) -> Vec<i64> {
        v.iter()
            .map(|x| match x {
                Value::Int(i) => *i,
                _ => i64::MIN,
            })
            .collect()
    }

    /// Every way of reading `v` gives `model`.
    fn check(v: &PVec, model: &[i64], what: &str) {
        assert_eq!(ints(v), model, "{what}: iter");
        assert_eq!(v.len(), model.len(), "{what}: len");
        assert_eq!(v.iter().len(), model.len(), "{what}: iter len");
        let back: Vec<i64> = v
            .iter()
            .rev()
            .map(|x| ints(&PVec::unit(x.clone()))[0])
            .collect();
        assert!(back.iter().rev().eq(model.iter()), "{what}: rev");
        for (i, m) in model.iter().enumerate() {
            assert!(
                matches!(v.get(i), Some(Value::Int(x)) if x == m),
                "{what}: get {i}"
            );
        }
        assert!(v.get(model.len()).is_none(), "{what}: get past the end");
        assert_eq!(
            v.back().map(|x| ints(&PVec::unit(x.clone()))[0]),
            model.last().copied(),
            "{what}: back"
        );
        // Chunked walk from every chunk start, as the sequence cursor does.
        let (mut i, mut walked, mut buf) = (0, Vec::new(), Vec::new());
        while i < v.len() {
            i = v.chunk_rev_into(i, &mut buf);
            while let Some(x) = buf.pop() {
                walked.push(x);
            }
        }
        assert_eq!(ints(&walked.into_iter().collect()), model, "{what}: chunks");
        let owned: Vec<Value> = PVec::clone(v).into_iter().collect();
        assert_eq!(
            ints(&owned.into_iter().collect()),
            model,
            "{what}: into_iter"
        );
    }

    fn int(n: usize) -> i64 {
        i64::try_from(n).unwrap_or(i64::MAX)
    }

    use crate::test_rng::Rng;

    /// One random update, applied to a subject and to the `Vec` model alike.
    fn update(v: &mut PVec, m: &mut Vec<i64>, op: usize, a: usize, x: i64) -> String {
        match op {
            0 | 1 => {
                v.push_back(Value::Int(x));
                m.push(x);
                "push_back".into()
            }
            2 => {
                let got = v.pop_back().map(|x| ints(&PVec::unit(x))[0]);
                assert_eq!(got, m.pop());
                "pop_back".into()
            }
            3 => {
                v.push_front(Value::Int(x));
                m.insert(0, x);
                "push_front".into()
            }
            4 => {
                let got = v.pop_front().map(|x| ints(&PVec::unit(x))[0]);
                assert_eq!(got, (!m.is_empty()).then(|| m.remove(0)));
                "pop_front".into()
            }
            5 => {
                let i = a % (m.len() + 1);
                v.insert(i, Value::Int(x));
                m.insert(i, x);
                format!("insert {i}")
            }
            6 if !m.is_empty() => {
                let i = a % m.len();
                assert!(matches!(v.remove(i), Value::Int(y) if y == m.remove(i)));
                format!("remove {i}")
            }
            7 if !m.is_empty() => {
                let i = a % m.len();
                assert!(matches!(v.set(i, Value::Int(x)), Value::Int(y) if y == m[i]));
                m[i] = x;
                format!("set {i}")
            }
            8 => {
                let n = a % (m.len() + 2);
                v.truncate(n);
                m.truncate(n);
                format!("truncate {n}")
            }
            10 => {
                let extra: Vec<i64> = (0..a % 100).map(|k| x + int(k)).collect();
                let [flat, tree] = both(&extra);
                v.append(if a.is_multiple_of(2) { flat } else { tree });
                m.extend(extra);
                "append".into()
            }
            11 => {
                // An update of a shared collection: the copy changes, the original does not.
                let before = m.clone();
                let mut copy = PVec::clone(v);
                copy.push_back(Value::Int(x));
                check(v, &before, "original after a copy was updated");
                *v = copy;
                m.push(x);
                "copy then push".into()
            }
            12 => {
                let (n, k) = (a % (m.len() + 2), a % 70);
                check(&v.take(n), &m[..n.min(m.len())], "take");
                check(&v.skip(n), &m[n.min(m.len())..], "skip");
                let end = (n + k).min(m.len());
                check(&v.slice(n..n + k), &m[n.min(end)..end], "slice");
                let (l, r) = PVec::clone(v).split_at(n);
                let cut = n.min(m.len());
                check(&l, &m[..cut], "split left");
                check(&r, &m[cut..], "split right");
                "slices".into()
            }
            _ => {
                for (y, z) in v.iter_mut().zip(m.iter_mut()) {
                    *y = Value::Int(x);
                    *z = x;
                }
                "iter_mut".into()
            }
        }
    }

    #[test]
    fn both_forms_agree_with_a_vec_under_random_updates() {
        for seed in 1..=12usize {
            let start: Vec<i64> = (0..int(seed * 23 % 150)).collect();
            let mut rng = Rng((seed as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let [mut flat, mut tree] = both(&start);
            let (mut mf, mut mt) = (start.clone(), start);
            for step in 0..400 {
                let (op, a, x) = (rng.below(14), rng.below(1000), int(rng.below(10_000)));
                let what = update(&mut flat, &mut mf, op, a, x);
                check(
                    &flat,
                    &mf,
                    &format!("seed {seed} step {step}: flat after {what}"),
                );
                let what = update(&mut tree, &mut mt, op, a, x);
                check(
                    &tree,
                    &mt,
                    &format!("seed {seed} step {step}: tree after {what}"),
                );
            }
        }
    }

    #[test]
    fn a_shared_long_flat_vector_is_converted_once_and_never_goes_stale() {
        let n = int(SMALL * 4);
        let model: Vec<i64> = (0..n).collect();
        let [mut flat, _] = both(&model);
        // Copies and slices of the shared original are trees; the original stays flat.
        let copy = flat.clone();
        assert!(!copy.is_flat_form() && flat.is_flat_form());
        let rest = flat.skip(1);
        assert!(!rest.is_flat_form(), "a long rest goes through the tree");
        assert!(!rest.skip(1).is_flat_form());
        check(&rest, &model[1..], "rest");
        // An in-place update of the (again unshared) original drops the kept tree.
        flat.push_back(Value::Int(-1));
        flat.set(0, Value::Int(-2));
        let mut want = model.clone();
        want.push(-1);
        want[0] = -2;
        check(&flat.clone(), &want, "a copy after an in-place update");
        check(&flat.skip(0), &want, "a slice after an in-place update");
        check(&copy, &model, "the earlier copy");
    }

    #[test]
    fn short_collections_stay_flat_through_copies_and_shifts() {
        let model: Vec<i64> = (0..int(SMALL)).collect();
        let [mut flat, _] = both(&model);
        assert!(flat.clone().is_flat_form());
        flat.push_front(Value::Int(-1));
        assert!(flat.is_flat_form(), "O(n) updates of a short one stay flat");
        flat.push_front(Value::Int(-2));
        assert!(
            !flat.is_flat_form(),
            "a long one becomes a tree before an O(n) update"
        );
    }

    #[test]
    fn from_vec_keeps_the_elements_in_order_whatever_the_capacity() {
        for n in 0..12usize {
            for spare in [0, 1, 5] {
                let mut v = Vec::with_capacity(n + spare);
                v.extend((0..n).map(|i| Value::Int(i64::try_from(i).unwrap_or(0))));
                let model = v.clone();
                let mut p = PVec::from_vec(v);
                assert!(p.is_flat_form());
                assert_eq!(
                    p.iter().cloned().collect::<Vec<_>>(),
                    model,
                    "{n} + {spare}"
                );
                p.push_back(Value::Nil);
                assert_eq!(p.len(), n + 1);
                assert_eq!(p.get(n), Some(&Value::Nil));
            }
        }
    }
}
