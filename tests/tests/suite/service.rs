//! The `tower` feature: `herta::tower::OperationService` as a
//! `tower::Service<O::Args>`, and the documented mapping of admission onto
//! `poll_ready` / `call`:
//!
//! * `Wait` operations are always ready; calls queue inside the call,
//!   holding nothing, and never exceed the budget;
//! * `Reject` operations are always ready too, and never queue: a call that
//!   finds no room fails at once with `Error::Throttled` (like `LoadShed`);
//! * a closed runtime: `poll_ready` fails with `Error::Stopping`, and so does
//!   a call that skipped it.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use herta::tower::OperationService;
use herta::{Error, Failure, Outcome, Resource, Runtime};
use tokio::sync::Semaphore;
use tower::{Service, ServiceExt};

/// Counts handlers inside now and at most; handlers wait at the gate.
struct Inside {
    now: AtomicU32,
    peak: AtomicU32,
    gate: Semaphore,
}

impl Default for Inside {
    fn default() -> Self {
        Inside {
            now: AtomicU32::new(0),
            peak: AtomicU32::new(0),
            gate: Semaphore::new(0),
        }
    }
}

impl Inside {
    async fn hold(&self) {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        self.gate.acquire().await.unwrap().forget();
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
}

#[herta::operation(effect = Idempotent, resources("render" = 1), retry(on = Transient, max = 2))]
async fn render(job: String, inside: Arc<Inside>) -> Result<String, Failure<String>> {
    inside.hold().await;
    Ok(format!("<h1>{job}</h1>"))
}

#[herta::operation(effect = NonIdempotent, resources("payments" = 1), admission = Reject)]
async fn charge(customer: u64, cents: u64, inside: Arc<Inside>) -> Result<u64, Failure<String>> {
    inside.hold().await;
    Ok(customer * 1_000 + cents)
}

#[herta::operation(effect = NonIdempotent, resources("payments" = 1), admission = Reject)]
async fn lose_reply(_customer: u64) -> Result<u64, Failure<String>> {
    Err(Failure::uncertain("the gateway hung up".to_owned()))
}

fn runtime() -> Runtime {
    Runtime::builder()
        .resource(Resource::new("render", 8))
        .resource(Resource::new("payments", 2))
        .build()
        .unwrap()
}

async fn within<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(10), f)
        .await
        .expect("finished within 10 s")
}

/// Yields until `cond` holds (bounded).
async fn until(mut cond: impl FnMut() -> bool) {
    for _ in 0..100_000 {
        if cond() {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("condition not reached");
}

fn poll_ready<S: Service<R>, R>(svc: &mut S) -> Poll<Result<(), S::Error>> {
    svc.poll_ready(&mut Context::from_waker(std::task::Waker::noop()))
}

#[test]
fn the_service_is_clone_send_sync_and_static() {
    fn assert<T: Clone + Send + Sync + 'static>() {}
    fn assert_future<F: std::future::Future + Send + 'static>(_: &F) {}
    assert::<OperationService<Render>>();
    assert::<OperationService<Charge>>();
    let rt = runtime();
    let mut svc = OperationService::<LoseReply>::bind(&rt).unwrap();
    assert_future(&svc.call((1,)));
    assert!(format!("{svc:?}").contains("lose_reply"));
}

#[test]
fn bind_reports_what_operation_bind_reports() {
    let rt = Runtime::builder()
        .resource(Resource::new("rendr", 1))
        .build()
        .unwrap();
    let err = OperationService::<Render>::bind(&rt).unwrap_err();
    assert!(err.to_string().contains("did you mean `rendr`"), "{err}");
}

#[tokio::test]
async fn a_wait_operation_is_always_ready_and_queues_inside_the_call() {
    let rt = runtime();
    let inside = Arc::new(Inside::default());
    let svc = OperationService::<Render>::bind(&rt).unwrap();

    // 20 requests through `oneshot` (poll_ready, then call) on a budget of 8.
    let mut calls = Vec::new();
    for i in 0..20 {
        let mut svc = svc.clone();
        assert!(matches!(poll_ready(&mut svc), Poll::Ready(Ok(()))));
        let inside = Arc::clone(&inside);
        calls.push(tokio::spawn(svc.oneshot((format!("job-{i}"), inside))));
    }
    until(|| rt.stats().resource("render").unwrap().waiting == 12).await;
    assert_eq!(
        inside.now.load(Ordering::SeqCst),
        8,
        "exactly the budget inside"
    );
    // Ready while the budget is full: the queue is inside the call.
    let mut probe = svc.clone();
    assert!(matches!(poll_ready(&mut probe), Poll::Ready(Ok(()))));

    inside.gate.add_permits(20);
    for (i, call) in calls.into_iter().enumerate() {
        assert_eq!(
            within(call).await.unwrap().unwrap(),
            format!("<h1>job-{i}</h1>")
        );
    }
    assert_eq!(inside.peak.load(Ordering::SeqCst), 8);
    let stats = rt.stats();
    assert_eq!(
        (stats.admitted, stats.finished, stats.throttled),
        (20, 20, 0)
    );
}

#[tokio::test]
async fn a_reject_operation_is_ready_but_sheds_load_with_throttled() {
    let rt = runtime();
    let inside = Arc::new(Inside::default());
    let svc = OperationService::<Charge>::bind(&rt).unwrap();

    // Two charges fill the payments budget (capacity 2, one unit each).
    let held: Vec<_> = (0..2)
        .map(|c| {
            let call = svc.clone().oneshot((c, 100, Arc::clone(&inside)));
            tokio::spawn(call)
        })
        .collect();
    until(|| inside.now.load(Ordering::SeqCst) == 2).await;

    // Still ready (never queues) — and the call fails at once.
    let mut shed = svc.clone();
    for _ in 0..10 {
        let ready = within(shed.ready()).await;
        assert!(ready.is_ok());
        let err = within(shed.call((9, 1, Arc::clone(&inside))))
            .await
            .unwrap_err();
        match &err {
            Error::Throttled {
                operation, busy, ..
            } => {
                assert_eq!(*operation, "charge");
                assert!(busy.to_string().contains("payments"), "{busy}");
            }
            other => panic!("expected Throttled, got {other:?}"),
        }
        assert_eq!(err.outcome(), Outcome::Throttled);
    }
    assert_eq!(
        rt.stats().resource("payments").unwrap().waiting,
        0,
        "nothing queued"
    );

    inside.gate.add_permits(2);
    for (c, call) in held.into_iter().enumerate() {
        assert_eq!(within(call).await.unwrap().unwrap(), c as u64 * 1_000 + 100);
    }
    assert_eq!(inside.peak.load(Ordering::SeqCst), 2);
    assert_eq!(rt.stats().throttled, 10);
}

#[tokio::test]
async fn handler_errors_come_back_as_herta_errors() {
    let rt = runtime();
    let err = OperationService::<LoseReply>::bind(&rt)
        .unwrap()
        .oneshot((1,))
        .await
        .unwrap_err();
    assert_eq!(err.outcome(), Outcome::Uncertain);
    assert_eq!(err.attempts(), 1);
    assert_eq!(
        err.into_handler_error().unwrap().error(),
        "the gateway hung up"
    );
}

#[tokio::test]
async fn a_closed_runtime_is_never_ready_again() {
    let rt = runtime();
    let inside = Arc::new(Inside::default());
    let mut svc = OperationService::<Render>::bind(&rt).unwrap();
    let mut charge = OperationService::<Charge>::bind(&rt).unwrap();

    // A running call, and one that skipped poll_ready, when the runtime closes.
    let running = tokio::spawn(svc.clone().oneshot(("a".to_owned(), Arc::clone(&inside))));
    until(|| inside.now.load(Ordering::SeqCst) == 1).await;
    rt.close();

    for ready in [poll_ready(&mut svc), poll_ready(&mut charge)] {
        match ready {
            Poll::Ready(Err(Error::Stopping { .. })) => {}
            other => panic!("expected Ready(Err(Stopping)), got {other:?}"),
        }
    }
    let err = within(svc.ready()).await.unwrap_err();
    assert!(matches!(
        err,
        Error::Stopping {
            operation: "render"
        }
    ));
    let err = within(svc.call(("b".to_owned(), Arc::clone(&inside))))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Stopping { .. }));

    // The running call drains normally.
    inside.gate.add_permits(1);
    assert_eq!(within(running).await.unwrap().unwrap(), "<h1>a</h1>");
    within(rt.shutdown()).await;
    let stats = rt.stats();
    assert_eq!(
        stats.refused_stopping + stats.stopped_waiting,
        1,
        "only the call that reached the runtime is counted"
    );
    assert_eq!(stats.admitted, stats.finished);
}

#[tokio::test]
async fn dropping_the_future_cancels_the_call_and_releases_its_budget() {
    let rt = runtime();
    let inside = Arc::new(Inside::default());
    let svc = OperationService::<Charge>::bind(&rt).unwrap();
    let call = tokio::spawn(svc.clone().oneshot((1, 1, Arc::clone(&inside))));
    until(|| inside.now.load(Ordering::SeqCst) == 1).await;
    assert_eq!(rt.stats().resource("payments").unwrap().in_use, 1);
    call.abort();
    assert!(within(call).await.unwrap_err().is_cancelled());
    assert_eq!(rt.stats().resource("payments").unwrap().in_use, 0);
    assert_eq!(rt.stats().cancelled, 1);
}

#[tokio::test]
async fn it_composes_with_tower_middleware() {
    let rt = runtime();
    let inside = Arc::new(Inside::default());
    inside.gate.add_permits(3);
    // A plain `String -> String` service, boxed and cloneable.
    let svc = OperationService::<Render>::bind(&rt)
        .unwrap()
        .map_request(move |job: String| (job, Arc::clone(&inside)))
        .map_err(|e: Error<Failure<String>>| e.to_string())
        .boxed_clone();
    for job in ["a", "b", "c"] {
        let page = within(svc.clone().oneshot(job.to_owned())).await.unwrap();
        assert_eq!(page, format!("<h1>{job}</h1>"));
    }
}
