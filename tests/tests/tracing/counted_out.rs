//! A call is counted out of the runtime (its ending counted, so a drain may
//! end) only once it holds nothing: at every herta event, a runtime whose
//! stats read no call in flight holds no unit and no key. A subscriber is
//! user code that runs inside the call at exactly those points, so it sees
//! what a drain running on another thread at that instant would see.

use std::future::Future;
use std::sync::{Arc, Mutex};

use crate::common::{all_free, quiet_deliberate_panics, DELIBERATE};
use herta::{Failure, Resource, Runtime};
use tokio::sync::Notify;
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

#[herta::operation(effect = Idempotent, resources("a" = 1, "b" = 1), serialize_by = key)]
async fn holds(key: u32, go: Arc<Notify>, panic: bool) -> Result<(), Failure<String>> {
    let _ = key;
    go.notified().await;
    if panic {
        panic!("{DELIBERATE}: the handler panics holding its key and budgets");
    }
    Ok(())
}

/// An event's message.
struct Message(String);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

/// Checks the runtime at every herta event.
struct Check {
    rt: Runtime,
    seen: Arc<Mutex<Vec<String>>>,
}

impl<S: Subscriber> Layer<S> for Check {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() != "herta" {
            return;
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        let s = self.rt.stats();
        let line = format!(
            "{}: in_flight {}, all free {}",
            message.0,
            s.in_flight,
            all_free(&self.rt)
        );
        self.seen.lock().unwrap().push(line);
    }
}

#[test]
fn a_call_is_counted_out_only_once_it_released_its_key_and_budgets() {
    let _serial = crate::serial();
    quiet_deliberate_panics();
    let rt = Runtime::builder()
        .resource(Resource::new("a", 1))
        .resource(Resource::new("b", 1))
        .build()
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let subscriber = tracing_subscriber::registry().with(Check {
        rt: rt.clone(),
        seen: Arc::clone(&seen),
    });
    let tokio_rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let op = Holds::bind(&rt).unwrap();
    tracing::subscriber::with_default(subscriber, || {
        tokio_rt.block_on(async {
            // A handler that panics while holding the key and both budgets.
            let go = Arc::new(Notify::new());
            go.notify_one();
            let panicked = tokio::spawn({
                let op = op.clone();
                async move { op.call(7, go, true).await }
            });
            assert!(panicked.await.unwrap_err().is_panic());
            // A call cancelled while it holds them.
            let go = Arc::new(Notify::new());
            let mut cancelled = Box::pin(op.call(7, Arc::clone(&go), false));
            let noop = &mut std::task::Context::from_waker(std::task::Waker::noop());
            assert!(cancelled.as_mut().poll(noop).is_pending());
            drop(cancelled);
        });
    });
    assert!(all_free(&rt) && rt.stats().in_flight == 0);
    let seen = seen.lock().unwrap();
    assert!(
        seen.iter().any(|l| l.contains("panicked")) && seen.iter().any(|l| l.contains("cancelled")),
        "both endings traced: {seen:#?}"
    );
    for line in seen.iter() {
        assert!(
            !line.contains("in_flight 0, all free false"),
            "counted out while holding a key or a budget: {seen:#?}"
        );
    }
}
