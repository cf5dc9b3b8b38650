//! The integration tests' deterministic generator (xorshift64): a failing case replays from its
//! seed. Included by `#[path]` where needed, as `hostile.rs` is.

/// xorshift64; a seed of 0 is moved off 0 (it would stay 0).
pub struct Rng(pub u64);

impl Rng {
    /// The next raw number.
    pub fn next(&mut self) -> u64 {
        if self.0 == 0 {
            self.0 = 0x9E37_79B9_7F4A_7C15;
        }
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % (n.max(1) as u64)).unwrap_or(0)
    }

    /// One of `xs` (not every test picks).
    #[allow(dead_code)]
    pub fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs.get(self.below(xs.len())).copied().unwrap_or_default()
    }
}
