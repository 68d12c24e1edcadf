// A capacity or queue limit written as a string: one error each, on the
// string, with the number to write; no rustc type error after them.
herta::resources! {
    pub WORKER: "worker" = "4";
    pub DB_WRITE: "db-write" = 4, queue = "64";
}

fn main() {
    let _ = (WORKER, DB_WRITE);
}
