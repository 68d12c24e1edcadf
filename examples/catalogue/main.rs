//! A real workload: import a product catalogue (CSV) into SQLite through two
//! herta operations that share one `db-write` budget, then check — with
//! figures measured by the database layer, not by herta — that the contract
//! held and the data is exactly right.
//!
//! ```text
//! cargo run -p herta-examples --example catalogue
//! cargo run -p herta-examples --example catalogue -- --csv examples/data/catalogue-malformed.csv
//! cargo run -p herta-examples --example catalogue -- --db /tmp/my.sqlite --csv FILE
//! ```
//!
//! * `replace_catalogue` replaces one brand's rows in one transaction. It
//!   holds 2 of the 4 `db-write` units, so two brands can be replaced at once;
//!   `serialize_by = brand` keeps two replacements of the *same* brand apart.
//! * `record_event` writes one import-log entry per chunk of 100 lines (1 unit),
//!   dozens of them concurrently with the replacements.
//!
//! Every other brand is imported twice, concurrently, to exercise the key.
//! The database defaults to `$TMPDIR/herta-catalogue.sqlite` and is kept
//! between runs: import the good file, then the malformed one, and the
//! brands with a bad line keep their rows untouched.
//!
//! Exit status: 0 when the import succeeded and every check passed; 1 when a
//! check failed; 2 when the input was rejected (bad file, or brands with
//! malformed lines — those brands are left as they were).

mod csv;
mod db;

use std::collections::BTreeMap;
use std::error::Error as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use herta::Runtime;
use tokio::task::JoinSet;

use crate::csv::{ByBrand, Line};
use crate::db::{BrandState, Db, DbError, Event};

herta::resources! {
    /// Concurrent write load on the catalogue database: a bulk replacement
    /// holds 2 units, one log event 1.
    pub DB_WRITE: "db-write" = 4;
}

// No `timeout` on either operation, on purpose: the work runs on a blocking
// thread, and dropping the attempt's future would not stop the SQLite
// transaction — herta would hand the budget to the next call while this one
// is still writing.

/// Replaces all rows of `brand` with `lines` in one transaction (a malformed
/// line rolls the brand back). The same input gives the same rows, so it is
/// `Idempotent` and a busy database (`Transient`) is retried, after a
/// jittered backoff (the writers that collided do not collide again), with
/// its write budget given back while it waits.
#[herta::operation(effect = Idempotent, serialize_by = brand, resources(DB_WRITE = 2),
                   retry(on = Transient, max = 4, backoff(base = "20ms", cap = "500ms")))]
async fn replace_catalogue(db: Db, brand: String, lines: Arc<[Line]>) -> Result<u64, DbError> {
    blocking(move || db.replace_brand(&brand, &lines)).await
}

// The database layer counts writers in the same units as the contracts.
const _: () = assert!(ReplaceCatalogue::CONTRACT.resources()[0].units() == db::REPLACE_UNITS);
const _: () = assert!(RecordEvent::CONTRACT.resources()[0].units() == db::EVENT_UNITS);

/// Writes one import-log entry; keyed and upserted, so `Idempotent` too.
#[herta::operation(effect = Idempotent, resources(DB_WRITE = 1),
                   retry(on = Transient, max = 4, backoff(base = "20ms", cap = "500ms")))]
async fn record_event(db: Db, event: Event) -> Result<(), DbError> {
    blocking(move || db.record_event(&event)).await
}

/// Runs blocking database work on tokio's blocking pool; a panic there
/// propagates to the caller (herta counts it and releases the budget).
async fn blocking<T, E>(work: impl FnOnce() -> Result<T, E> + Send + 'static) -> Result<T, E>
where
    T: Send + 'static,
    E: Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("blocking database task did not complete: {e}"),
    }
}

/// Lines per import-log event.
const CHUNK: usize = 100;

#[tokio::main]
async fn main() -> ExitCode {
    let args = match Args::parse() {
        Ok(args) => args,
        Err(Exit::Help(usage)) => {
            println!("{usage}");
            return ExitCode::SUCCESS;
        }
        Err(Exit::Usage(message)) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    match run(args).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

async fn run(args: Args) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let input = csv::read(&args.csv)?;
    let csv_rows: usize = input.values().map(|lines| lines.len()).sum();
    println!(
        "csv:      {} ({csv_rows} rows, {} brands)",
        args.csv.display(),
        input.len()
    );
    println!("database: {}", args.db.display());

    let db = blocking({
        let path = args.db.clone();
        move || Db::open(&path)
    })
    .await?;

    // What the database must hold afterwards, worked out without the import:
    // the parsed rows of each brand, or — for a brand with a malformed line —
    // exactly what it holds now.
    let before = snapshot(&db, &input).await?;
    let expected: BTreeMap<&str, Expected> = input
        .iter()
        .map(|(brand, lines)| {
            let rows: Result<Vec<_>, _> = lines.iter().map(csv::parse_row).collect();
            let expected = match rows {
                Ok(rows) => Expected::Replaced(BrandState::of(&rows)),
                Err(bad) => Expected::Unchanged(before.brands[brand], bad.line),
            };
            (brand.as_str(), expected)
        })
        .collect();

    let rt = Runtime::builder().resource(DB_WRITE).build()?;
    let imports = import(&rt, &db, &input).await?;
    let stats = rt.stats(); // quiescent: every call has returned
    rt.shutdown().await;

    let after = snapshot(&db, &input).await?;
    let gauge = db.gauge();
    let mut checks = Checks::default();

    // The table, one brand a line; brands that break a rule are collected.
    let (mut replaced, mut kept) = (Vec::new(), Vec::new());
    let (mut wrong_rows, mut changed, mut overlapped, mut wrong_events) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    println!();
    println!(
        "{:<10} {:>5} {:>14} {:>12} {:>7}  result",
        "brand", "rows", "replace calls", "max overlap", "events"
    );
    for (brand, lines) in &input {
        let brand = brand.as_str();
        let report = &imports.brands[brand];
        let overlap = gauge.brand_peak(brand);
        let (events, event_lines) = after.events.get(brand).copied().unwrap_or_default();
        let now = after.brands[brand];
        let result = match expected[brand] {
            Expected::Replaced(want) => {
                replaced.push(brand);
                if report.failed.is_empty() && now == want {
                    "ok".to_owned()
                } else {
                    wrong_rows.push(brand);
                    format!("MISMATCH (want {} rows)", want.rows)
                }
            }
            Expected::Unchanged(was, line) => {
                kept.push(brand);
                let rejected_at_line = |e| malformed_line(e) == Some(line);
                if report.succeeded == 0 && report.failed.iter().all(rejected_at_line) && now == was
                {
                    match was.rows {
                        0 => "rejected, nothing written (absent before and after)".to_owned(),
                        n => format!("rejected, unchanged ({n} rows, same checksum)"),
                    }
                } else {
                    changed.push(brand);
                    format!("CHANGED (had {} rows)", was.rows)
                }
            }
        };
        let calls = report.succeeded + report.failed.len() as u32;
        println!(
            "{brand:<10} {:>5} {calls:>14} {overlap:>12} {events:>7}  {result}",
            now.rows
        );
        if overlap > 1 {
            overlapped.push(brand);
        }
        let chunks = lines.len().div_ceil(CHUNK) as u64;
        if report.events_failed > 0
            || events != chunks * u64::from(calls)
            || event_lines != (lines.len() * calls as usize) as u64
        {
            wrong_events.push(brand);
        }
    }
    if !replaced.is_empty() {
        checks.none(
            format!(
                "imported brands hold exactly their CSV rows (count and checksum): {}",
                replaced.join(", ")
            ),
            &wrong_rows,
        );
    }
    if !kept.is_empty() {
        checks.none(
            format!(
                "brands with a malformed line were rejected whole, rows untouched: {}",
                kept.join(", ")
            ),
            &changed,
        );
    }
    checks.none(
        "no two replacements of one brand overlapped (max overlap 1)".to_owned(),
        &overlapped,
    );
    checks.none(
        format!("one import-log event per {CHUNK} lines of every import"),
        &wrong_events,
    );

    // Why each rejected replacement was rejected (the runs of one brand fail alike).
    for (brand, report) in &imports.brands {
        let mut reasons: Vec<String> = report
            .failed
            .iter()
            .map(|err| {
                let why = err.source().map(|s| format!(": {s}")).unwrap_or_default();
                format!("{err}{why}")
            })
            .collect();
        reasons.dedup();
        for reason in reasons {
            println!("{brand}: {reason}");
        }
    }

    println!();
    print_stats(&stats);
    let capacity = DB_WRITE.capacity();
    println!(
        "database layer: peak write units {} of {capacity}, peak concurrent replacements {} \
         (all brands together)",
        gauge.peak_units(),
        gauge.peak_replacing()
    );

    let want_total: u64 = expected
        .values()
        .map(|e| match e {
            Expected::Replaced(s) | Expected::Unchanged(s, _) => s.rows,
        })
        .sum::<u64>()
        + before.other_rows;
    checks.expect(
        gauge.peak_units() <= capacity,
        format!("peak write units {} <= {capacity}", gauge.peak_units()),
    );
    checks.expect(
        after.total == want_total,
        format!(
            "database holds {} rows in all, expected {want_total}",
            after.total
        ),
    );
    checks.expect(
        stats.admitted == stats.finished && stats.in_flight == 0 && stats.keys == 0,
        "herta: every admitted call finished, no key left behind".to_owned(),
    );

    println!();
    let failed = checks.print();
    let rejected = imports
        .brands
        .values()
        .filter(|r| !r.failed.is_empty())
        .count();
    Ok(if failed > 0 {
        println!("FAILED: {failed} check(s) did not hold");
        ExitCode::FAILURE
    } else if rejected > 0 {
        println!("input rejected for {rejected} brand(s); those brands were left as they were");
        ExitCode::from(2)
    } else {
        println!("import complete: {csv_rows} rows, every check passed");
        ExitCode::SUCCESS
    })
}

/// What a brand must look like after the import.
#[derive(Clone, Copy)]
enum Expected {
    /// Exactly the CSV's rows.
    Replaced(BrandState),
    /// As before: the CSV has a malformed line (this line number).
    Unchanged(BrandState, usize),
}

/// What happened to one brand's import calls.
#[derive(Default)]
struct BrandReport {
    succeeded: u32,
    failed: Vec<herta::Error<DbError>>,
    events_failed: u32,
}

struct Imports {
    brands: BTreeMap<String, BrandReport>,
}

/// Imports every brand at once: each replacement and all its log events are
/// separate concurrent calls, and every other brand is imported twice.
async fn import(
    rt: &Runtime,
    db: &Db,
    input: &ByBrand,
) -> Result<Imports, Box<dyn std::error::Error>> {
    let replace = ReplaceCatalogue::bind(rt)?;
    let record = RecordEvent::bind(rt)?;
    let session = session_id();

    enum Done {
        Replace(String, Result<u64, herta::Error<DbError>>),
        Event(String, Result<(), herta::Error<DbError>>),
    }
    let mut calls = JoinSet::new();
    // Every other brand is imported twice, concurrently.
    let runs = |i: usize| if i.is_multiple_of(2) { 2 } else { 1 };
    // The replacements first, so that different brands meet in the budget...
    for (i, (brand, lines)) in input.iter().enumerate() {
        for _ in 0..runs(i) {
            let (replace, db, brand, lines) =
                (replace.clone(), db.clone(), brand.clone(), lines.clone());
            calls.spawn(async move {
                let result = replace.call(db, brand.clone(), lines).await;
                Done::Replace(brand, result)
            });
        }
    }
    // ...then one log event per chunk of every run, all at once.
    for (i, (brand, lines)) in input.iter().enumerate() {
        for run in 1..=runs(i) {
            for (chunk, part) in lines.chunks(CHUNK).enumerate() {
                let event = Event {
                    session: session.clone(),
                    run: format!("{brand}#{run}"),
                    brand: brand.clone(),
                    chunk: chunk as u32,
                    rows: part.len() as u32,
                };
                let (record, db) = (record.clone(), db.clone());
                calls.spawn(async move {
                    let brand = event.brand.clone();
                    Done::Event(brand, record.call(db, event).await)
                });
            }
        }
    }

    let mut brands: BTreeMap<String, BrandReport> = input
        .keys()
        .map(|b| (b.clone(), BrandReport::default()))
        .collect();
    while let Some(done) = calls.join_next().await {
        match done? {
            Done::Replace(brand, Ok(_)) => brands.get_mut(&brand).unwrap().succeeded += 1,
            Done::Replace(brand, Err(e)) => brands.get_mut(&brand).unwrap().failed.push(e),
            Done::Event(_, Ok(())) => {}
            Done::Event(brand, Err(e)) => {
                eprintln!("{brand}: event failed: {e}");
                brands.get_mut(&brand).unwrap().events_failed += 1;
            }
        }
    }
    Ok(Imports { brands })
}

/// The line number of a replacement rejected for a malformed line.
fn malformed_line(err: &herta::Error<DbError>) -> Option<usize> {
    match err.handler_error() {
        Some(DbError::Malformed(bad)) => Some(bad.line),
        _ => None,
    }
}

/// The database's state, for the brands of the input.
struct Snapshot {
    brands: BTreeMap<String, BrandState>,
    events: BTreeMap<String, (u64, u64)>,
    total: u64,
    /// Rows of brands the input does not mention.
    other_rows: u64,
}

async fn snapshot(db: &Db, input: &ByBrand) -> Result<Snapshot, DbError> {
    let (db, brands): (Db, Vec<String>) = (db.clone(), input.keys().cloned().collect());
    let session = session_id();
    blocking(move || {
        let brands = brands
            .into_iter()
            .map(|b| db.brand_state(&b).map(|s| (b, s)))
            .collect::<Result<BTreeMap<_, _>, _>>()?;
        let total = db.total_rows()?;
        Ok(Snapshot {
            other_rows: total - brands.values().map(|s| s.rows).sum::<u64>(),
            events: db.events(&session)?,
            brands,
            total,
        })
    })
    .await
}

/// Identifies this run's import-log entries (the log is kept across runs).
fn session_id() -> String {
    use std::sync::OnceLock;
    static SESSION: OnceLock<String> = OnceLock::new();
    SESSION
        .get_or_init(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            format!("{nanos:x}-{}", std::process::id())
        })
        .clone()
}

fn print_stats(stats: &herta::Stats) {
    for line in stats.to_string().lines() {
        println!("herta: {line}");
    }
}

/// Checks, printed at the end.
#[derive(Default)]
struct Checks(Vec<(bool, String)>);

impl Checks {
    fn expect(&mut self, ok: bool, what: String) {
        self.0.push((ok, what));
    }

    /// A rule every brand must keep; `breaking` lists those that did not.
    fn none(&mut self, what: String, breaking: &[&str]) {
        match breaking {
            [] => self.expect(true, what),
            _ => self.expect(
                false,
                format!("{what} -- broken by {}", breaking.join(", ")),
            ),
        }
    }

    /// Prints every check; returns how many failed.
    fn print(&self) -> usize {
        for (ok, what) in &self.0 {
            println!("  {} {what}", if *ok { "ok  " } else { "FAIL" });
        }
        self.0.iter().filter(|(ok, _)| !ok).count()
    }
}

struct Args {
    csv: PathBuf,
    db: PathBuf,
}

/// Why `Args::parse` did not return arguments to run with.
enum Exit {
    Help(&'static str),
    Usage(String),
}

impl Args {
    fn parse() -> Result<Args, Exit> {
        let usage = "usage: catalogue [--csv FILE] [--db FILE]\n  \
                     --csv  catalogue CSV (default: examples/data/catalogue.csv)\n  \
                     --db   SQLite file, created if missing (default: $TMPDIR/herta-catalogue.sqlite)";
        let mut args = Args {
            csv: PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/data/catalogue.csv")),
            db: std::env::temp_dir().join("herta-catalogue.sqlite"),
        };
        let mut argv = std::env::args_os().skip(1);
        while let Some(flag) = argv.next() {
            let slot = match flag.to_str() {
                Some("--csv") => &mut args.csv,
                Some("--db") => &mut args.db,
                Some("-h" | "--help") => return Err(Exit::Help(usage)),
                _ => return Err(Exit::Usage(format!("unknown argument {flag:?}\n{usage}"))),
            };
            *slot = argv
                .next()
                .ok_or_else(|| Exit::Usage(format!("{flag:?} needs a value\n{usage}")))?
                .into();
        }
        Ok(args)
    }
}
