//! A fixed workload for instruction-level profiling of one uncontended
//! keyed call (BENCHMARKS.md, "How to reproduce"): the `KeyedSerialization`
//! shape of `go_shapes` with one caller, `Wait` admission, `serialize_by`
//! over 8 `&'static str` keys (the call index `& 7`), a budget of 4.
//!
//! ```text
//! cargo build --release -p herta --example profile_keyed
//! valgrind --tool=callgrind target/release/examples/profile_keyed 100000
//! ```
//!
//! A binary of its own, so that the keyed operation changes nothing in how
//! `profile_call`'s loop is compiled.

#[path = "profile/cli.rs"]
mod cli;

use std::hint::black_box;

use herta::{Failure, Resource, Runtime};

#[herta::operation(effect = Pure, resources("worker" = 1), admission = Wait,
                   serialize_by = key)]
async fn keyed(key: &'static str) -> Result<u64, Failure<std::io::Error>> {
    Ok(black_box(key.len() as u64))
}

/// `go_shapes`' keys.
const KEYS: [&str; 8] = [
    "key-0", "key-1", "key-2", "key-3", "key-4", "key-5", "key-6", "key-7",
];

fn main() {
    let (calls, rt) = (cli::calls(1), cli::current_thread());
    let herta = Runtime::builder()
        .resource(Resource::new("worker", 4))
        .build()
        .expect("valid resources");
    let op = Keyed::bind(&herta).expect("bind");
    rt.block_on(async {
        for i in 0..calls {
            black_box(op.call(KEYS[i as usize & 7]).await.ok());
        }
    });
}
