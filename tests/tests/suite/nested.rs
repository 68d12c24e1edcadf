//! Nested calls (DESIGN §9.4): a call made from inside a handler. A
//! contract's `deadline` is a `herta::deadline` scope for its handler, so
//! the calls it makes inherit it (earliest wins) and see it in
//! `Context::deadline()`.

use crate::common;

use std::time::Duration;

use common::within;
use herta::{Context, Error, Failure, Resource, Runtime};
use tokio::time::{sleep, Instant};

/// Sleeps `ms`, reporting the deadline its attempt saw.
#[herta::operation(effect = Idempotent, resources("slots" = 1))]
async fn inner(ctx: Context, ms: u64) -> Result<Option<Instant>, Failure<String>> {
    sleep(Duration::from_millis(ms)).await;
    Ok(ctx.deadline())
}

/// What the inner call returned, seen from the outer handler.
type Seen = Result<Option<Instant>, String>;

fn seen(result: Result<Option<Instant>, Error<Failure<String>>>) -> Seen {
    result.map_err(|err| match err {
        Error::DeadlineExceeded { attempts, .. } => format!("deadline after {attempts} attempt"),
        other => format!("{other:?}"),
    })
}

/// Calls `inner` for `ms` under a 200 ms deadline, returning what it saw.
#[herta::operation(effect = Idempotent, deadline = "200ms", resources("outer" = 1))]
async fn outer(inner: Inner, ms: u64) -> Result<Seen, Failure<String>> {
    Ok(seen(inner.call(ms).await))
}

/// The same without a deadline of its own.
#[herta::operation(effect = Idempotent, resources("outer" = 1))]
async fn open_outer(inner: Inner, ms: u64) -> Result<Seen, Failure<String>> {
    Ok(seen(inner.call(ms).await))
}

/// A 50 ms deadline, retrying: each attempt calls `inner` in the same
/// scope, the call's deadline.
#[herta::operation(effect = Idempotent, deadline = "50ms", timeout = "30ms",
                   resources("outer" = 1), retry(on = Transient, max = 2))]
async fn short_outer(inner: Inner) -> Result<Seen, Failure<String>> {
    Ok(seen(inner.call(0).await))
}

fn runtime() -> Runtime {
    Runtime::builder()
        .resource(Resource::new("slots", 1))
        .resource(Resource::new("outer", 1))
        .build()
        .unwrap()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[tokio::test(start_paused = true)]
async fn a_nested_call_sees_the_outer_contract_deadline() {
    let rt = runtime();
    let inner = Inner::bind(&rt).unwrap();
    let start = Instant::now();
    let seen = within(Outer::bind(&rt).unwrap().call(inner.clone(), 10)).await;
    assert_eq!(seen.unwrap(), Ok(Some(start + ms(200))));
    // Outside the handler, and under an outer without a deadline: none.
    assert_eq!(inner.call(0).await.unwrap(), None);
    let open = OpenOuter::bind(&rt).unwrap();
    assert_eq!(within(open.call(inner, 0)).await.unwrap(), Ok(None));
}

#[tokio::test(start_paused = true)]
async fn the_inherited_deadline_ends_the_inner_call_at_the_outer_deadline() {
    let rt = runtime();
    let inner = Inner::bind(&rt).unwrap();
    let start = Instant::now();
    let seen = within(Outer::bind(&rt).unwrap().call(inner, 1_000)).await;
    // The inner call itself ended at the outer deadline, and the outer
    // handler saw why.
    assert_eq!(seen.unwrap(), Err("deadline after 1 attempt".to_owned()));
    assert_eq!(start.elapsed(), ms(200));
    let stats = rt.stats();
    assert_eq!((stats.deadline_exceeded, stats.succeeded), (1, 1));
}

#[tokio::test(start_paused = true)]
async fn an_earlier_enclosing_scope_wins_over_the_outer_contract_deadline() {
    let rt = runtime();
    let inner = Inner::bind(&rt).unwrap();
    let at = Instant::now() + ms(80);
    let outer = Outer::bind(&rt).unwrap();
    let seen = within(herta::deadline(at, outer.call(inner, 0))).await;
    assert_eq!(seen.unwrap(), Ok(Some(at)));
}

#[tokio::test(start_paused = true)]
async fn the_scope_is_the_call_deadline_not_the_attempt_timeout() {
    let rt = runtime();
    let inner = Inner::bind(&rt).unwrap();
    let start = Instant::now();
    let seen = within(ShortOuter::bind(&rt).unwrap().call(inner)).await;
    assert_eq!(seen.unwrap(), Ok(Some(start + ms(50))));
}

// Self-deadlock refused (DESIGN §9.4): a nested call that could never be
// granted because its own calling chain holds what it needs fails at once
// with `Error::WouldDeadlock`; one that can be granted once others release
// waits as before.

mod would_deadlock {
    use std::sync::Arc;
    use std::time::Duration;

    use herta::{Error, Failure, Resource, Runtime};
    use tokio::sync::{oneshot, Notify};
    use tokio::time::Instant;

    use crate::common::{all_free, settle, within};

    /// What a nested call returned, seen from the handler that made it.
    type Nested = Result<(), Error<Failure<String>>>;

    /// Keyed by `customer` in the shared space "customer", 1 unit of `db`.
    #[herta::operation(effect = Idempotent, resources("db" = 1),
                       serialize_by(customer, scope = "customer"))]
    async fn credit(customer: String) -> Result<(), Failure<String>> {
        let _ = customer;
        Ok(())
    }

    /// The same, showing the key's value in errors.
    #[herta::operation(effect = Idempotent, resources("db" = 1),
                       serialize_by(customer, scope = "shown", show_key = true))]
    async fn shown_credit(customer: String) -> Result<(), Failure<String>> {
        let _ = customer;
        Ok(())
    }

    /// Holds `customer` in "customer", then credits it: never granted.
    #[herta::operation(effect = Idempotent, resources("db" = 1),
                       serialize_by(customer, scope = "customer"))]
    async fn refund(credit: Credit, customer: String) -> Result<Nested, Failure<String>> {
        Ok(credit.call(customer).await)
    }

    /// Holds `customer` in "shown", then credits it there.
    #[herta::operation(effect = Idempotent, resources("db" = 1),
                       serialize_by(customer, scope = "shown", show_key = true))]
    async fn shown_refund(
        credit: ShownCredit,
        customer: String,
    ) -> Result<Nested, Failure<String>> {
        Ok(credit.call(customer).await)
    }

    /// Keyed in a space of its own, so holding nothing `credit` needs but
    /// a unit of `db`: runs a `refund`-like chain one level down.
    #[herta::operation(effect = Idempotent, resources("db" = 1), serialize_by = order)]
    async fn relay(credit: Credit, order: String) -> Result<Nested, Failure<String>> {
        Ok(credit.call(order).await)
    }

    /// Holds `customer` in "customer", then calls `relay`, which credits it.
    #[herta::operation(effect = Idempotent, resources("db" = 1),
                       serialize_by(customer, scope = "customer"))]
    async fn audit(
        relay: Relay,
        credit: Credit,
        customer: String,
    ) -> Result<Result<Nested, Error<Failure<String>>>, Failure<String>> {
        Ok(relay.call(credit, customer).await)
    }

    /// Needs 2 units of `db`.
    #[herta::operation(effect = Idempotent, resources("db" = 2))]
    async fn report() -> Result<(), Failure<String>> {
        Ok(())
    }

    /// Holds 2 units of `db`, then calls `report`.
    #[herta::operation(effect = Idempotent, resources("db" = 2))]
    async fn summary(report: Report) -> Result<Nested, Failure<String>> {
        Ok(report.call().await)
    }

    /// Holds 1 unit of `db`, then calls `report`.
    #[herta::operation(effect = Idempotent, resources("db" = 1))]
    async fn digest(report: Report) -> Result<Nested, Failure<String>> {
        Ok(report.call().await)
    }

    /// Holds 1 unit of `db`, then calls `digest` (1 more, then `report`).
    #[herta::operation(effect = Idempotent, resources("db" = 1))]
    async fn weekly(
        digest: Digest,
        report: Report,
    ) -> Result<Result<Nested, Error<Failure<String>>>, Failure<String>> {
        Ok(digest.call(report).await)
    }

    /// Holds `customer` in "customer" (and 1 unit of `db`) until `release`.
    #[herta::operation(effect = Idempotent, resources("db" = 1),
                       serialize_by(customer, scope = "customer"))]
    async fn hold(
        customer: String,
        units: Arc<Notify>,
        release: Arc<Notify>,
    ) -> Result<(), Failure<String>> {
        let _ = customer;
        units.notify_one();
        release.notified().await;
        Ok(())
    }

    /// Holds 2 units of `db` until `release`.
    #[herta::operation(effect = Idempotent, resources("db" = 2))]
    async fn occupy(held: Arc<Notify>, release: Arc<Notify>) -> Result<(), Failure<String>> {
        held.notify_one();
        release.notified().await;
        Ok(())
    }

    /// Holds 1 unit of `db` (no key), then joins two calls for
    /// `customer`: a `hold` that keeps it until `release`, and a `credit`
    /// that queues behind it.
    #[herta::operation(effect = Idempotent, resources("db" = 1))]
    async fn both(
        hold: Hold,
        credit: Credit,
        customer: String,
    ) -> Result<(Nested, Nested), Failure<String>> {
        let (held, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let (first, second, ()) = tokio::join!(
            hold.call(customer.clone(), held.clone(), release.clone()),
            credit.call(customer),
            async {
                held.notified().await;
                settle().await;
                release.notify_one();
            },
        );
        Ok((first, second))
    }

    /// Holds `customer` in "customer", spawns a `credit` of it and hands
    /// the task out, without awaiting it.
    #[herta::operation(effect = Idempotent, resources("db" = 1),
                       serialize_by(customer, scope = "customer"))]
    async fn spawner(
        credit: Credit,
        customer: String,
        out: Arc<std::sync::Mutex<Option<tokio::task::JoinHandle<Nested>>>>,
    ) -> Result<(), Failure<String>> {
        let task = tokio::spawn(async move { credit.call(customer).await });
        // Let the spawned call queue for the key this call holds.
        tokio::task::yield_now().await;
        *out.lock().unwrap() = Some(task);
        Ok(())
    }

    fn runtime(db: u32) -> Runtime {
        Runtime::builder()
            .resource(Resource::new("db", db))
            .build()
            .unwrap()
    }

    /// Spawns `call` (given its `held` and `release` signals) and waits
    /// until it holds what it takes; notify the `release` returned to let
    /// it finish.
    async fn holding<F, Fut>(call: F) -> (tokio::task::JoinHandle<Fut::Output>, Arc<Notify>)
    where
        F: FnOnce(Arc<Notify>, Arc<Notify>) -> Fut,
        Fut: std::future::Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        let (held, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let task = tokio::spawn(call(held.clone(), release.clone()));
        held.notified().await;
        (task, release)
    }

    /// Lets the other task's call finish, then checks that the nested call
    /// it blocked succeeded, nothing was refused and nothing is held.
    async fn released<E: std::fmt::Debug, T, F: std::fmt::Debug>(
        rt: &Runtime,
        release: &Notify,
        nested: tokio::task::JoinHandle<Result<Nested, E>>,
        other: tokio::task::JoinHandle<Result<T, F>>,
    ) {
        release.notify_one();
        let nested = within(nested).await.unwrap().unwrap();
        assert!(nested.is_ok(), "{nested:?}");
        within(other).await.unwrap().unwrap();
        assert_eq!(rt.stats().would_deadlock, 0);
        assert!(all_free(rt));
    }

    fn busy(err: &Error<Failure<String>>) -> &herta::Busy {
        match err {
            Error::WouldDeadlock { busy, .. } => busy,
            other => panic!("expected WouldDeadlock, got {other:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_same_key_in_the_same_scope_fails_at_t0_with_would_deadlock() {
        let rt = runtime(4);
        let (credit, refund) = (Credit::bind(&rt).unwrap(), Refund::bind(&rt).unwrap());
        let start = Instant::now();
        let nested = within(refund.call(credit, "ada".into())).await.unwrap();
        assert_eq!(
            start.elapsed(),
            Duration::ZERO,
            "refused at once, not after a wait"
        );
        let err = nested.unwrap_err();
        assert_eq!(
            busy(&err),
            &herta::Busy::Key {
                parameter: "customer",
                value: None
            }
        );
        assert_eq!((err.operation(), err.attempts()), ("credit", 0));
        assert_eq!(err.outcome(), herta::Outcome::Permanent);
        let shown = err.to_string();
        assert_eq!(
            shown,
            "operation `credit` would deadlock: its calling chain holds its key `customer`"
        );
        assert!(
            !shown.contains("ada"),
            "no key value without show_key: {shown}"
        );
        let stats = rt.stats();
        assert_eq!((stats.would_deadlock, stats.succeeded), (1, 1));
        assert_eq!(stats.operation("credit").unwrap().would_deadlock, 1);
        assert_eq!(stats.finished, stats.admitted);
        assert!(all_free(&rt));
        assert!(stats.to_string().contains("would deadlock 1"), "{stats}");
    }

    #[tokio::test(start_paused = true)]
    async fn with_show_key_the_refusal_names_the_key_s_value() {
        let rt = runtime(4);
        let credit = ShownCredit::bind(&rt).unwrap();
        let refund = ShownRefund::bind(&rt).unwrap();
        let err = within(refund.call(credit, "ada".into()))
            .await
            .unwrap()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "operation `shown_credit` would deadlock: its calling chain holds its key `customer` = \"ada\""
        );
        assert!(all_free(&rt));
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_held_two_calls_up_the_chain_is_seen_there() {
        let rt = runtime(4);
        let (relay, credit) = (Relay::bind(&rt).unwrap(), Credit::bind(&rt).unwrap());
        let start = Instant::now();
        let relayed = within(Audit::bind(&rt).unwrap().call(relay, credit, "ada".into()))
            .await
            .unwrap();
        assert_eq!(start.elapsed(), Duration::ZERO);
        let nested = relayed.expect("relay ran, and returned the credit's result");
        assert!(matches!(
            busy(&nested.unwrap_err()),
            herta::Busy::Key { .. }
        ));
        assert_eq!(rt.stats().would_deadlock, 1);
        assert!(all_free(&rt));
    }

    #[tokio::test(start_paused = true)]
    async fn units_beyond_what_the_chain_leaves_fail_at_t0_with_would_deadlock() {
        // db = 3; summary holds 2, report needs 2 > 3 - 2.
        let rt = runtime(3);
        let start = Instant::now();
        let nested = within(Summary::bind(&rt).unwrap().call(Report::bind(&rt).unwrap()))
            .await
            .unwrap();
        assert_eq!(start.elapsed(), Duration::ZERO);
        let err = nested.unwrap_err();
        assert_eq!(busy(&err), &herta::Busy::Resource { resource: "db" });
        assert_eq!(
            err.to_string(),
            "operation `report` would deadlock: it needs more units of resource `db` than its \
             capacity leaves beside what its calling chain holds"
        );
        assert_eq!(rt.stats().would_deadlock, 1);
        assert!(all_free(&rt));
    }

    #[tokio::test(start_paused = true)]
    async fn the_chain_s_holdings_add_up_over_every_level() {
        // db = 3; weekly holds 1, digest 1, report needs 2 > 3 - (1 + 1);
        // each of them alone would leave room.
        let rt = runtime(3);
        let (digest, report) = (Digest::bind(&rt).unwrap(), Report::bind(&rt).unwrap());
        let start = Instant::now();
        let nested = within(Weekly::bind(&rt).unwrap().call(digest, report))
            .await
            .unwrap()
            .expect("digest ran, and returned the report's result");
        assert_eq!(start.elapsed(), Duration::ZERO);
        assert_eq!(
            busy(&nested.unwrap_err()),
            &herta::Busy::Resource { resource: "db" }
        );
        assert!(all_free(&rt));
    }

    #[tokio::test(start_paused = true)]
    async fn a_nested_call_others_block_waits_and_succeeds_once_they_release() {
        // db = 3: another task holds 2; digest holds 1 and calls report (2):
        // 2 <= 3 - 1, so report waits for the other task, then runs.
        let rt = runtime(3);
        let occupy = Occupy::bind(&rt).unwrap();
        let (other, release) =
            holding(|held, release| async move { occupy.call(held, release).await }).await;
        let digest = Digest::bind(&rt).unwrap();
        let report = Report::bind(&rt).unwrap();
        let nested = tokio::spawn(async move { digest.call(report).await });
        settle().await;
        assert!(
            !nested.is_finished(),
            "report waits for the other task's units"
        );
        assert_eq!(rt.stats().resource("db").unwrap().waiting, 1);
        released(&rt, &release, nested, other).await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_nested_call_whose_key_an_unrelated_task_holds_waits_normally() {
        let rt = runtime(4);
        let hold = Hold::bind(&rt).unwrap();
        let (other, release) =
            holding(|held, release| async move { hold.call("ada".into(), held, release).await })
                .await;
        // relay holds a key of its own space, and credits "ada", which the
        // other task holds.
        let (relay, credit) = (Relay::bind(&rt).unwrap(), Credit::bind(&rt).unwrap());
        let nested = tokio::spawn(async move { relay.call(credit, "ada".into()).await });
        settle().await;
        assert!(
            !nested.is_finished(),
            "the credit waits for the other task's key"
        );
        released(&rt, &release, nested, other).await;
    }

    #[tokio::test(start_paused = true)]
    async fn siblings_in_one_task_wait_for_each_other_and_are_not_refused() {
        let rt = runtime(4);
        let (held, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let (hold, credit) = (Hold::bind(&rt).unwrap(), Credit::bind(&rt).unwrap());
        // Outside any handler: the first holds "ada" until released, the
        // second queues for it in the same task.
        let (first, second, ()) = within(async {
            tokio::join!(
                hold.call("ada".into(), held.clone(), release.clone()),
                credit.call("ada".into()),
                async {
                    held.notified().await;
                    settle().await;
                    release.notify_one();
                },
            )
        })
        .await;
        assert!(first.is_ok() && second.is_ok(), "{first:?} {second:?}");
        // Inside a handler that holds no key: two calls for the same key,
        // joined; neither is inside the other's handler.
        let both = Both::bind(&rt).unwrap();
        let start = Instant::now();
        let (a, b) = within(both.call(hold, credit, "ada".into())).await.unwrap();
        assert_eq!(
            start.elapsed(),
            Duration::from_millis(1),
            "the credit waited"
        );
        assert!(a.is_ok() && b.is_ok(), "{a:?} {b:?}");
        assert_eq!(rt.stats().would_deadlock, 0);
        assert!(all_free(&rt));
    }

    #[tokio::test(start_paused = true)]
    async fn a_task_spawned_from_a_handler_is_not_in_its_chain() {
        let rt = runtime(4);
        let out = Arc::new(std::sync::Mutex::new(None));
        let spawner = Spawner::bind(&rt).unwrap();
        within(spawner.call(Credit::bind(&rt).unwrap(), "ada".into(), out.clone()))
            .await
            .unwrap();
        // The spawned credit queued for "ada" while the handler held it,
        // and got it once the handler's call ended.
        let task = out.lock().unwrap().take().unwrap();
        within(task).await.unwrap().unwrap();
        assert_eq!(rt.stats().would_deadlock, 0);
        assert!(all_free(&rt));
    }

    #[tokio::test(start_paused = true)]
    async fn the_capacity_at_the_check_decides() {
        // db = 3: report (2) inside summary (2) is refused; at 4 it fits.
        let rt = runtime(3);
        let (summary, report) = (Summary::bind(&rt).unwrap(), Report::bind(&rt).unwrap());
        let refused = within(summary.call(report.clone())).await.unwrap();
        assert!(matches!(refused, Err(Error::WouldDeadlock { .. })));
        rt.set_capacity("db", 4).unwrap();
        let granted = within(summary.call(report)).await.unwrap();
        assert!(granted.is_ok(), "{granted:?}");
        assert!(all_free(&rt));
    }

    /// `credit` with `Reject`: it never queues, so it is throttled as before.
    #[herta::operation(effect = Idempotent, resources("db" = 1), admission = Reject,
                       serialize_by(customer, scope = "customer"))]
    async fn reject_credit(customer: String) -> Result<(), Failure<String>> {
        let _ = customer;
        Ok(())
    }

    #[herta::operation(effect = Idempotent, resources("db" = 1),
                       serialize_by(customer, scope = "customer"))]
    async fn reject_refund(
        credit: RejectCredit,
        customer: String,
    ) -> Result<Nested, Failure<String>> {
        Ok(credit.call(customer).await)
    }

    #[tokio::test(start_paused = true)]
    async fn a_reject_call_never_queues_so_it_is_throttled_as_before() {
        let rt = runtime(4);
        let credit = RejectCredit::bind(&rt).unwrap();
        let nested = within(RejectRefund::bind(&rt).unwrap().call(credit, "ada".into()))
            .await
            .unwrap();
        assert!(matches!(nested, Err(Error::Throttled { .. })), "{nested:?}");
        assert_eq!(rt.stats().would_deadlock, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_refused_call_leaves_its_queue_and_the_key_passes_on() {
        // An unrelated waiter queued behind the refused one still gets the
        // key when the chain's call ends.
        let rt = runtime(4);
        let (tx, rx) = oneshot::channel();
        let credit = Credit::bind(&rt).unwrap();
        let refund = Refund::bind(&rt).unwrap();
        let later = credit.clone();
        let waiter = tokio::spawn(async move {
            rx.await.unwrap();
            later.call("ada".into()).await
        });
        let nested = within(async {
            let call = refund.call(credit, "ada".into());
            tokio::pin!(call);
            // First poll: refund holds "ada", its credit queues and is
            // refused on the next poll; meanwhile the other task queues.
            assert!(crate::common::poll_once(call.as_mut()).is_pending());
            tx.send(()).unwrap();
            settle().await;
            call.await
        })
        .await
        .unwrap();
        assert!(matches!(nested, Err(Error::WouldDeadlock { .. })));
        assert!(within(waiter).await.unwrap().is_ok());
        assert!(all_free(&rt));
    }

    /// 1 unit of `db`; its first attempt shrinks `db` to 2 and fails
    /// `Transient`, so its retry takes its unit back after a 10 ms sleep.
    #[herta::operation(effect = Idempotent, resources("db" = 1),
                       retry(on = Transient, max = 2, backoff(base = "10ms", cap = "10ms", jitter = None)))]
    async fn flaky(ctx: herta::Context, rt: Runtime) -> Result<(), Failure<String>> {
        if ctx.attempt() == 1 {
            rt.set_capacity("db", 2).unwrap();
            return Err(Failure::transient("first".to_owned()));
        }
        Ok(())
    }

    /// Holds 2 units of `db`, then calls `flaky`.
    #[herta::operation(effect = Idempotent, resources("db" = 2))]
    async fn batch(flaky: Flaky, rt: Runtime) -> Result<Nested, Failure<String>> {
        Ok(flaky.call(rt).await)
    }

    #[tokio::test(start_paused = true)]
    async fn a_retry_that_takes_its_units_back_is_checked_too() {
        // db = 3: batch holds 2, flaky's first attempt takes the third and
        // shrinks db to 2; after its sleep, 1 > 2 - 2: refused at once.
        let rt = runtime(3);
        let start = Instant::now();
        let nested = within(
            Batch::bind(&rt)
                .unwrap()
                .call(Flaky::bind(&rt).unwrap(), rt.clone()),
        )
        .await
        .unwrap();
        assert_eq!(
            start.elapsed(),
            Duration::from_millis(10),
            "the sleep, then no wait"
        );
        assert_eq!(
            busy(&nested.unwrap_err()),
            &herta::Busy::Resource { resource: "db" }
        );
        let flaky = rt.stats().operation("flaky").unwrap().clone();
        assert_eq!((flaky.would_deadlock, flaky.started), (1, 1));
        assert!(all_free(&rt));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn on_a_multi_thread_runtime_the_refusal_reaches_the_waiter() {
        let rt = runtime(3);
        for _ in 0..200 {
            let (credit, refund) = (Credit::bind(&rt).unwrap(), Refund::bind(&rt).unwrap());
            let nested = tokio::spawn(async move { refund.call(credit, "ada".into()).await });
            let nested = within(nested).await.unwrap().unwrap();
            assert!(
                matches!(nested, Err(Error::WouldDeadlock { .. })),
                "{nested:?}"
            );
            let (summary, report) = (Summary::bind(&rt).unwrap(), Report::bind(&rt).unwrap());
            let nested = within(tokio::spawn(async move { summary.call(report).await }))
                .await
                .unwrap()
                .unwrap();
            assert!(
                matches!(nested, Err(Error::WouldDeadlock { .. })),
                "{nested:?}"
            );
        }
        assert_eq!(rt.stats().would_deadlock, 400);
        assert!(all_free(&rt));
    }
}
