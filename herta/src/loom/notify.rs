//! A loom-checkable stand-in for the part of `tokio::sync::Notify` that the
//! admission gate uses: `notified()`, `Notified::enable` and
//! `notify_waiters()`.
//!
//! tokio's `Notify` keeps its own (std) lock, which loom cannot see, so the
//! models run the gate on this one instead: the same documented contract,
//! built from the crate's waiter core ([`crate::waiters`]) under a loom
//! mutex.
//!
//! * A [`Notified`] takes a ticket (the count of `notify_waiters` calls) when
//!   it is created; a later `notify_waiters` completes it, whether or not it
//!   was enabled or polled by then (tokio's rule).
//! * `enable` (or the first poll) queues it; `notify_waiters` wakes every
//!   queued one and stores no permit for later ones.
//! * Dropping it unlinks it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use super::{lock, Mutex};
use crate::waiters::{List, Waiters, WakeList};

pub(crate) struct Notify {
    state: Mutex<State>,
}

struct State {
    /// `notify_waiters` calls so far.
    calls: u64,
    waiters: Waiters<()>,
    queue: List,
}

impl Notify {
    pub(crate) fn new() -> Self {
        Notify {
            state: Mutex::new(State {
                calls: 0,
                waiters: Waiters::new(),
                queue: List::new(),
            }),
        }
    }

    /// A future completed by the next [`notify_waiters`](Notify::notify_waiters).
    pub(crate) fn notified(&self) -> Notified<'_> {
        Notified {
            notify: self,
            ticket: lock(&self.state).calls,
            slot: None,
            done: false,
        }
    }

    /// Completes every `Notified` created before this call.
    pub(crate) fn notify_waiters(&self) {
        let mut wake = WakeList::new();
        {
            let mut state = lock(&self.state);
            state.calls += 1;
            let State { waiters, queue, .. } = &mut *state;
            waiters.withdraw_all(queue, &mut wake);
        }
        wake.wake_all();
    }
}

pub(crate) struct Notified<'a> {
    notify: &'a Notify,
    ticket: u64,
    slot: Option<usize>,
    done: bool,
}

impl Notified<'_> {
    /// Registers without polling; `true` if already notified.
    pub(crate) fn enable(self: Pin<&mut Self>) -> bool {
        self.get_mut().register(Waker::noop()).is_ready()
    }

    fn register(&mut self, waker: &Waker) -> Poll<()> {
        if self.done {
            return Poll::Ready(());
        }
        let mut state = lock(&self.notify.state);
        let State {
            calls,
            waiters,
            queue,
        } = &mut *state;
        let ready = match self.slot {
            // Notified since it was created, before it queued.
            None if *calls != self.ticket => true,
            None => {
                self.slot = Some(waiters.push_back(queue, (), waker));
                false
            }
            Some(slot) => waiters.poll(slot, waker).is_ready(),
        };
        if ready {
            self.slot = None;
            self.done = true;
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

impl Future for Notified<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.get_mut().register(cx.waker())
    }
}

impl Drop for Notified<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            let mut state = lock(&self.notify.state);
            let State { waiters, queue, .. } = &mut *state;
            waiters.leave(slot, |_| queue);
        }
    }
}
