use std::time::Duration;

use herta::{Breaker, BreakerWindow, Failure, Runtime};

herta::breakers! {
    /// The payments provider.
    pub PAYMENTS: "payments" = breaker(failure_rate = 50, min_calls = 10, window = "10s",
                                       open_for = "30s", probes = 2);
    pub(crate) SEARCH: "search" = breaker(slow_call = "2s", slow_rate = 80);
    DEFAULTS: "defaults" = breaker();
    /// The last 100 attempts, whenever they ended.
    pub LAST_100: "last-100" = breaker(window = 100, min_calls = 20);
}

#[herta::operation(effect = NonIdempotent, breaker = PAYMENTS)]
async fn charge(amount: u64) -> Result<u64, Failure<String>> {
    Ok(amount)
}

#[herta::operation(effect = Pure, breaker = "search", retry(on = Transient, max = 3))]
async fn search(query: String) -> Result<String, Failure<String>> {
    Ok(query)
}

#[herta::contract(effect = Idempotent, breaker = PAYMENTS)]
pub struct CallPayments;

fn main() {
    assert_eq!(PAYMENTS.probes(), 2);
    assert_eq!(SEARCH.slow_call(), Some((Duration::from_secs(2), 80)));
    assert_eq!(DEFAULTS, Breaker::new("defaults"));
    assert_eq!(LAST_100.window(), BreakerWindow::Count(100));
    assert_eq!(PAYMENTS.window(), BreakerWindow::Time(Duration::from_secs(10)));
    assert_eq!(Charge::CONTRACT.breaker(), Some("payments"));
    assert_eq!(Search::CONTRACT.breaker(), Some("search"));
    assert_eq!(CallPayments::CONTRACT.breaker(), Some("payments"));
    let rt = Runtime::builder()
        .resource(herta::Resource::new("worker", 1))
        .breaker(PAYMENTS)
        .breaker(SEARCH)
        .breaker(LAST_100)
        .build()
        .unwrap();
    let _ = (Charge::bind(&rt).unwrap(), Search::bind(&rt).unwrap());
}
