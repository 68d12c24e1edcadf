herta::resources! {
    pub API: "api" = 100 per "1 sec";
}

herta::resources! {
    pub ZERO: "zero" = 0 per "1s";
}

herta::resources! {
    pub INSTANT: "instant" = 100 per "0s", burst = 0;
}

herta::resources! {
    pub POOL: "pool" = 4, burst = 2;
}

fn main() {
    let _ = (API, ZERO, INSTANT);
}
