//! Stats count what happened (DESIGN §3: Stats).

use crate::common;

use std::sync::Arc;

use common::{all_free, within, Probe};
use herta::{Failure, Resource, Runtime};

#[herta::operation(effect = Idempotent, resources("slots" = 1), admission = Reject,
                   retry(on = Transient, max = 2))]
async fn job(probe: Arc<Probe>, fail: bool) -> Result<(), Failure<String>> {
    probe.hold().await;
    if fail {
        return Err(Failure::transient("flaky".to_owned()));
    }
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn stats_count_each_way_a_call_can_end() {
    let rt = Runtime::builder()
        .resource(Resource::new("slots", 1))
        .build()
        .unwrap();
    let op = Job::bind(&rt).unwrap();
    let probe = Probe::new();

    // 1 success.
    probe.open(1);
    op.call(probe.clone(), false).await.unwrap();
    // 1 failure after a retry (2 attempts).
    probe.open(2);
    op.call(probe.clone(), true).await.unwrap_err();
    // 1 throttled while another call holds the slot, then that one is cancelled.
    let holder = tokio::spawn({
        let (op, probe) = (op.clone(), probe.clone());
        async move { op.call(probe, false).await }
    });
    probe.entered(4).await;
    within(op.call(probe.clone(), false)).await.unwrap_err();
    holder.abort();
    assert!(within(holder).await.unwrap_err().is_cancelled());
    // 1 refused at the gate.
    rt.shutdown().await;
    within(op.call(probe.clone(), false)).await.unwrap_err();

    let s = rt.stats();
    assert_eq!(s.admitted, 4);
    assert_eq!(s.finished, 4);
    assert_eq!(s.started, 3);
    assert_eq!(s.retried, 1);
    assert_eq!(s.throttled, 1);
    assert_eq!(s.cancelled, 1);
    assert_eq!(s.refused_stopping, 1);
    assert_eq!(s.stopped_waiting, 0);
    assert_eq!((s.succeeded, s.failed), (1, 1));
    assert_eq!(
        s.finished,
        s.succeeded + s.failed + s.throttled + s.stopped_waiting + s.cancelled + s.panicked
    );
    assert_eq!(s.panicked, 0);
    assert_eq!(s.timed_out, 0);
    assert_eq!(s.in_flight, 0);
    let slots = s.resource("slots").unwrap();
    assert_eq!((slots.capacity, slots.peak_in_use), (1, 1));
    assert!(all_free(&rt));
}

#[herta::operation(effect = Pure, resources("slots" = 1), name = "lookup")]
async fn find(x: u32) -> Result<u32, Failure<String>> {
    if x == 0 {
        return Err(Failure::permanent("zero".to_owned()));
    }
    Ok(x)
}

#[tokio::test(start_paused = true)]
async fn stats_are_kept_per_operation_by_name_and_sum_to_the_runtime_wide_ones() {
    let rt = Runtime::builder()
        .resource(Resource::new("slots", 1).with_queue_limit(8))
        .build()
        .unwrap();
    let job = Job::bind(&rt).unwrap();
    // Two bindings of one operation (and a clone) count under its name.
    let (lookup, again) = (Find::bind(&rt).unwrap(), Find::bind(&rt).unwrap());
    let probe = Probe::new();
    probe.open(3);
    job.call(probe.clone(), false).await.unwrap();
    job.call(probe.clone(), true).await.unwrap_err();
    lookup.call(1).await.unwrap();
    again.clone().call(0).await.unwrap_err();
    drop(again);
    // A binding made after one was dropped goes on counting under the name.
    Find::bind(&rt).unwrap().call(2).await.unwrap();

    let s = rt.stats();
    let names: Vec<_> = s.operations.iter().map(|o| o.name).collect();
    assert_eq!(names, ["job", "lookup"]);
    let j = s.operation("job").unwrap();
    assert_eq!((j.admitted, j.finished, j.started, j.retried), (2, 2, 2, 1));
    assert_eq!((j.succeeded, j.failed), (1, 1));
    let l = s.operation("lookup").unwrap();
    assert_eq!((l.admitted, l.finished, l.started, l.retried), (3, 3, 3, 0));
    assert_eq!((l.succeeded, l.failed), (2, 1));
    assert_eq!(s.admitted, j.admitted + l.admitted);
    assert_eq!(s.succeeded, j.succeeded + l.succeeded);
    assert_eq!(s.retried, j.retried + l.retried);
    assert_eq!(s.finished, j.finished + l.finished);
    assert_eq!(s.resource("slots").unwrap().queue_limit, Some(8));
    assert!(s.operation("render").is_none());

    // Readable, and pinned.
    assert_eq!(
        s.to_string(),
        "calls: admitted 5, refused (stopping) 0, in flight 0, keys 0\n\
         ended: succeeded 3, failed 2, throttled 0, stopped waiting 0, cancelled 0, panicked 0, \
         deadline exceeded 0, would deadlock 0\n\
         attempts: 6 (first 5, retried 1), timed out 0, retries denied 0\n\
         slots: 0 of 1 in use, 0 waiting, peak 1, queue limit 8\n\
         operations:\n  \
         job: admitted 2, finished 2, succeeded 1, failed 1, started 2, retried 1\n  \
         lookup: admitted 3, finished 3, succeeded 2, failed 1, started 3"
    );
}

/// Binding per call does not grow the runtime's registry: a dropped
/// binding's counters are taken by the next binding of the same name.
#[tokio::test(start_paused = true)]
async fn binding_per_call_reuses_the_dropped_bindings_counters() {
    let rt = Runtime::builder()
        .resource(Resource::new("slots", 1))
        .build()
        .unwrap();
    for i in 1..=1000 {
        Find::bind(&rt).unwrap().call(i).await.unwrap();
    }
    let s = rt.stats();
    assert_eq!(s.operations.len(), 1);
    assert_eq!(s.operation("lookup").unwrap().succeeded, 1000);
}

/// A rate budget's line says what its bucket holds now, of its burst, and
/// what it granted: its units are consumed, never "in use".
#[tokio::test(start_paused = true)]
async fn a_rate_budget_s_line_shows_its_bucket_and_rate() {
    #[herta::operation(effect = Pure, resources("api" = 2))]
    async fn fetch() -> Result<(), Failure<String>> {
        Ok(())
    }
    let api = Resource::rate("api", 5, std::time::Duration::from_secs(1)).unwrap();
    let rt = Runtime::builder().resource(api).build().unwrap();
    let line = |rt: &Runtime| rt.stats().to_string().lines().nth(3).unwrap().to_owned();
    assert_eq!(
        line(&rt),
        "api: 5 of 5 available (5 per 1s), 0 waiting, granted 0"
    );
    Fetch::bind(&rt).unwrap().call().await.unwrap();
    assert_eq!(
        line(&rt),
        "api: 3 of 5 available (5 per 1s), 0 waiting, granted 2"
    );
}
