herta::breakers! {
    pub NO_PROBES: "no-probes" = breaker(probes = 0);
    pub NO_CALLS: "no-calls" = breaker(min_calls = 0);
}

fn main() {
    let _ = (NO_PROBES, NO_CALLS);
}
