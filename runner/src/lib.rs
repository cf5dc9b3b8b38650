//! TEMPORARY lib root (branch sandbox-runner): main's runner library replaces it on merge.
#![forbid(unsafe_code)]
pub mod api;
mod session;
