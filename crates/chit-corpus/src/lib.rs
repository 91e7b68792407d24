//! Generated run receipts for chit's parity tests and benchmarks.
