//! The catalogue database: SQLite through rusqlite, one connection per call,
//! plus a [`WriteGauge`] with which the database layer itself (not herta)
//! measures how many writers were inside at once.
//!
//! Every method here blocks; the operations run them on tokio's blocking pool.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rusqlite::{params, Connection, ErrorCode, TransactionBehavior};

use crate::csv::{self, Line, Malformed, Row};

/// Write load, in the units the operations' contracts declare: the database
/// layer counts a bulk replacement as 2 writers and one event as 1.
pub const REPLACE_UNITS: u32 = 2;
pub const EVENT_UNITS: u32 = 1;

/// How long one connection waits for SQLite's write lock before giving up
/// with `SQLITE_BUSY` (then the operation retries: see [`DbError::Busy`]).
const BUSY_TIMEOUT: Duration = Duration::from_millis(250);

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS products (
        brand       TEXT    NOT NULL,
        sku         TEXT    NOT NULL,
        title       TEXT    NOT NULL,
        price_cents INTEGER NOT NULL,
        PRIMARY KEY (brand, sku)
    );
    CREATE TABLE IF NOT EXISTS import_log (
        session TEXT    NOT NULL,
        run     TEXT    NOT NULL,
        chunk   INTEGER NOT NULL,
        brand   TEXT    NOT NULL,
        rows    INTEGER NOT NULL,
        PRIMARY KEY (session, run, chunk)
    );
";

/// What went wrong in the database layer, and what it means for a retry.
#[derive(Debug, thiserror::Error, herta::Classify)]
pub enum DbError {
    /// Another connection held the write lock past the busy timeout. The
    /// transaction did not happen, so trying again is safe and may succeed.
    #[outcome(Transient)]
    #[error("database is busy: {0}")]
    Busy(#[source] rusqlite::Error),
    /// The input is wrong; trying again fails the same way (Permanent).
    #[error(transparent)]
    Malformed(#[from] Malformed),
    /// Any other SQLite error (Permanent: nobody vouched a retry is safe).
    #[error("sqlite: {0}")]
    Sqlite(#[source] rusqlite::Error),
}

impl From<rusqlite::Error> for DbError {
    fn from(e: rusqlite::Error) -> Self {
        match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => DbError::Busy(e),
            _ => DbError::Sqlite(e),
        }
    }
}

/// One import-log entry: chunk `chunk` of run `run` (a brand's import)
/// covered `rows` lines.
#[derive(Debug, Clone)]
pub struct Event {
    pub session: String,
    pub run: String,
    pub brand: String,
    pub chunk: u32,
    pub rows: u32,
}

/// A brand's rows, summarized: how many, and a checksum of their content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BrandState {
    pub rows: u64,
    pub checksum: u64,
}

impl BrandState {
    /// The state a brand has once `rows` are its rows.
    pub fn of(rows: &[Row]) -> Self {
        let mut sorted: Vec<&Row> = rows.iter().collect();
        sorted.sort_by(|a, b| a.sku.cmp(&b.sku));
        let mut state = BrandState::default();
        for row in sorted {
            state.add(&row.sku, &row.title, row.price_cents);
        }
        state
    }

    /// Adds one row; rows must come in `sku` order (byte order, as SQLite's
    /// default collation sorts them).
    fn add(&mut self, sku: &str, title: &str, price_cents: i64) {
        // FNV-1a over "sku \x1f title \x1f price \x1e".
        let mut h = if self.rows == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.checksum
        };
        let price = price_cents.to_string();
        for part in [sku, "\x1f", title, "\x1f", &price, "\x1e"] {
            for b in part.bytes() {
                h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
        }
        self.rows += 1;
        self.checksum = h;
    }
}

/// A handle on the database file; cheap to clone.
#[derive(Clone)]
pub struct Db {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    gauge: WriteGauge,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("path", &self.inner.path)
            .finish()
    }
}

impl Db {
    /// Opens (creating if needed) the database at `path`, in WAL mode.
    pub fn open(path: &Path) -> Result<Db, DbError> {
        let conn = Connection::open(path)?;
        // WAL: readers never block the writer, and writers queue on one lock.
        let _mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        conn.execute_batch(SCHEMA)?;
        Ok(Db {
            inner: Arc::new(Inner {
                path: path.to_owned(),
                gauge: WriteGauge::default(),
            }),
        })
    }

    pub fn gauge(&self) -> &WriteGauge {
        &self.inner.gauge
    }

    /// A fresh connection. Each call opens its own, as a pool would hand out
    /// distinct connections; SQLite serializes their write transactions.
    fn connect(&self) -> Result<Connection, DbError> {
        let conn = Connection::open(&self.inner.path)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        Ok(conn)
    }

    /// Replaces every row of `brand` with `lines`, in **one** transaction:
    /// rows are parsed as they are inserted, and a malformed line rolls the
    /// whole replacement back, so the brand keeps exactly its old rows.
    pub fn replace_brand(&self, brand: &str, lines: &[Line]) -> Result<u64, DbError> {
        let _writer = self.inner.gauge.enter(REPLACE_UNITS, Some(brand));
        let mut conn = self.connect()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute("DELETE FROM products WHERE brand = ?1", [brand])?;
        {
            let mut insert = tx.prepare(
                "INSERT INTO products (brand, sku, title, price_cents) VALUES (?1, ?2, ?3, ?4)",
            )?;
            for line in lines {
                let row = csv::parse_row(line)?; // `?` drops `tx`: rollback
                insert.execute(params![brand, row.sku, row.title, row.price_cents])?;
            }
        }
        tx.commit()?;
        Ok(lines.len() as u64)
    }

    /// Writes one import-log entry. Keyed by (session, run, chunk) and written
    /// with `INSERT OR REPLACE`, so writing it twice leaves one entry.
    pub fn record_event(&self, event: &Event) -> Result<(), DbError> {
        let _writer = self.inner.gauge.enter(EVENT_UNITS, None);
        let conn = self.connect()?;
        conn.execute(
            "INSERT OR REPLACE INTO import_log (session, run, chunk, brand, rows)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                event.session,
                event.run,
                event.chunk,
                event.brand,
                event.rows
            ],
        )?;
        Ok(())
    }

    /// The current rows of `brand`, summarized.
    pub fn brand_state(&self, brand: &str) -> Result<BrandState, DbError> {
        let conn = self.connect()?;
        let mut stmt = conn.prepare(
            "SELECT sku, title, price_cents FROM products WHERE brand = ?1 ORDER BY sku",
        )?;
        let mut rows = stmt.query([brand])?;
        let mut state = BrandState::default();
        while let Some(row) = rows.next()? {
            state.add(
                &row.get::<_, String>(0)?,
                &row.get::<_, String>(1)?,
                row.get(2)?,
            );
        }
        Ok(state)
    }

    /// Rows in the whole `products` table.
    pub fn total_rows(&self) -> Result<u64, DbError> {
        let conn = self.connect()?;
        let count: i64 = conn.query_row("SELECT COUNT(*) FROM products", [], |r| r.get(0))?;
        Ok(count as u64)
    }

    /// Per brand, the number of import-log entries of `session` and the
    /// lines they cover.
    pub fn events(&self, session: &str) -> Result<BTreeMap<String, (u64, u64)>, DbError> {
        let conn = self.connect()?;
        let mut stmt = conn.prepare(
            "SELECT brand, COUNT(*), SUM(rows) FROM import_log WHERE session = ?1 GROUP BY brand",
        )?;
        let rows = stmt.query_map([session], |r| {
            let (count, lines): (i64, i64) = (r.get(1)?, r.get(2)?);
            Ok((r.get(0)?, (count as u64, lines as u64)))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

/// How many writers were inside the database at once, measured where the
/// writing happens: total units, replacements overall, and per brand.
#[derive(Default)]
pub struct WriteGauge {
    units: AtomicU32,
    peak_units: AtomicU32,
    replacing: AtomicU32,
    peak_replacing: AtomicU32,
    brands: Mutex<HashMap<String, Arc<BrandGauge>>>,
}

/// One brand's replacements.
#[derive(Default)]
pub struct BrandGauge {
    replacing: AtomicU32,
    peak_replacing: AtomicU32,
}

impl WriteGauge {
    /// Counts a writer in until the returned guard drops.
    fn enter(&self, units: u32, replacing: Option<&str>) -> Writer<'_> {
        let now = self.units.fetch_add(units, SeqCst) + units;
        self.peak_units.fetch_max(now, SeqCst);
        let brand = replacing.map(|brand| {
            let now = self.replacing.fetch_add(1, SeqCst) + 1;
            self.peak_replacing.fetch_max(now, SeqCst);
            let gauge = self.brand(brand);
            let now = gauge.replacing.fetch_add(1, SeqCst) + 1;
            gauge.peak_replacing.fetch_max(now, SeqCst);
            gauge
        });
        Writer {
            gauge: self,
            units,
            brand,
        }
    }

    fn brand(&self, brand: &str) -> Arc<BrandGauge> {
        let mut brands = self.brands.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(brands.entry(brand.to_owned()).or_default())
    }

    /// The most write units in use at once.
    pub fn peak_units(&self) -> u32 {
        self.peak_units.load(SeqCst)
    }

    /// The most replacements (of any brands) running at once.
    pub fn peak_replacing(&self) -> u32 {
        self.peak_replacing.load(SeqCst)
    }

    /// The most replacements of `brand` running at once.
    pub fn brand_peak(&self, brand: &str) -> u32 {
        self.brand(brand).peak_replacing.load(SeqCst)
    }
}

/// A writer inside the database; counts itself out when dropped.
pub struct Writer<'a> {
    gauge: &'a WriteGauge,
    units: u32,
    brand: Option<Arc<BrandGauge>>,
}

impl Drop for Writer<'_> {
    fn drop(&mut self) {
        if let Some(brand) = &self.brand {
            brand.replacing.fetch_sub(1, SeqCst);
            self.gauge.replacing.fetch_sub(1, SeqCst);
        }
        self.gauge.units.fetch_sub(self.units, SeqCst);
    }
}
