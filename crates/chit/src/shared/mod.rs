//! What the commands and the server share, so that none imports another:
//! opening keys, trust files, transcripts, logs (local and served) and
//! writing signed envelopes.

pub mod envelopes;
pub mod keys;
pub mod logging;
pub mod logs;
pub mod net;
pub mod remote;
pub mod transcripts;
pub mod trust;
