herta::resources! {
    pub WORKER: "worker" = 4;
    pub RENDER: "worker" = 2;
    pub WORKER: "other" = 1;
    pub EMPTY: "" = 1;
}

fn main() {
    let _ = (WORKER, RENDER, EMPTY);
}
