//! A fleet of 4 worker processes, each with its own herta runtime, against
//! one provider that enforces a global quota; see the crate's docs.
//!
//! ```text
//! cargo run --release -p herta-fleet                        # 10 s phases, writes examples/fleet/fleet.svg
//! cargo run --release -p herta-fleet -- --phase-secs 3 --naive-phase-secs 3 --svg /tmp/fleet.svg --csv /tmp/bins.csv
//! ```
//!
//! Exit status 0 when the cooperative fleet kept every invariant (nothing
//! lost, in flight never above `Q`, goodput ≥ 90 % of capacity, retries per
//! call within the retry budget's ratio and reserve), 1 otherwise, 2 for bad
//! arguments. The first argument `worker` runs one worker instead (the
//! coordinator starts them so).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use herta_fleet::fleet::{self, Config};
use herta_fleet::worker::{self, Mode, RETRY_MIN_PER_SECOND, RETRY_RATIO, RETRY_WINDOW};
use herta_fleet::{plot, violations};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = if args.first().map(String::as_str) == Some("worker") {
        worker_main(&args[1..])
    } else {
        coordinator_main(&args)
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::from(2)
        }
    }
}

/// `--name value` pairs.
fn flags(args: &[String]) -> Result<Vec<(&str, &str)>, String> {
    args.chunks(2)
        .map(|pair| match pair {
            [name, value] if name.starts_with("--") => Ok((name.as_str(), value.as_str())),
            _ => Err(format!("expected `--flag value` pairs, got {pair:?}")),
        })
        .collect()
}

fn number<T: std::str::FromStr>(name: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("{name}: `{value}` is not a number"))
}

fn worker_main(args: &[String]) -> Result<ExitCode, String> {
    let (mut mode, mut base, mut users, mut seed) = (None, None, 16, 1);
    for (name, value) in flags(args)? {
        match name {
            "--mode" => mode = Some(Mode::parse(value).ok_or(format!("--mode {value}?"))?),
            "--base" => base = Some(value.to_owned()),
            "--users" => users = number(name, value)?,
            "--seed" => seed = number(name, value)?,
            _ => return Err(format!("unknown worker flag {name}")),
        }
    }
    let (mode, base) = mode.zip(base).ok_or("a worker needs --mode and --base")?;
    // One thread per worker: four of them and the provider share the CPUs.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let tally = rt.block_on(worker::run(mode, &base, users, seed))?;
    println!("{}", tally.line());
    Ok(ExitCode::SUCCESS)
}

fn coordinator_main(args: &[String]) -> Result<ExitCode, String> {
    let mut phase = 10.0;
    let mut naive_phase = None;
    let mut svg = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fleet.svg");
    let mut note = String::from("2 shared vCPU");
    let mut csv = None;
    for (name, value) in flags(args)? {
        match name {
            "--phase-secs" => phase = number(name, value)?,
            "--naive-phase-secs" => naive_phase = Some(number(name, value)?),
            "--svg" => svg = PathBuf::from(value),
            "--note" => note = value.to_owned(),
            "--csv" => csv = Some(PathBuf::from(value)),
            _ => {
                return Err(format!(
                    "unknown flag {name}; see the docs at the top of main.rs"
                ))
            }
        }
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let config = Config::new(exe, Duration::from_secs_f64(phase));
    let naive_config = Config {
        phase: Duration::from_secs_f64(naive_phase.unwrap_or(phase)),
        ..config.clone()
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let (cooperative, naive) = rt.block_on(async {
        let cooperative = fleet::run(&config, Mode::Cooperative).await?;
        let naive = fleet::run(&naive_config, Mode::Naive).await?;
        Ok::<_, String>((cooperative, naive))
    })?;
    if let Some(csv) = csv {
        let mut text =
            String::from("fleet,bin,requests,ok,over_q,over_rate,peak_in_flight,q,held_us\n");
        for report in [&cooperative, &naive] {
            for (i, b) in report.bins.iter().enumerate() {
                text.push_str(&format!(
                    "{},{i},{},{},{},{},{},{},{}\n",
                    report.mode.name(),
                    b.requests,
                    b.ok,
                    b.over_q,
                    b.over_rate,
                    b.peak_in_flight,
                    b.q,
                    b.held_us
                ));
            }
        }
        std::fs::write(&csv, text).map_err(|e| format!("{}: {e}", csv.display()))?;
    }
    println!("{}", cooperative.summary());
    println!("{}", naive.summary());
    let note = format!(
        "{note}; {} workers × {} callers; Q = {} (halved in the third phase), R = {}/s, {} ms per request; cooperative retry budget {RETRY_RATIO} + {RETRY_MIN_PER_SECOND}/s",
        config.workers,
        config.users,
        config.quota.q,
        config.quota.rate,
        config.quota.service.as_millis()
    );
    std::fs::write(&svg, plot::svg(&[cooperative.clone(), naive], &note))
        .map_err(|e| format!("{}: {e}", svg.display()))?;
    println!("wrote {}", svg.display());
    // The retry budget's bound: the ratio, plus each worker's reserve once
    // per window begun.
    let secs = (config.phase * 4).as_secs_f64();
    let windows = (secs / RETRY_WINDOW.as_secs_f64()).ceil() + 1.0;
    let reserve = f64::from(config.workers)
        * f64::from(RETRY_MIN_PER_SECOND)
        * RETRY_WINDOW.as_secs_f64()
        * windows;
    let max_retries = f64::from(RETRY_RATIO) + reserve / cooperative.tally.calls.max(1) as f64;
    let problems = violations(&cooperative, [0.9; 3], max_retries);
    for p in &problems {
        println!("VIOLATED: {p}");
    }
    Ok(if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
