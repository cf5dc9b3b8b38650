//! Shared helpers for ptc-sandbox's end-to-end and conformance tests.
//!
//! The conformance corpus lives in `tests/conformance/` as EDN lines; [`corpus`] reads it and
//! [`compare`] judges a result against an expectation with the corpus's rules (a seq equals a
//! vector, maps and sets are unordered, `:a` equals `"a"` as a map key, ints never equal floats
//! except in `:division` cases, floats within 1e-9 relative).
#![forbid(unsafe_code)]

pub mod bins;
pub mod compare;
pub mod corpus;
