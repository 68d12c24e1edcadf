//! The gate's callers in its tests: one operation's two counts, kept as the
//! runtime keeps them (`admitted`, and the counter a call ends in), shared
//! by the unit tests and the loom models (atomics from the `crate::loom`
//! facade, so std's or loom's).

use super::Gate;
use crate::loom::{AtomicU64, Ordering};

/// One operation's counters: calls counted in, calls counted out.
pub(super) struct Count {
    admitted: AtomicU64,
    ended: AtomicU64,
}

impl Count {
    pub(super) fn new() -> Self {
        Count {
            admitted: AtomicU64::new(0),
            ended: AtomicU64::new(0),
        }
    }

    /// A call enters through `gate`, as `call::admit` does.
    pub(super) fn enter(&self, gate: &Gate) -> bool {
        gate.enter(
            || {
                self.admitted.fetch_add(1, Ordering::SeqCst);
            },
            || {
                self.admitted.fetch_sub(1, Ordering::SeqCst);
            },
        )
    }

    /// A call leaves: its ending counted, then the gate told.
    pub(super) fn exit(&self, gate: &Gate) {
        self.ended.fetch_add(1, Ordering::SeqCst);
        gate.exited();
    }
}

/// Calls in flight over `counts`, read as `Registry::in_flight` does:
/// every ending first, then every admission.
pub(super) fn in_flight(counts: &[Count]) -> u64 {
    let ended: u64 = counts.iter().map(|c| c.ended.load(Ordering::SeqCst)).sum();
    let admitted: u64 = counts
        .iter()
        .map(|c| c.admitted.load(Ordering::SeqCst))
        .sum();
    assert!(admitted >= ended, "an ending counted without its admission");
    admitted - ended
}
