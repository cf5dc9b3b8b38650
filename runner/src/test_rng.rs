//! A small deterministic generator (xorshift) for the model tests of the collections: a
//! failing sequence reproduces from its seed. Test builds only.

/// xorshift64; the seed must not be 0.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    /// A number below `n` (0 when `n` is 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        usize::try_from(self.0 % (n.max(1) as u64)).unwrap_or(0)
    }
}
