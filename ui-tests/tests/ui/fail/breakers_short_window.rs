herta::breakers! {
    pub TINY: "tiny" = breaker(window = "5ms");
    pub UNPARSED: "unparsed" = breaker(window = "10 seconds", open_for = 30);
}

fn main() {
    let _ = (TINY, UNPARSED);
}
