//! The run's figure, as SVG text written by the program from the provider's
//! bins: one panel per fleet, time (s) across, requests per second up (a
//! log scale) — the provider's `200`s and `429`s (each smoothed over
//! [`SMOOTHING`](crate::fleet::SMOOTHING) bins) and its capacity
//! (`min(R, Q / service)`, dashed), which halves in the third phase.

use std::fmt::Write as _;

use crate::fleet::{smoothed, Report};
use crate::provider::{Bin, BIN};

const WIDTH: f64 = 900.0;
const PANEL: f64 = 250.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 50.0;
const GAP: f64 = 70.0;

/// The SVG of `reports`, one panel each, stacked; `note` goes under the title.
pub fn svg(reports: &[Report], note: &str) -> String {
    let n = reports.len() as f64;
    let height = TOP + n * (PANEL + GAP);
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{LEFT}" y="20" font-size="15">Four worker processes against one provider: 200s and 429s per second</text>"#
    );
    let _ = writeln!(
        out,
        r##"<text x="{LEFT}" y="38" fill="#555">{}</text>"##,
        escape(note)
    );
    for (i, report) in reports.iter().enumerate() {
        panel(&mut out, report, TOP + i as f64 * (PANEL + GAP) + 20.0);
    }
    out.push_str("</svg>\n");
    out
}

fn panel(out: &mut String, report: &Report, top: f64) {
    let ok = smoothed(&report.bins, |b| b.ok);
    let throttled = smoothed(&report.bins, Bin::throttled);
    let capacity: Vec<f64> = report
        .bins
        .iter()
        .map(|b| report.quota.capacity(b.q))
        .collect();
    let peak = ok
        .iter()
        .chain(&throttled)
        .chain(&capacity)
        .fold(1.0_f64, |a, &b| a.max(b));
    // A log scale from 1/s to the power of ten above the peak, so that a
    // fleet's 429s (tens per second, or tens of thousands) and its goodput
    // (hundreds) read on one axis.
    let decades = peak.log10().ceil().max(1.0);
    let secs = report.bins.len() as f64 * BIN.as_secs_f64();
    let plot_w = WIDTH - LEFT - RIGHT;
    let x = |t: f64| LEFT + t / secs * plot_w;
    let y = |v: f64| top + PANEL - v.max(1.0).log10() / decades * PANEL;

    let _ = writeln!(
        out,
        r#"<text x="{LEFT}" y="{}" font-size="13">{} fleet — goodput {:.0} % / {:.0} % / {:.0} % of capacity (steady / halved / restored), {:.3} retries per call, {} lost</text>"#,
        top - 8.0,
        report.mode.name(),
        report.goodput[0] * 100.0,
        report.goodput[1] * 100.0,
        report.goodput[2] * 100.0,
        report.retries_per_call(),
        report.lost()
    );
    // Grid and axes.
    for k in 0..=decades as i32 {
        let v = 10_f64.powi(k);
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" x2="{}" y1="{y}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">{v:.0}</text>"##,
            WIDTH - RIGHT,
            LEFT - 6.0,
            y(v) + 4.0,
            y = y(v)
        );
    }
    let step = if secs > 20.0 { 5.0 } else { 1.0 };
    let mut t = 0.0;
    while t <= secs + 1e-9 {
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">{t:.0}</text>"#,
            x(t),
            top + PANEL + 16.0
        );
        t += step;
    }
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">time (s); requests per second (log scale), averaged over {} ms</text>"#,
        LEFT + plot_w / 2.0,
        top + PANEL + 34.0,
        BIN.as_millis() * crate::fleet::SMOOTHING as u128
    );
    line(out, &capacity, "#888", "6 4", &x, &y);
    line(out, &throttled, "#d62728", "", &x, &y);
    line(out, &ok, "#2ca02c", "", &x, &y);
    // Legend.
    for (k, (label, color)) in [
        ("200s", "#2ca02c"),
        ("429s", "#d62728"),
        ("capacity min(R, Q/service)", "#888"),
    ]
    .iter()
    .enumerate()
    {
        let lx = LEFT + 10.0 + k as f64 * 120.0;
        let _ = writeln!(
            out,
            r#"<line x1="{lx}" x2="{}" y1="{}" y2="{}" stroke="{color}" stroke-width="2"/><text x="{}" y="{}">{label}</text>"#,
            lx + 18.0,
            top + 12.0,
            top + 12.0,
            lx + 22.0,
            top + 16.0
        );
    }
}

fn line(
    out: &mut String,
    values: &[f64],
    color: &str,
    dash: &str,
    x: &impl Fn(f64) -> f64,
    y: &impl Fn(f64) -> f64,
) {
    let bin = BIN.as_secs_f64();
    let points: Vec<String> = values
        .iter()
        .enumerate()
        .map(|(i, &v)| format!("{:.1},{:.1}", x((i as f64 + 1.0) * bin), y(v)))
        .collect();
    let dash = if dash.is_empty() {
        String::new()
    } else {
        format!(r#" stroke-dasharray="{dash}""#)
    };
    let _ = writeln!(
        out,
        r#"<polyline fill="none" stroke="{color}" stroke-width="1.5"{dash} points="{}"/>"#,
        points.join(" ")
    );
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
