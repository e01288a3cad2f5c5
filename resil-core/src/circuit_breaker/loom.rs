//! loom models of the breaker's gates (written next).
