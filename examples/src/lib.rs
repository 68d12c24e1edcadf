//! Support code for herta's runnable examples.
//!
//! The examples themselves live next to this file:
//!
//! * `quickstart` (its own package, `herta-quickstart`, so that a first run
//!   builds only herta and tokio) — the first program to read.
//! * `catalogue` — a real workload: a CSV catalogue written into SQLite
//!   through two operations sharing a `db-write` budget.
//! * `service` — an axum HTTP service whose routes call herta operations;
//!   its router and operations are the [`service`] module (herta's `axum`
//!   feature answers its errors), so that `tests/service.rs` drives the
//!   same code over real HTTP.
//! * `upstream` — an HTTP client (reqwest) behind
//!   `herta::tower::ContractLayer`, against a local axum upstream that
//!   answers 503 and 429; the [`upstream`] module, which
//!   `tests/upstream.rs` drives over real HTTP.
//! * `gen_catalogue` — regenerates `examples/data/catalogue.csv` from
//!   [`catalogue_csv`] (deterministic, so the file in the repository is
//!   reproducible; a test below checks it).

use std::fmt::Write as _;

pub mod service;
pub mod upstream;

/// The brands of the generated catalogue: name, SKU prefix, number of rows.
pub const BRANDS: [(&str, &str, usize); 6] = [
    ("acme", "ACM", 720),
    ("borealis", "BOR", 540),
    ("cobalt", "COB", 610),
    ("dunmore", "DUN", 380),
    ("elkhorn", "ELK", 450),
    ("fjord", "FJO", 300),
];

/// The header line of every catalogue CSV.
pub const CSV_HEADER: &str = "brand,sku,title,price_cents";

const ADJECTIVES: [&str; 12] = [
    "Compact",
    "Heavy-duty",
    "Folding",
    "Cordless",
    "Stainless",
    "Modular",
    "Quiet",
    "Portable",
    "Classic",
    "Insulated",
    "Adjustable",
    "Waterproof",
];

const NOUNS: [&str; 12] = [
    "kettle",
    "desk lamp",
    "drill",
    "backpack",
    "tent",
    "thermos",
    "shelf",
    "fan",
    "ladder",
    "toolbox",
    "jacket",
    "lantern",
];

/// The catalogue CSV as `gen_catalogue` writes it: [`CSV_HEADER`], then one
/// row per product, grouped by brand, with no quoted fields (titles contain no
/// comma or quote).
///
/// The rows come from a fixed-seed xorshift generator, so the output is the
/// same on every machine and every run.
pub fn catalogue_csv() -> String {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut out = String::with_capacity(160_000);
    out.push_str(CSV_HEADER);
    out.push('\n');
    for (brand, prefix, rows) in BRANDS {
        for i in 0..rows {
            let adjective = ADJECTIVES[rng.below(ADJECTIVES.len() as u64) as usize];
            let noun = NOUNS[rng.below(NOUNS.len() as u64) as usize];
            let size = ["S", "M", "L", "XL"][rng.below(4) as usize];
            let price_cents = 199 + rng.below(50_000);
            writeln!(
                out,
                "{brand},{prefix}-{:05},{adjective} {noun} {size},{price_cents}",
                i + 1
            )
            .expect("writing to a String cannot fail");
        }
    }
    out
}

/// xorshift64: tiny, deterministic and good enough for test data.
struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: u64) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checked-in file is exactly what the generator produces; if this
    /// fails, run `cargo run -p herta-examples --example gen_catalogue`.
    #[test]
    fn checked_in_catalogue_is_reproducible() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/catalogue.csv");
        let on_disk = std::fs::read_to_string(path).expect("examples/data/catalogue.csv");
        assert!(
            on_disk == catalogue_csv(),
            "examples/data/catalogue.csv is stale; regenerate it with \
             `cargo run -p herta-examples --example gen_catalogue`"
        );
    }

    #[test]
    fn catalogue_has_every_brand_and_no_quoting() {
        let csv = catalogue_csv();
        let rows: Vec<&str> = csv.lines().skip(1).collect();
        assert_eq!(rows.len(), BRANDS.iter().map(|b| b.2).sum::<usize>());
        assert_eq!(rows.len(), 3000);
        assert!(rows
            .iter()
            .all(|r| r.split(',').count() == 4 && !r.contains('"')));
    }
}
