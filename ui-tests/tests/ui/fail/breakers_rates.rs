herta::breakers! {
    pub NONE: "none" = breaker(failure_rate = 0);
    pub ABOVE: "above" = breaker(failure_rate = 101);
    pub SLOW: "slow" = breaker(slow_call = "2s", slow_rate = 150);
    pub UNANCHORED: "unanchored" = breaker(slow_rate = 80);
}

fn main() {
    let _ = (NONE, ABOVE, SLOW, UNANCHORED);
}
