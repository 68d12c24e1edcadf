//! Live capacity: `Runtime::set_capacity` and `Runtime::set_queue_limit`
//! while calls run. Growing grants queued calls at once, in queue order;
//! shrinking revokes nothing and grants nothing until `in_use + units <=
//! capacity`; every release is credited against the budget as it is then,
//! so a flap leaves exact accounting; a shrink below a bound operation's
//! need is refused and changes nothing; a new queue limit applies to the
//! next waiter. Paused clock, except the multi-thread test at the end.

use crate::common;

use std::sync::{Arc, Mutex};

use common::{all_free, settle, within, Probe};
use herta::{BindError, Busy, Error, Failure, ResizeError, Resource, Runtime};

/// Handlers log their id as they enter, then hold until the probe lets
/// them out.
#[derive(Default)]
struct Log(Mutex<Vec<u32>>);

impl Log {
    fn take(&self) -> Vec<u32> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

#[herta::operation(effect = Idempotent, resources("pool" = 1))]
async fn one(probe: Arc<Probe>, log: Arc<Log>, id: u32) -> Result<(), Failure<String>> {
    log.0.lock().unwrap().push(id);
    probe.hold().await;
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("pool" = 2))]
async fn two(probe: Arc<Probe>, log: Arc<Log>, id: u32) -> Result<(), Failure<String>> {
    log.0.lock().unwrap().push(id);
    probe.hold().await;
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("pool" = 6))]
async fn six() -> Result<(), Failure<String>> {
    Ok(())
}

type Call = tokio::task::JoinHandle<Result<(), Error<Failure<String>>>>;

struct Fixture {
    rt: Runtime,
    probe: Arc<Probe>,
    log: Arc<Log>,
}

impl Fixture {
    fn new(capacity: u32) -> Self {
        let rt = Runtime::builder()
            .resource(Resource::new("pool", capacity))
            .build()
            .unwrap();
        Fixture {
            rt,
            probe: Probe::new(),
            log: Arc::default(),
        }
    }

    /// Spawns a call of `units` (1 or 2) logging `id`, and lets it run
    /// until it holds or queues.
    async fn spawn(&self, units: u32, id: u32) -> Call {
        let (probe, log) = (self.probe.clone(), self.log.clone());
        let call: Call = match units {
            1 => {
                let op = One::bind(&self.rt).unwrap();
                tokio::spawn(async move { op.call(probe, log, id).await })
            }
            _ => {
                let op = Two::bind(&self.rt).unwrap();
                tokio::spawn(async move { op.call(probe, log, id).await })
            }
        };
        settle().await;
        call
    }

    fn pool(&self) -> herta::ResourceStats {
        *self.rt.stats().resource("pool").unwrap()
    }

    /// (capacity, in use, waiting).
    fn figures(&self) -> (u32, u32, u32) {
        let p = self.pool();
        (p.capacity, p.in_use, p.waiting)
    }

    /// Lets every held handler out and waits for `calls` to end.
    async fn finish(&self, calls: Vec<Call>) {
        self.probe.open(calls.len());
        for c in calls {
            within(c).await.unwrap().unwrap();
        }
        assert!(all_free(&self.rt));
    }
}

#[tokio::test(start_paused = true)]
async fn growing_grants_waiters_at_once_in_queue_order() {
    let f = Fixture::new(1);
    let mut calls = vec![f.spawn(1, 0).await];
    for id in 1..=3 {
        calls.push(f.spawn(1, id).await);
    }
    assert_eq!(f.log.take(), [0]);
    assert_eq!(f.figures(), (1, 1, 3));
    for (capacity, next) in [(2, 1), (3, 2), (4, 3)] {
        f.rt.set_capacity("pool", capacity).unwrap();
        settle().await;
        assert_eq!(f.log.take(), [next], "growing to {capacity}");
        assert_eq!(f.figures(), (capacity, capacity, 3 - next));
    }
    f.finish(calls).await;
}

/// A 2-unit waiter queued ahead of 1-unit ones keeps its turn: a growth
/// that frees one unit lets none of them pass it.
#[tokio::test(start_paused = true)]
async fn a_larger_waiter_ahead_keeps_its_turn_when_capacity_grows() {
    let f = Fixture::new(2);
    let mut calls = vec![f.spawn(2, 0).await];
    calls.push(f.spawn(2, 1).await);
    calls.push(f.spawn(1, 2).await);
    calls.push(f.spawn(1, 3).await);
    assert_eq!(f.log.take(), [0]);
    f.rt.set_capacity("pool", 3).unwrap();
    settle().await;
    assert_eq!(f.log.take(), [] as [u32; 0], "one free unit: nobody passes");
    assert_eq!(f.figures(), (3, 2, 3));
    f.rt.set_capacity("pool", 6).unwrap();
    settle().await;
    assert_eq!(f.log.take(), [1, 2, 3], "granted in queue order at once");
    assert_eq!(f.figures(), (6, 6, 0));
    f.finish(calls).await;
}

#[tokio::test(start_paused = true)]
async fn shrinking_under_load_revokes_nothing_and_grants_nothing_until_the_bound_holds() {
    let f = Fixture::new(4);
    let mut calls = Vec::new();
    for id in 0..4 {
        calls.push(f.spawn(1, id).await);
    }
    for id in 4..7 {
        calls.push(f.spawn(1, id).await);
    }
    assert_eq!(f.log.take(), [0, 1, 2, 3]);
    f.rt.set_capacity("pool", 2).unwrap();
    settle().await;
    assert_eq!(f.figures(), (2, 4, 3), "nothing revoked");
    assert_eq!(f.probe.inside(), 4);
    // Releases down to 2 in use: still no room for one more.
    for in_use in [3, 2] {
        f.probe.open(1);
        settle().await;
        assert_eq!(f.figures(), (2, in_use, 3));
        assert_eq!(f.log.take(), [] as [u32; 0]);
    }
    // 1 in use: one waiter fits, the first.
    f.probe.open(1);
    settle().await;
    assert_eq!(f.log.take(), [4]);
    assert_eq!(f.figures(), (2, 2, 2));
    assert_eq!(f.probe.peak(), 4, "held before the shrink, never more");
    f.finish(calls).await;
    assert_eq!(f.probe.inside(), 0);
}

/// After any flap under load, once every call has ended, a burst reaches
/// exactly the final capacity: no unit leaked or was created.
#[tokio::test(start_paused = true)]
async fn a_grow_and_shrink_flap_under_load_leaves_exact_accounting() {
    let f = Fixture::new(4);
    let mut calls = Vec::new();
    for id in 0..12 {
        calls.push(f.spawn(1 + id % 2, id).await);
    }
    for (capacity, released) in [(2, 1), (9, 0), (3, 2), (2, 0), (7, 1), (2, 3), (5, 0)] {
        let (_, in_use, _) = f.figures();
        f.rt.set_capacity("pool", capacity).unwrap();
        settle().await;
        let (cap, now, _) = f.figures();
        assert_eq!(cap, capacity);
        assert!(now <= in_use.max(capacity), "{now} in use at {capacity}");
        f.probe.open(released);
        settle().await;
    }
    f.rt.set_capacity("pool", 3).unwrap();
    f.finish(calls).await;
    assert_eq!(f.figures(), (3, 0, 0));
    // The burst: 10 one-unit calls, exactly 3 inside.
    let probe = Probe::new();
    let f = Fixture { probe, ..f };
    let mut burst = Vec::new();
    for id in 100..110 {
        burst.push(f.spawn(1, id).await);
    }
    assert_eq!(f.figures(), (3, 3, 7));
    assert_eq!((f.probe.inside(), f.probe.peak()), (3, 3));
    f.finish(burst).await;
    assert_eq!(f.probe.peak(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_shrink_below_a_bound_need_is_refused_and_changes_nothing() {
    let f = Fixture::new(4);
    let mut calls = vec![f.spawn(2, 0).await, f.spawn(2, 1).await];
    calls.push(f.spawn(1, 2).await);
    let before = f.figures();
    assert_eq!(before, (4, 4, 1));
    let err = f.rt.set_capacity("pool", 1).unwrap_err();
    assert_eq!(
        err,
        ResizeError::BelowNeed {
            resource: "pool",
            capacity: 1,
            operation: "two",
            units: 2
        }
    );
    assert_eq!(
        err.to_string(),
        "cannot set the capacity of resource `pool` to 1: operation `two` needs 2 units \
         of it per call; keep the capacity at 2 or more"
    );
    assert_eq!(f.figures(), before, "nothing changed");
    // The queued call is granted as before, by the next release.
    f.probe.open(1);
    settle().await;
    assert_eq!(f.log.take(), [0, 1, 2]);
    // 2 is allowed: the largest need.
    f.rt.set_capacity("pool", 2).unwrap();
    f.finish(calls).await;
    assert_eq!(f.figures(), (2, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn binding_checks_the_capacity_now_and_registers_the_need() {
    let f = Fixture::new(4);
    assert_eq!(
        Six::bind(&f.rt).unwrap_err(),
        BindError::UnitsAboveCapacity {
            operation: "six",
            resource: "pool",
            units: 6,
            capacity: 4
        }
    );
    f.rt.set_capacity("pool", 8).unwrap();
    let six = Six::bind(&f.rt).unwrap();
    within(six.call()).await.unwrap();
    assert!(matches!(
        f.rt.set_capacity("pool", 5),
        Err(ResizeError::BelowNeed {
            operation: "six",
            units: 6,
            ..
        })
    ));
    assert_eq!(f.figures(), (8, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_new_queue_limit_applies_to_the_next_waiter_and_evicts_nobody() {
    let f = Fixture::new(1);
    let mut calls = vec![f.spawn(1, 0).await];
    calls.push(f.spawn(1, 1).await);
    calls.push(f.spawn(1, 2).await);
    f.rt.set_queue_limit("pool", Some(1)).unwrap();
    assert_eq!(f.pool().queue_limit, Some(1));
    assert_eq!(f.figures(), (1, 1, 2), "no queued call evicted");
    let refused = f.spawn(1, 3).await;
    match within(refused).await.unwrap() {
        Err(Error::Throttled { busy, .. }) => assert_eq!(busy, Busy::Resource { resource: "pool" }),
        other => panic!("expected Throttled, got {other:?}"),
    }
    f.rt.set_queue_limit("pool", None).unwrap();
    assert_eq!(f.pool().queue_limit, None);
    calls.push(f.spawn(1, 4).await);
    assert_eq!(f.figures(), (1, 1, 3), "the next waiter queues");
    assert_eq!(
        f.rt.set_queue_limit("pool", Some(0)).unwrap_err(),
        ResizeError::ZeroQueueLimit { resource: "pool" }
    );
    assert_eq!(f.pool().queue_limit, None);
    f.finish(calls).await;
    assert_eq!(f.log.take(), [0, 1, 2, 4]);
}

#[test]
fn an_unknown_name_or_a_zero_capacity_is_refused() {
    let rt = Runtime::builder()
        .resource(Resource::new("db-write", 4))
        .build()
        .unwrap();
    let err = rt.set_capacity("db-wirte", 8).unwrap_err();
    assert_eq!(
        err,
        ResizeError::UnknownResource {
            resource: "db-wirte".into(),
            suggestion: Some("db-write".into())
        }
    );
    assert_eq!(
        err.to_string(),
        "resource `db-wirte` is not declared by this runtime; did you mean `db-write`?"
    );
    let err = rt.set_queue_limit("render", Some(4)).unwrap_err();
    assert!(matches!(
        err,
        ResizeError::UnknownResource {
            suggestion: None,
            ..
        }
    ));
    assert!(err.to_string().contains("Runtime::builder().resource(..)"));
    assert_eq!(
        rt.set_capacity("db-write", 0).unwrap_err(),
        ResizeError::ZeroCapacity {
            resource: "db-write"
        }
    );
    let stats = rt.stats();
    let db = stats.resource("db-write").unwrap();
    assert_eq!((db.capacity, db.queue_limit), (4, None), "nothing changed");
}

/// Units inside the real-time test's handlers, measured by the handlers
/// under one lock, per window between two of the resizer's checks.
#[derive(Default)]
struct Window(Mutex<Units>);

#[derive(Default)]
struct Units {
    inside: u32,
    peak: u32,
    entries: u32,
}

impl Window {
    async fn occupy(&self, units: u32) {
        {
            let mut w = self.0.lock().unwrap();
            w.inside += units;
            w.peak = w.peak.max(w.inside);
            w.entries += 1;
        }
        tokio::task::yield_now().await;
        self.0.lock().unwrap().inside -= units;
    }

    /// Starts a new window: its peak is what is inside now.
    fn reset(&self) {
        let mut w = self.0.lock().unwrap();
        (w.peak, w.entries) = (w.inside, 0);
    }

    fn peak(&self) -> u32 {
        self.0.lock().unwrap().peak
    }

    fn entries(&self) -> u32 {
        self.0.lock().unwrap().entries
    }
}

#[herta::operation(effect = Idempotent, resources("pool" = 1))]
async fn small(window: Arc<Window>) -> Result<(), Failure<String>> {
    window.occupy(1).await;
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("pool" = 2))]
async fn large(window: Arc<Window>) -> Result<(), Failure<String>> {
    window.occupy(2).await;
    Ok(())
}

/// Yields until `cond` holds (real time: each check is a scheduler turn,
/// the condition is what synchronises, not a duration).
async fn spin_until(mut cond: impl FnMut() -> bool) {
    within(async {
        while !cond() {
            tokio::task::yield_now().await;
        }
    })
    .await;
}

/// 64 callers (1- and 2-unit calls) while the capacity changes 100 times
/// on a multi-thread runtime. Each window runs from before a change until
/// the budget has absorbed it (`in_use <= capacity`), so the units inside
/// handlers never exceed the larger of the capacities around the change;
/// after the last change, never the final capacity; and once every caller
/// stopped, a burst reaches exactly the final capacity.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_callers_while_the_capacity_changes_a_hundred_times() {
    let rt = Runtime::builder()
        .resource(Resource::new("pool", 4))
        .build()
        .unwrap();
    let window = Arc::new(Window::default());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (small, large) = (Small::bind(&rt).unwrap(), Large::bind(&rt).unwrap());
    let callers: Vec<_> = (0..64)
        .map(|i| {
            let (small, large) = (small.clone(), large.clone());
            let (window, stop) = (window.clone(), stop.clone());
            tokio::spawn(async move {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    if i % 4 == 0 {
                        large.call(window.clone()).await.unwrap();
                    } else {
                        small.call(window.clone()).await.unwrap();
                    }
                }
            })
        })
        .collect();
    let in_use = || rt.stats().resource("pool").unwrap().in_use;
    let (mut capacity, mut seed) = (4u32, 0x2545_f491_4f6c_dd1d_u64);
    for change in 0..100 {
        // A fixed pseudo-random walk over 2..=12 (2: the larger need).
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let next = 2 + (seed % 11) as u32;
        window.reset();
        rt.set_capacity("pool", next).unwrap();
        spin_until(|| window.entries() >= 4 && in_use() <= next).await;
        let bound = capacity.max(next);
        assert!(
            window.peak() <= bound,
            "change {change}: {} units inside, {capacity} -> {next}",
            window.peak()
        );
        capacity = next;
    }
    window.reset();
    spin_until(|| window.entries() >= 64).await;
    assert!(window.peak() <= capacity, "after the last change");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for c in callers {
        within(c).await.unwrap();
    }
    assert!(all_free(&rt));
    let stats = rt.stats();
    let pool = stats.resource("pool").unwrap();
    assert_eq!(pool.capacity, capacity);
    assert!(pool.peak_in_use <= 12);
    // The burst: one more call than units, each held until let out.
    let f = Fixture {
        rt,
        probe: Probe::new(),
        log: Arc::default(),
    };
    let burst: Vec<Call> = (0..=capacity)
        .map(|id| {
            let (op, probe, log) = (One::bind(&f.rt).unwrap(), f.probe.clone(), f.log.clone());
            tokio::spawn(async move { op.call(probe, log, id).await })
        })
        .collect();
    f.probe.entered(capacity).await;
    spin_until(|| f.figures() == (capacity, capacity, 1)).await;
    assert_eq!(f.probe.inside(), capacity);
    f.finish(burst).await;
    assert_eq!(f.probe.peak(), capacity);
}
