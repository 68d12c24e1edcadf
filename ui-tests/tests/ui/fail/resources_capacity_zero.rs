herta::resources! {
    /// Render slots.
    pub WORKER: "worker" = 0;
    pub DB_WRITE: "db-write" = 4;
}

fn main() {
    let _ = (WORKER, DB_WRITE);
}
