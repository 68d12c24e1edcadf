//! Stage 3, the budgets: every unit the contract names, all at once or
//! none (see [`crate::arbiter`] for the fairness rules).
//!
//! Every call first tries to take them at once (the uncontended path builds
//! no waiter). When they are busy, `Reject` refuses the call as throttled,
//! naming the first budget without room, and `Wait` queues, holding nothing
//! until it is granted everything, and reports how long it waited.
//!
//! A `Wait` call that would exceed a budget's queue limit is refused at
//! once, naming that budget. A `Wait` call's wait is bounded by its [`Limits`] (`max_wait`, the
//! deadline); when they run out it is refused, naming the first budget
//! still short. A wait that queues is recorded for the self-deadlock check
//! ([`super::chain`]): a call needing more units than the capacity minus
//! what its own calling chain holds is refused at once (`WouldDeadlock`,
//! naming the budget).
//!
//! Cancel safety: dropping the wait withdraws the waiter at once (units
//! granted to it but not yet seen pass to the waiters behind it); dropping
//! the returned permit gives every unit back.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::chain::{Wants, Watch};
use super::ended::Refusal;
use super::waiting::{self, Limits};
use crate::arbiter::{Acquire, AcquireError, Need, Needs, Permit, TryAcquireError};
use crate::error::Busy;
use crate::events::{self, Event, Events};
use crate::kinds::{Queue, StoppedAt};
use crate::outcome::Admission;
use crate::runtime::Inner;

/// Takes `needs` from the runtime's budgets at once if they have room.
/// `Err` carries why not, for [`contended`].
#[inline(always)]
pub(crate) fn try_acquire<'a>(
    rt: &'a Inner,
    needs: &'a Needs,
) -> Result<Permit<'a>, TryAcquireError> {
    rt.arbiter.try_acquire(needs)
}

/// After [`try_acquire`] failed with `error`: refuses the call (the runtime
/// is closing, or `Reject` found a budget without room), or queues for
/// `needs` (`Wait`), holding nothing until all of them are granted at once,
/// in this call's turn.
///
/// Not an `async fn`: one of those keeps a copy of each argument beside the
/// argument itself in its state (in every call's future);
/// the block reads the captured arguments in place.
#[allow(clippy::manual_async_fn)] // an `async fn` would copy its arguments
pub(crate) fn contended<'a, 'e, 'l>(
    rt: &'a Inner,
    needs: &'a Needs,
    error: TryAcquireError,
    admission: Admission,
    events: Events<'e>,
    limits: &'l Limits,
) -> impl Future<Output = Result<Permit<'a>, Refusal>> + use<'a, 'e, 'l> {
    async move {
        let index = match error {
            TryAcquireError::Closed => return Err(Refusal::Stopping(StoppedAt::Budgets)),
            TryAcquireError::Busy(index) => index,
        };
        if admission == Admission::Reject {
            return Err(refused(rt, needs, index));
        }
        let until = limits.wait_until();
        if let (Some(until), true) = (until, needs.has_rate()) {
            // Units that cannot exist before the wait's limit, after those
            // of the calls queued ahead: fail now, not after sleeping.
            if let Some((after, short)) = rt.arbiter.rate_late(needs, until) {
                let mut refusal = limits.expired(|| Busy::Resource {
                    resource: rt.resources[short].name(),
                });
                if let Refusal::Throttled { retry_after, .. } = &mut refusal {
                    *retry_after = after;
                }
                return Err(refusal);
            }
        }
        match events::timed(waiting::bounded(until, watched(rt, needs))).await {
            (Some(Ok(Ok(permit))), waited) => {
                events.emit(Event::Waited(Queue::Budgets, waited));
                Ok(permit)
            }
            (Some(Ok(Err(AcquireError::Closed))), _) => Err(Refusal::Stopping(StoppedAt::Budgets)),
            (Some(Ok(Err(AcquireError::QueueFull(full)))), _) => Err(refused(rt, needs, full)),
            (Some(Err(short)), _) => Err(Refusal::WouldDeadlock(Busy::Resource {
                resource: rt.resources[short].name(),
            })),
            (None, _) => {
                let mut refusal = limits.expired(|| Busy::Resource {
                    resource: rt.resources[still_short(rt, needs).unwrap_or(index)].name(),
                });
                if let Refusal::Throttled { retry_after, .. } = &mut refusal {
                    *retry_after = rt.arbiter.rate_retry_after(needs);
                }
                Err(refusal)
            }
        }
    }
}

/// A queued wait for `needs`, watched for its doom (`call/chain.rs`):
/// once it queues it is recorded (its concurrency budgets: a rate budget's
/// units are never held, so no chain holds them), and a doomed wait ends
/// with `Err`, the index of the budget its chain holds too much of. Dropping it withdraws the
/// waiter, as a cancelled one.
fn watched<'a>(rt: &'a Inner, needs: &'a Needs) -> Watched<'a> {
    Watched {
        acquire: rt.arbiter.acquire(needs),
        watch: Watch::new(),
    }
}

pin_project_lite::pin_project! {
    /// [`watched`]'s future.
    struct Watched<'a> {
        #[pin]
        acquire: Acquire<'a>,
        watch: Watch,
    }
}

impl<'a> Future for Watched<'a> {
    type Output = Result<Result<Permit<'a>, AcquireError>, usize>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if let Poll::Ready(acquired) = this.acquire.as_mut().poll(cx) {
            return Poll::Ready(Ok(acquired));
        }
        let (arbiter, needs) = this.acquire.wants();
        let doomed = this.watch.pending(
            || Wants::Units {
                arbiter: arbiter.addr(),
                needs: Arc::clone(needs.held()),
            },
            cx.waker(),
        );
        match doomed {
            None => Poll::Pending,
            Some(short) => Poll::Ready(Err(short)),
        }
    }
}

/// The budget at `index` refused the call (`Reject` found it busy, or its
/// queue was full): throttled, naming it, with the time until the call's
/// rate units exist after those of the calls queued for them, when it
/// needs any.
#[cold]
fn refused(rt: &Inner, needs: &Needs, index: usize) -> Refusal {
    Refusal::Throttled {
        busy: Busy::Resource {
            resource: rt.resources[index].name(),
        },
        retry_after: rt.arbiter.rate_retry_after(needs),
    }
}

/// The first budget among `needs` still without room for its units now,
/// by index (read when a bounded wait ran out).
fn still_short(rt: &Inner, needs: &[Need]) -> Option<usize> {
    let budgets = rt.arbiter.snapshot();
    needs
        .iter()
        .find(|n| budgets[n.resource].available < n.units)
        .map(|n| n.resource)
}
