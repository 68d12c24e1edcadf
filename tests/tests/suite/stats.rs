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
