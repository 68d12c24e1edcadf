//! Regenerates `examples/data/catalogue.csv` (deterministic: same bytes on
//! every run), or writes it to the path given as the first argument.
//!
//! ```text
//! cargo run -p herta-examples --example gen_catalogue [-- PATH]
//! ```

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let path = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/data/catalogue.csv"))
        });
    let csv = herta_examples::catalogue_csv();
    std::fs::write(&path, &csv)?;
    println!(
        "wrote {} rows to {}",
        csv.lines().count() - 1,
        path.display()
    );
    Ok(())
}
