herta::breakers! {
    pub EMPTY: "empty" = breaker(window = 0, min_calls = 1);
    pub HUGE: "huge" = breaker(window = 1000000);
}

fn main() {
    let _ = (EMPTY, HUGE);
}
