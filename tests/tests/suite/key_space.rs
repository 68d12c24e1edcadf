//! Key space (RELIABILITY.md §4, DESIGN §3 Keys): a million distinct keys
//! through one keyed operation leave the key map empty, and memory does not
//! grow with the number of keys ever used.
//!
//! 256 callers run at once, each through its own run of keys, on a budget of
//! 64: up to 256 keys are held or queued at a time (a key is taken before
//! the budget), the handler yields once so calls interleave, and every
//! 10 000 calls the test samples `stats().keys`. Keys are `String`s, so a
//! leaked entry would leak heap memory too.
//!
//! Checks: the key map is back to 0 entries; it never held more keys than
//! there were callers; resident memory after the last key is within 16 MiB
//! of what it was after the first 10 % (a leak of even 16 bytes per key
//! would be 14 MiB over 900 000 keys); and the peak (`VmHWM`) is printed for
//! RELIABILITY.md.
//!
//! Then a burst: `HERTA_KEY_BURST` (default 10 000) calls with distinct
//! keys are started at once, so that nearly all of their keys are held or
//! queued together, and drained: the key map is back to 0 entries.
//!
//! `HERTA_KEYS` sets the number of keys (default 1 000 000).

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use common::{env_count, proc_status_kib};
use herta::{Failure, Resource, Runtime};

const CALLERS: u64 = 256;

#[herta::operation(effect = Idempotent, resources("slots" = 1), serialize_by = customer)]
async fn touch(customer: String) -> Result<usize, Failure<String>> {
    tokio::task::yield_now().await;
    Ok(customer.len())
}

#[test]
fn a_million_distinct_keys_leave_the_key_map_empty() {
    let keys = env_count("HERTA_KEYS", 1_000_000);
    let tokio_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio_rt.block_on(async {
        let rt = Runtime::builder()
            .resource(Resource::new("slots", 64))
            .build()
            .unwrap();
        let op = Touch::bind(&rt).unwrap();
        let hwm_start = proc_status_kib("VmHWM");
        let done = Arc::new(AtomicUsize::new(0));
        let peak_keys = Arc::new(AtomicUsize::new(0));
        let rss_at_tenth = Arc::new(AtomicUsize::new(0));
        let started = Instant::now();
        let callers: Vec<_> = (0..CALLERS)
            .map(|c| {
                let (op, rt, done) = (op.clone(), rt.clone(), done.clone());
                let (peak_keys, rss_at_tenth) = (peak_keys.clone(), rss_at_tenth.clone());
                tokio::spawn(async move {
                    let mut i = c;
                    while i < keys {
                        let key = format!("customer-{i:09}");
                        op.call(key).await.expect("no call fails");
                        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                        if n % 10_000 == 0 {
                            peak_keys.fetch_max(rt.stats().keys, Ordering::Relaxed);
                        }
                        if n as u64 == keys / 10 {
                            let rss = proc_status_kib("VmRSS").unwrap_or(0);
                            rss_at_tenth.store(rss as usize, Ordering::Relaxed);
                        }
                        i += CALLERS;
                    }
                })
            })
            .collect();
        for c in callers {
            c.await.unwrap();
        }
        let elapsed = started.elapsed();
        let s = rt.stats();
        assert_eq!(done.load(Ordering::Relaxed) as u64, keys);
        assert_eq!(s.keys, 0, "every key entry is gone after {keys} keys: {s}");
        assert_eq!((s.admitted, s.finished), (keys, keys));
        let peak = peak_keys.load(Ordering::Relaxed);
        assert!(
            peak as u64 <= CALLERS,
            "at most one entry per caller at once, saw {peak}"
        );
        let rss_end = proc_status_kib("VmRSS");
        let rss_tenth = rss_at_tenth.load(Ordering::Relaxed) as u64;
        println!(
            "key space: {keys} distinct keys through one operation in {elapsed:.2?}; \
             key map entries now {}, sampled peak {peak}; \
             VmHWM {:?} KiB at start, {:?} KiB at end; VmRSS {rss_tenth} KiB after 10 %, {:?} KiB at end",
            s.keys,
            hwm_start,
            proc_status_kib("VmHWM"),
            rss_end,
        );
        if let (Some(end), true) = (rss_end, rss_tenth > 0 && keys >= 100_000) {
            assert!(
                end <= rss_tenth + 16 * 1024,
                "resident memory grew from {rss_tenth} KiB to {end} KiB over the last 90 % of keys"
            );
        }

        // A burst: every key held or queued at once, then drained.
        let burst = env_count("HERTA_KEY_BURST", 10_000);
        let started = Instant::now();
        let calls: Vec<_> = (0..burst)
            .map(|i| {
                let op = op.clone();
                tokio::spawn(async move { op.call(format!("burst-{i:09}")).await })
            })
            .collect();
        // Let every call take its key; most then queue for the budget.
        while (rt.stats().admitted - keys) < burst {
            tokio::task::yield_now().await;
        }
        let held = rt.stats().keys;
        let hwm_burst = proc_status_kib("VmHWM");
        for c in calls {
            c.await.unwrap().expect("no call fails");
        }
        let s = rt.stats();
        assert_eq!(s.keys, 0, "every burst key entry is gone: {s}");
        assert!(held as u64 > burst / 2, "the burst held {held} keys at once");
        println!(
            "key burst: {burst} keys, {held} held or queued at once, drained in {:.2?}; \
             key map entries now {}; VmHWM {:?} KiB, VmRSS after drain {:?} KiB",
            started.elapsed(),
            s.keys,
            hwm_burst,
            proc_status_kib("VmRSS"),
        );
        rt.shutdown().await;
    });
}
