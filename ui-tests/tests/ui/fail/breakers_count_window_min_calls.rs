herta::breakers! {
    pub SMALL: "small" = breaker(window = 5, min_calls = 20);
    pub DEFAULTED: "defaulted" = breaker(window = 4);
}

fn main() {
    let _ = (SMALL, DEFAULTED);
}
