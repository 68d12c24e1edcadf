//! The whole-call deadline scope: [`deadline`].
//!
//! A task-local instant that every herta call made inside the scope honours,
//! on top of its contract's own `deadline`: the earliest of all of them wins.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::time::Instant;

use crate::own_lines::OwnLines;

tokio::task_local! {
    static DEADLINE: Instant;
}

/// Runs `future` with a deadline that every herta call inside it honours.
///
/// Each call made while `future` runs — directly or in functions it awaits,
/// not in tasks it spawns (a task-local does not cross `tokio::spawn`) —
/// must finish by `at`: waiting for its key or budgets, every attempt and
/// every backoff sleep count. A call still waiting at `at` returns
/// `Error::DeadlineExceeded` (nothing ran, outcome `Transient`); an attempt
/// still running is dropped and classified like a timeout. Scopes nest, and
/// the earliest deadline wins: an inner scope cannot extend an outer one. A
/// contract's own `deadline = "…"` is combined the same way.
///
/// The scope reads the clock of the tokio runtime (`tokio::time::Instant`,
/// so a paused test clock applies). Cancel safety: dropping the returned
/// future drops `future`.
///
/// **Prefer it to `tokio::time::timeout` around a call.** A timeout only
/// drops the call when it fires; a call granted its slot a moment before
/// (the slot handed on by another caller's timeout) starts its handler
/// anyway and is then cut short, for a caller already gone. Inside a
/// deadline scope, a call still waiting at the deadline is refused
/// without running its handler, and every attempt ends by it: the same
/// bound, with no handler started for a caller that has given up, which
/// matters most for `NonIdempotent` operations.
///
/// ```
/// use std::time::Duration;
/// use tokio::time::Instant;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let soon = Instant::now() + Duration::from_millis(100);
/// let later = soon + Duration::from_secs(5);
/// herta::deadline(soon, async {
///     herta::deadline(later, async {
///         assert_eq!(herta::current_deadline(), Some(soon)); // the earliest wins
///     })
///     .await;
/// })
/// .await;
/// assert_eq!(herta::current_deadline(), None);
/// # }
/// ```
pub async fn deadline<F: Future>(at: Instant, future: F) -> F::Output {
    let _active = Active::enter();
    let at = current_deadline().map_or(at, |outer| outer.min(at));
    DEADLINE.scope(at, future).await
}

/// Runs `future` (a handler's attempt) in a scope of `at`, the call's
/// deadline, which already is the earliest of the contract's and the
/// enclosing scope's; `None` (no deadline) runs it as it is. The generated
/// `call` of a contract that declares `deadline` wraps its handler in
/// this, so that calls the handler makes inherit the deadline; other
/// contracts never build it. Cancel safety: dropping it drops `future`.
pub(crate) async fn within<F: Future>(at: Option<Instant>, future: F) -> F::Output {
    match at {
        Some(at) => {
            let _active = Active::enter();
            DEADLINE.scope(at, future).await
        }
        None => future.await,
    }
}

/// The deadline of the innermost [`deadline`] scope this code runs in (the
/// earliest of all enclosing scopes), or `None` outside any scope.
#[inline]
pub fn current_deadline() -> Option<Instant> {
    // Every herta call asks; while no scope is running anywhere in the
    // process (the common case for code that never uses one), the answer
    // costs one relaxed load instead of a task-local lookup. A call inside
    // a scope runs within the scope's poll, after the scope counted itself
    // in on this task (so this load sees it).
    if !any_scope_running() {
        return None;
    }
    scoped()
}

/// Whether any [`deadline`] scope is running in the process now (one relaxed
/// load): `false` means no call can be inside one.
#[inline(always)]
pub(crate) fn any_scope_running() -> bool {
    ACTIVE.load(Ordering::Relaxed) != 0
}

/// The task-local lookup, kept out of line.
#[inline(never)]
fn scoped() -> Option<Instant> {
    DEADLINE.try_with(|at| *at).ok()
}

/// Scopes started and not yet ended, process-wide. Read by every call, so
/// alone on its cache lines: beside it, a program's own hot static (the
/// linker places statics in any order) would make every read a miss as
/// soon as two threads bump that static.
static ACTIVE: OwnLines<AtomicUsize> = OwnLines(AtomicUsize::new(0));

/// One running scope, counted in [`ACTIVE`] until dropped.
struct Active;

impl Active {
    fn enter() -> Self {
        ACTIVE.fetch_add(1, Ordering::Relaxed);
        Active
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        ACTIVE.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn an_inner_scope_cannot_extend_an_outer_one() {
        let now = Instant::now();
        let (soon, later) = (now + Duration::from_secs(1), now + Duration::from_secs(9));
        deadline(later, async {
            assert_eq!(current_deadline(), Some(later));
            deadline(soon, async { assert_eq!(current_deadline(), Some(soon)) }).await;
            deadline(later + Duration::from_secs(1), async {
                assert_eq!(current_deadline(), Some(later))
            })
            .await;
            assert_eq!(current_deadline(), Some(later));
        })
        .await;
        assert_eq!(current_deadline(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn the_outer_scope_is_read_when_the_scope_first_runs() {
        let at = Instant::now() + Duration::from_secs(1);
        let inner = deadline(at + Duration::from_secs(5), async { current_deadline() });
        // Created outside any scope, awaited inside one: the outer scope counts.
        assert_eq!(deadline(at, inner).await, Some(at));
    }

    #[tokio::test(start_paused = true)]
    async fn a_spawned_task_does_not_inherit_the_scope() {
        let at = Instant::now() + Duration::from_secs(1);
        let seen = deadline(at, async {
            tokio::spawn(async { current_deadline() }).await
        })
        .await
        .unwrap();
        assert_eq!(seen, None);
    }
}
