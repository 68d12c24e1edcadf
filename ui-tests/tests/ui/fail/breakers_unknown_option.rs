herta::breakers! {
    pub PAYMENTS: "payments" = breaker(failure_rte = 50, min_calls = 10);
    pub SEARCH: "search" = breaker(probes = 2, cooldown = "30s");
}

fn main() {
    let _ = (PAYMENTS, SEARCH);
}
