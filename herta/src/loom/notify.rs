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

use super::sync::{lock, Mutex};
use crate::waiters::{List, Node, WakeList};

pub(crate) struct Notify {
    state: Mutex<State>,
}

struct State {
    /// `notify_waiters` calls so far.
    calls: u64,
    queue: List<()>,
}

impl Notify {
    pub(crate) fn new() -> Self {
        Notify {
            state: Mutex::new(State {
                calls: 0,
                queue: List::new(),
            }),
        }
    }

    /// A future completed by the next [`notify_waiters`](Notify::notify_waiters).
    pub(crate) fn notified(&self) -> Notified<'_> {
        Notified {
            notify: self,
            ticket: lock(&self.state).calls,
            done: false,
            node: Node::new(),
        }
    }

    /// Completes every `Notified` created before this call.
    pub(crate) fn notify_waiters(&self) {
        let mut wake = WakeList::new();
        {
            let mut state = lock(&self.state);
            state.calls += 1;
            state.queue.withdraw_all(&mut wake, |_| {});
        }
        wake.wake_all();
    }
}

pin_project_lite::pin_project! {
    pub(crate) struct Notified<'a> {
        notify: &'a Notify,
        ticket: u64,
        done: bool,
        #[pin]
        node: Node<()>,
    }

    impl<'a> PinnedDrop for Notified<'a> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if !this.node.is_idle() {
                let mut state = lock(&this.notify.state);
                this.node.leave(&mut state.queue);
            }
        }
    }
}

impl Notified<'_> {
    /// Registers without polling; `true` if already notified.
    pub(crate) fn enable(self: Pin<&mut Self>) -> bool {
        self.register(Waker::noop()).is_ready()
    }

    fn register(self: Pin<&mut Self>, waker: &Waker) -> Poll<()> {
        let this = self.project();
        if *this.done {
            return Poll::Ready(());
        }
        let mut state = lock(&this.notify.state);
        let ready = if this.node.is_idle() {
            // Notified since it was created, before it queued?
            let notified = state.calls != *this.ticket;
            if !notified {
                state.queue.push_back(this.node, (), waker.clone());
            }
            notified
        } else {
            this.node.poll(&mut state.queue, waker).is_ready()
        };
        if ready {
            *this.done = true;
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

impl Future for Notified<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.register(cx.waker())
    }
}
