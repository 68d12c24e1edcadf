//! Stage 3, the budgets: every unit the contract names, all at once or
//! none (see [`crate::arbiter`] for the fairness rules).
//!
//! Every call first tries to take them at once (the uncontended path builds
//! no waiter). When they are busy, `Reject` refuses the call as throttled,
//! naming the first budget without room, and `Wait` queues, holding nothing
//! until it is granted everything, and reports how long it waited.
//!
//! Cancel safety: dropping the wait withdraws the waiter at once (units
//! granted to it but not yet seen pass to the waiters behind it); dropping
//! the returned permit gives every unit back.

use std::sync::Arc;

use super::ended::Refusal;
use crate::arbiter::{Need, Permit, TryAcquireError};
use crate::error::Busy;
use crate::events::{Event, Events};
use crate::outcome::Admission;
use crate::runtime::Inner;
use crate::trace::{self, Stage, Wait};

/// Takes `needs` from the runtime's budgets at once if they have room.
/// `Err` carries why not, for [`contended`].
#[inline(always)]
pub(crate) fn try_acquire<'a>(
    rt: &'a Inner,
    needs: &'a Arc<[Need]>,
) -> Result<Permit<'a>, TryAcquireError> {
    rt.arbiter.try_acquire(needs)
}

/// After [`try_acquire`] failed with `error`: refuses the call (the runtime
/// is closing, or `Reject` found a budget without room), or queues for
/// `needs` (`Wait`), holding nothing until all of them are granted at once,
/// in this call's turn.
pub(crate) async fn contended<'a>(
    rt: &'a Inner,
    needs: &'a Arc<[Need]>,
    error: TryAcquireError,
    admission: Admission,
    events: Events<'_>,
) -> Result<Permit<'a>, Refusal> {
    let index = match error {
        TryAcquireError::Closed => return Err(Refusal::Stopping(Stage::Budgets)),
        TryAcquireError::Busy(index) => index,
    };
    if admission == Admission::Reject {
        return Err(Refusal::Throttled(Busy::Resource {
            resource: rt.resources[index].name(),
        }));
    }
    match trace::timed(rt.arbiter.acquire(needs)).await {
        (Ok(permit), waited) => {
            events.emit(Event::Waited(Wait::Budgets, waited));
            Ok(permit)
        }
        (Err(_closed), _) => Err(Refusal::Stopping(Stage::Budgets)),
    }
}
