herta::resources! {
    pub WORKER: "worker" = 4, queue = 0;
    pub DB_WRITE: "db-write" = 4, queue = 64;
}

const LIMIT: u32 = 0;

herta::resources! {
    pub CACHE: "cache" = 2, queue = LIMIT;
}

herta::resources! {
    pub MAIL: "mail" = 2, qeueu = 8;
}

fn main() {
    let _ = (WORKER, DB_WRITE, CACHE);
}
