//! The catalogue CSV: `brand,sku,title,price_cents`, one product a line.
//!
//! Fields are never quoted (the generator guarantees it), so a line is split
//! on commas by hand; a quote character is reported rather than misread.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use herta_examples::CSV_HEADER;

/// One line of the file, kept raw: rows are parsed inside the replacing
/// transaction, so a malformed line aborts that brand's transaction.
#[derive(Debug, Clone)]
pub struct Line {
    /// 1-based line number in the file (the header is line 1).
    pub number: usize,
    pub text: String,
}

/// One product.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub brand: String,
    pub sku: String,
    pub title: String,
    pub price_cents: i64,
}

/// A line that is not a valid row, with where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    pub line: usize,
    pub text: String,
    pub reason: String,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}: `{}`", self.line, self.reason, self.text)
    }
}

impl std::error::Error for Malformed {}

/// A file's lines grouped by brand, in file order within each brand.
pub type ByBrand = BTreeMap<String, Arc<[Line]>>;

/// Reads `path`, checks the header and groups the lines by their first field.
///
/// Only what grouping needs is checked here (a header, a brand on every
/// line); everything else is checked row by row by [`parse_row`].
pub fn read(path: &Path) -> Result<ByBrand, Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut lines = text.lines().enumerate().map(|(i, text)| Line {
        number: i + 1,
        text: text.to_owned(),
    });
    match lines.next() {
        Some(header) if header.text.trim_end() == CSV_HEADER => {}
        Some(header) => {
            return Err(format!(
                "{}: line 1: expected the header `{CSV_HEADER}`, found `{}`",
                path.display(),
                header.text
            )
            .into())
        }
        None => return Err(format!("{}: the file is empty", path.display()).into()),
    }
    let mut by_brand: BTreeMap<String, Vec<Line>> = BTreeMap::new();
    for line in lines.filter(|l| !l.text.trim().is_empty()) {
        let brand = match line.text.split_once(',') {
            Some((brand, _)) if !brand.trim().is_empty() => brand.trim().to_owned(),
            _ => {
                return Err(Malformed {
                    line: line.number,
                    reason: "no brand in the first field".to_owned(),
                    text: line.text,
                }
                .into())
            }
        };
        by_brand.entry(brand).or_default().push(line);
    }
    Ok(by_brand.into_iter().map(|(b, l)| (b, l.into())).collect())
}

/// Parses one line into a [`Row`].
pub fn parse_row(line: &Line) -> Result<Row, Malformed> {
    let bad = |reason: String| Malformed {
        line: line.number,
        text: line.text.clone(),
        reason,
    };
    if line.text.contains('"') {
        return Err(bad("quoted fields are not supported".to_owned()));
    }
    let fields: Vec<&str> = line.text.trim_end().split(',').map(str::trim).collect();
    let [brand, sku, title, price] = fields[..] else {
        return Err(bad(format!(
            "expected 4 fields ({CSV_HEADER}), found {}",
            fields.len()
        )));
    };
    if sku.is_empty() || title.is_empty() {
        return Err(bad("sku and title must not be empty".to_owned()));
    }
    let price_cents = price
        .parse::<i64>()
        .ok()
        .filter(|p| *p >= 0)
        .ok_or_else(|| {
            bad(format!(
                "price_cents `{price}` is not a whole, non-negative number of cents"
            ))
        })?;
    Ok(Row {
        brand: brand.to_owned(),
        sku: sku.to_owned(),
        title: title.to_owned(),
        price_cents,
    })
}
