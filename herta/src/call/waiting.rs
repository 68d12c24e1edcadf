//! Bounded waiting and the call's deadline: the instants a call's stages
//! must respect, fixed once at admission.
//!
//! - `max_wait = "…"`: one absolute limit, from admission, on the key wait
//!   **and** the budget wait together (a call that waited 80 ms of a 100 ms
//!   `max_wait` for its key has 20 ms left for its budgets). On expiry the
//!   call is throttled, naming what it was still waiting for.
//! - The deadline: the contract's `deadline = "…"` from admission and the
//!   enclosing [`herta::deadline`](crate::deadline) scope, the earliest of
//!   them. It bounds the waits too (expiry there: `DeadlineExceeded`, nothing
//!   ran) and every attempt (see [`attempts`](super::attempts)).
//!
//! A wait is bounded by `tokio::time::timeout_at`, which polls the wait
//! before its timer: a grant that is ready at the expiry instant is used.
//! A grant that lands after that poll is handed on when the timed-out wait
//! is dropped (the key table and the arbiter pass the units or the key of a
//! granted-but-unseen waiter to the next one), so it is never lost.
//!
//! Cost: a call of a contract without `max_wait`, `deadline` and
//! `timeout`, while no `herta::deadline` scope runs anywhere in the
//! process, has no [`Limits`] ([`Limits::of_call`] decides with one
//! load and one branch): no clock read, no timer, and each check is one
//! test. Otherwise (out of line) the scope is read once, the clock once if
//! the contract declares `max_wait` or `deadline`, and no timer is built
//! unless a limit is set; a wait that queues under a limit allocates its
//! timer ([`Bounded`]).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::time::Instant;

use super::ended::Refusal;
use crate::contract::Contract;
use crate::error::{Busy, Throttle};

/// What bounds one call: the instants its waits and attempts must
/// respect, fixed at admission, or none.
///
/// None is a call nothing bounds: its contract declares no `max_wait`,
/// `deadline` or `timeout`, and no `herta::deadline` scope runs in the
/// process. Every check of such a call is one test (of an empty `Option`,
/// no clock read); an attempt that has only a `timeout` still gets
/// [`Bounds`], with no instant set, so that one test also says whether an
/// attempt needs a timer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits(Option<Bounds>);

/// The instants of a bounded call.
#[derive(Debug, Clone, Copy)]
struct Bounds {
    /// When the call's deadline passes (contract and scope, the earliest).
    deadline: Option<Instant>,
    /// When waiting for key and budgets must have ended (`max_wait`).
    max_wait: Option<Instant>,
}

/// Whether any limit may apply to a call admitted now: its contract
/// declares `max_wait`, `deadline` or `timeout` (`declared`, stored at
/// bind), or a [`herta::deadline`](crate::deadline) scope is running
/// somewhere in the process (one relaxed load; the scope itself is read at
/// admission).
#[inline(always)]
fn may_apply(declared: bool) -> bool {
    declared || crate::deadline::any_scope_running()
}

impl Limits {
    /// The limits of a call of `contract` admitted now; `declared` is
    /// [`declared_by`](Self::declared_by)`(contract)`: none unless a limit
    /// [`may_apply`].
    #[inline(always)]
    pub(crate) fn of_call(contract: &Contract, declared: bool) -> Self {
        if may_apply(declared) {
            Self::at_admission(contract)
        } else {
            // Not a constant: a constant is copied whole, where `None` is one
            // store of its niche.
            Limits(None)
        }
    }

    /// Whether `contract` declares `max_wait`, `deadline` or `timeout`
    /// (stored at bind, so that a call of a contract without them tests one
    /// flag).
    pub(crate) fn declared_by(contract: &Contract) -> bool {
        contract.max_wait().is_some()
            || contract.deadline().is_some()
            || contract.timeout().is_some()
    }

    /// The limits of a call of `contract` admitted now, when a limit may
    /// apply: the scope's deadline, and the clock read once if the contract
    /// declares `max_wait` or `deadline`.
    #[inline(never)]
    fn at_admission(contract: &Contract) -> Self {
        let scope = crate::deadline::current_deadline();
        if contract.max_wait().is_none() && contract.deadline().is_none() {
            return Limits(Some(Bounds {
                deadline: scope,
                max_wait: None,
            }));
        }
        let now = Instant::now();
        let own = contract.deadline().map(|d| now + d);
        Limits(Some(Bounds {
            deadline: earliest(own, scope),
            max_wait: contract.max_wait().map(|w| now + w),
        }))
    }

    /// Whether anything bounds the call (then each attempt computes its
    /// deadline).
    #[inline(always)]
    pub(crate) fn any(&self) -> bool {
        self.0.is_some()
    }

    /// When the call's deadline passes (contract and scope, the earliest).
    #[inline(always)]
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.0.and_then(|bounds| bounds.deadline)
    }

    /// When waiting must end, if ever.
    #[inline]
    pub(crate) fn wait_until(&self) -> Option<Instant> {
        self.0
            .and_then(|bounds| earliest(bounds.deadline, bounds.max_wait))
    }

    /// Why a wait that ran out at [`wait_until`](Self::wait_until) ends:
    /// the deadline (when it is the earlier or the same instant), else
    /// `max_wait`, throttled on what `busy` names.
    #[cold]
    pub(crate) fn expired(&self, busy: impl FnOnce() -> Busy) -> Refusal {
        let (deadline, max_wait) = self
            .0
            .map_or((None, None), |bounds| (bounds.deadline, bounds.max_wait));
        match (deadline, max_wait) {
            (Some(deadline), Some(max_wait)) if max_wait < deadline => {
                Refusal::throttled(Throttle::MaxWait, busy())
            }
            (Some(_), _) => Refusal::DeadlineExceeded,
            (None, _) => Refusal::throttled(Throttle::MaxWait, busy()),
        }
    }

    /// Whether the deadline has passed, so that no attempt may start.
    #[inline(always)]
    pub(crate) fn passed(&self) -> bool {
        match self.0 {
            Some(bounds) => bounds.passed(),
            None => false,
        }
    }
}

impl Bounds {
    /// Whether the deadline has passed.
    #[inline]
    fn passed(&self) -> bool {
        self.deadline
            .is_some_and(|deadline| Instant::now() >= deadline)
    }
}

/// The earlier of two optional instants.
#[inline(always)]
pub(crate) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Awaits `wait` until `until`; `None` if it ran out first. Dropping the
/// wait on expiry withdraws it (a grant it got meanwhile is handed on).
/// Cancel safe if `wait` is.
#[inline]
pub(crate) fn bounded<F: Future>(until: Option<Instant>, wait: F) -> Bounded<F> {
    match until {
        Some(at) => Bounded::Until {
            wait: Box::pin(tokio::time::timeout_at(at, wait)),
        },
        None => Bounded::Unbounded { wait },
    }
}

pin_project_lite::pin_project! {
    /// [`bounded`]'s future: the wait, with its timer only when bounded.
    ///
    /// A future type, not an `async fn`: an `async fn` taking a future
    /// keeps it twice in its state (as its argument and as what it awaits).
    /// The bounded wait is boxed (one allocation per wait that queues with a
    /// limit, beside the timer it registers): inline, tokio's `Sleep` would
    /// make every call's future larger, which every queued call pays in
    /// memory, bounded or not.
    #[project = BoundedProj]
    pub(crate) enum Bounded<F> {
        Unbounded { #[pin] wait: F },
        Until { wait: Pin<Box<tokio::time::Timeout<F>>> },
    }
}

impl<F: Future> Future for Bounded<F> {
    type Output = Option<F::Output>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            BoundedProj::Unbounded { wait } => wait.poll(cx).map(Some),
            BoundedProj::Until { wait } => wait.as_mut().poll(cx).map(Result::ok),
        }
    }
}

/// Panics with what to do when a call that needs tokio's timers (for its
/// `what`: a `timeout`, a deadline, a `max_wait`, a backoff sleep) is
/// awaited outside any tokio runtime, instead of tokio's panic from inside
/// herta. (A runtime built without timers still panics in tokio: that
/// cannot be asked of a runtime handle.)
#[inline]
pub(crate) fn needs_timers(contract: &Contract, what: &str) {
    if tokio::runtime::Handle::try_current().is_err() {
        no_tokio_runtime(contract.operation(), what)
    }
}

#[cold]
#[inline(never)]
fn no_tokio_runtime(operation: &str, what: &str) -> ! {
    panic!(
        "herta: operation `{operation}` needs tokio's timers for its {what}, so its calls must \
         be awaited inside a tokio runtime with timers enabled (`#[tokio::main]`, or a runtime \
         built with `enable_time()`/`enable_all()`); this call was awaited outside any tokio \
         runtime"
    )
}
