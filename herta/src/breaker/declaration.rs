//! [`Breaker`]: a breaker's name and thresholds, as declared, and their
//! checks.

use std::time::Duration;

use crate::error::ConfigError;

/// How many buckets a breaker's window is cut into: a bucket is
/// `window / BUCKETS` long, and an attempt counts in the bucket of the
/// instant it ended.
pub const BUCKETS: u32 = 10;

/// The shortest bucket: a window is at least `BUCKETS` of these (10 ms).
pub const MIN_BUCKET: Duration = Duration::from_millis(1);

/// The most attempts a count window may hold.
pub const MAX_WINDOW_CALLS: u32 = 100_000;

/// What a breaker's rates are measured over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BreakerWindow {
    /// The attempts that ended in the last span of time (in [`BUCKETS`]
    /// buckets that each expire on time): each attempt reads the clock
    /// once, when it ends (`window = "10s"`).
    Time(Duration),
    /// The last this many attempts, whenever they ended: a closed attempt
    /// reads no clock (unless a slow-call threshold needs its duration)
    /// (`window = 100`).
    Count(u32),
}

impl std::fmt::Display for BreakerWindow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BreakerWindow::Time(span) => write!(f, "the last {span:?}"),
            BreakerWindow::Count(calls) => write!(f, "the last {calls} attempts"),
        }
    }
}

/// A named circuit breaker's thresholds: a value, usable in `const`.
///
/// The breaker counts every attempt of every operation naming it, over the
/// last `window` (in [`BUCKETS`] buckets that each expire on time), or,
/// with [`with_count_window`](Breaker::with_count_window), over the last N
/// attempts ([`BreakerWindow`]): once it
/// has seen at least `min_calls` attempts there and the failure rate (or,
/// with [`with_slow_call`](Breaker::with_slow_call), the slow rate) reaches
/// its threshold (judged at every attempt recorded, so a success can be the
/// attempt that reaches `min_calls` and opens it), it opens for `open_for`:
/// every call naming it is refused with
/// [`Error::Throttled`](crate::Error::Throttled)
/// ([`Busy::Breaker`](crate::Busy::Breaker), `retry_after` the time left
/// open) before it queues for anything. Then `probes` attempts are let
/// through: all succeed and it closes, any fails and it opens again.
///
/// Invalid values are reported by
/// [`RuntimeBuilder::build`](crate::RuntimeBuilder::build)
/// ([`ConfigError::InvalidBreaker`]), never by a panic; `breakers!` checks
/// them at compile time.
///
/// ```
/// use std::time::Duration;
/// use herta::{Breaker, Resource, Runtime};
///
/// const PAYMENTS: Breaker = Breaker::new("payments")
///     .with_failure_rate(50)
///     .with_min_calls(10)
///     .with_window(Duration::from_secs(10))
///     .with_open_for(Duration::from_secs(30))
///     .with_probes(2);
/// let rt = Runtime::builder()
///     .resource(Resource::new("worker", 4))
///     .breaker(PAYMENTS)
///     .build()?;
/// assert_eq!(rt.stats().breaker("payments").unwrap().opened, 0);
/// # Ok::<(), herta::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Breaker {
    name: &'static str,
    failure_rate: u8,
    min_calls: u32,
    window: BreakerWindow,
    open_for: Duration,
    probes: u16,
    slow_call: Option<Duration>,
    slow_rate: u8,
}

impl Breaker {
    /// A breaker named `name` with the defaults: failure rate 50 %, 10
    /// calls at least, a 10 s window, open for 30 s, 1 probe, no slow-call
    /// threshold.
    pub const fn new(name: &'static str) -> Self {
        Breaker {
            name,
            failure_rate: 50,
            min_calls: 10,
            window: BreakerWindow::Time(Duration::from_secs(10)),
            open_for: Duration::from_secs(30),
            probes: 1,
            slow_call: None,
            slow_rate: 100,
        }
    }

    /// Opens at this failure rate, in percent (1 to 100) of the attempts in
    /// the window.
    pub const fn with_failure_rate(mut self, percent: u8) -> Self {
        self.failure_rate = percent;
        self
    }

    /// No verdict before the window holds this many attempts (at least 1).
    pub const fn with_min_calls(mut self, calls: u32) -> Self {
        self.min_calls = calls;
        self
    }

    /// The span of time the rates are measured over (at least
    /// `BUCKETS × MIN_BUCKET`, 10 ms): a time window, in place of any
    /// window set before.
    pub const fn with_window(mut self, window: Duration) -> Self {
        self.window = BreakerWindow::Time(window);
        self
    }

    /// The rates are measured over the last `calls` attempts (1 to
    /// [`MAX_WINDOW_CALLS`], and at least `min_calls`), whenever they
    /// ended: a count window, in place of any window set before. A closed
    /// attempt then reads no clock, unless a slow-call threshold needs its
    /// duration (read when it starts and when it ends).
    pub const fn with_count_window(mut self, calls: u32) -> Self {
        self.window = BreakerWindow::Count(calls);
        self
    }

    /// How long it stays open before letting probes through (more than 0).
    pub const fn with_open_for(mut self, open_for: Duration) -> Self {
        self.open_for = open_for;
        self
    }

    /// How many probe attempts a half-open period lets through; all must
    /// succeed to close it (1 to 65 535).
    pub const fn with_probes(mut self, probes: u16) -> Self {
        self.probes = probes;
        self
    }

    /// An attempt that lasts `threshold` or longer is slow (and counts as a
    /// failure); the breaker opens when `percent` (1 to 100) of the
    /// attempts in the window are slow, whatever the failure rate.
    pub const fn with_slow_call(mut self, threshold: Duration, percent: u8) -> Self {
        self.slow_call = Some(threshold);
        self.slow_rate = percent;
        self
    }

    /// The name contracts and stats refer to it by.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The failure rate that opens it, in percent.
    pub const fn failure_rate(&self) -> u8 {
        self.failure_rate
    }

    /// The attempts the window must hold before a verdict.
    pub const fn min_calls(&self) -> u32 {
        self.min_calls
    }

    /// The window the rates are measured over: a span of time, or a
    /// number of attempts.
    pub const fn window(&self) -> BreakerWindow {
        self.window
    }

    /// How long it stays open.
    pub const fn open_for(&self) -> Duration {
        self.open_for
    }

    /// The probes of one half-open period.
    pub const fn probes(&self) -> u16 {
        self.probes
    }

    /// The slow-call threshold and the slow rate that opens it, if set.
    pub const fn slow_call(&self) -> Option<(Duration, u8)> {
        match self.slow_call {
            Some(threshold) => Some((threshold, self.slow_rate)),
            None => None,
        }
    }

    /// Why these values cannot make a breaker, if they cannot: the message
    /// of [`ConfigError::InvalidBreaker`] (the same rules `breakers!`
    /// checks at compile time).
    pub(crate) fn check(&self) -> Result<(), ConfigError> {
        let invalid = |reason: String| ConfigError::InvalidBreaker {
            breaker: self.name.to_owned(),
            reason,
        };
        if self.name.is_empty() {
            return Err(ConfigError::EmptyName);
        }
        if !(1..=100).contains(&self.failure_rate) {
            return Err(invalid(format!(
                "`failure_rate` is {}; it is a percentage from 1 to 100",
                self.failure_rate
            )));
        }
        if self.min_calls == 0 {
            return Err(invalid("`min_calls` is 0; it needs at least 1".to_owned()));
        }
        if self.probes == 0 {
            return Err(invalid(
                "`probes` is 0; a half-open breaker needs at least 1 probe".to_owned(),
            ));
        }
        if self.open_for.is_zero() {
            return Err(invalid("`open_for` is 0".to_owned()));
        }
        match self.window {
            BreakerWindow::Time(span) if span < MIN_BUCKET * BUCKETS => {
                return Err(invalid(format!(
                    "`window` is {span:?}, shorter than {BUCKETS} buckets of {MIN_BUCKET:?}"
                )));
            }
            BreakerWindow::Count(0) => {
                return Err(invalid(
                    "`window` is 0 attempts; a count window holds at least 1".to_owned(),
                ));
            }
            BreakerWindow::Count(calls) if calls > MAX_WINDOW_CALLS => {
                return Err(invalid(format!(
                    "`window` is {calls} attempts, more than {MAX_WINDOW_CALLS}"
                )));
            }
            BreakerWindow::Count(calls) if calls < self.min_calls => {
                return Err(invalid(format!(
                    "`window` holds {calls} attempts, fewer than `min_calls` ({}): it would never judge",
                    self.min_calls
                )));
            }
            _ => {}
        }
        if self.slow_call.is_some() && !(1..=100).contains(&self.slow_rate) {
            return Err(invalid(format!(
                "`slow_rate` is {}; it is a percentage from 1 to 100",
                self.slow_rate
            )));
        }
        if self.slow_call.is_some_and(|t| t.is_zero()) {
            return Err(invalid("`slow_call` is 0".to_owned()));
        }
        Ok(())
    }
}
