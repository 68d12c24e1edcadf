//! Where backoff jitter draws its randomness: the thread-local generator of
//! `fastrand`, or one seeded generator per runtime for reproducible tests
//! (`Runtime::builder().jitter_seed(seed)`).

use std::sync::{Mutex, PoisonError};

/// A runtime's source of uniform 64-bit draws for jitter.
#[derive(Debug)]
pub(crate) enum JitterSource {
    /// `fastrand`'s thread-local generator: no lock, not reproducible.
    ThreadLocal,
    /// One generator, seeded: the same seed and the same order of draws
    /// give the same delays. A draw takes a lock; draws happen only before a
    /// backoff sleep.
    Seeded(Mutex<fastrand::Rng>),
}

impl JitterSource {
    pub(crate) fn new(seed: Option<u64>) -> Self {
        match seed {
            None => JitterSource::ThreadLocal,
            Some(seed) => JitterSource::Seeded(Mutex::new(fastrand::Rng::with_seed(seed))),
        }
    }

    /// A uniform draw from all of `u64`.
    pub(crate) fn next(&self) -> u64 {
        match self {
            JitterSource::ThreadLocal => fastrand::u64(..),
            JitterSource::Seeded(rng) => rng.lock().unwrap_or_else(PoisonError::into_inner).u64(..),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_the_same_draws() {
        let draws = |seed| {
            let source = JitterSource::new(Some(seed));
            (0..5).map(|_| source.next()).collect::<Vec<_>>()
        };
        assert_eq!(draws(7), draws(7));
        assert_ne!(draws(7), draws(8));
    }

    #[test]
    fn unseeded_draws_vary() {
        let source = JitterSource::new(None);
        let first = source.next();
        assert!((0..64).any(|_| source.next() != first));
    }
}
