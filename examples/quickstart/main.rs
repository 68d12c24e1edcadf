//! herta in one page: a shared budget, a retried idempotent operation and a
//! fail-fast non-idempotent one.
//!
//! ```text
//! cargo run -p herta-quickstart
//! ```

use std::io;
use std::time::Duration;

use herta::{Context, Failure, Runtime};

// A budget is a named number of units. Every operation that names it shares it.
herta::resources! {
    /// Worker slots shared by `render` and `charge`.
    pub WORKER: "worker" = 4;
}

/// Renders one job. Rendering twice gives the same page, so the operation is
/// `Idempotent` and a `Transient` failure may safely be retried (3 attempts in
/// all), after a jittered backoff of 10 ms, then up to 20 ms: a flaky backend
/// is not hammered, and the worker is free for others while this call waits.
/// When all 4 workers are busy, a call waits for one.
#[herta::operation(effect = Idempotent, resources(WORKER = 1), admission = Wait,
                   retry(on = Transient, max = 3, backoff(base = "10ms", cap = "1s")))]
async fn render(ctx: Context, job: String) -> Result<String, Failure<io::Error>> {
    if job == "flaky" {
        // The handler is the code closest to the failure, so it says what the
        // failure means: this one is worth another try.
        tokio::time::sleep(Duration::from_millis(5)).await;
        println!(
            "  render {job}: attempt {} of {} failed",
            ctx.attempt(),
            ctx.max_attempts()
        );
        return Err(Failure::transient(io::Error::new(
            io::ErrorKind::ConnectionReset,
            "render backend reset the connection",
        )));
    }
    tokio::time::sleep(Duration::from_millis(100)).await; // the actual work
    Ok(format!("<h1>{job}</h1> (attempt {})", ctx.attempt()))
}

/// Charges a customer. Charging twice charges twice, so the operation is
/// `NonIdempotent`: herta will never retry it, and it fails fast
/// (`Throttled`) rather than queue when no worker is free.
#[herta::operation(effect = NonIdempotent, resources(WORKER = 1), admission = Reject)]
async fn charge(customer: String) -> Result<String, Failure<String>> {
    tokio::time::sleep(Duration::from_millis(10)).await;
    Ok(format!("receipt for {customer}: 12.00 EUR"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // One runtime owns the budgets; `bind` checks each contract against it.
    let rt = Runtime::builder().resource(WORKER).build()?;
    let render = Render::bind(&rt)?;
    let charge = Charge::bind(&rt)?;

    // Six renders at once on 4 workers: four run, the others wait their turn.
    println!("render: 6 jobs on 4 workers");
    let renders: Vec<_> = ["a", "b", "flaky", "c", "d", "e"]
        .into_iter()
        .map(|job| {
            let render = render.clone(); // cheap: a wrapper is a handle
            tokio::spawn(async move { (job, render.call(job.to_owned()).await) })
        })
        .collect();

    // While the renders hold every worker, a charge does not queue: it is refused.
    tokio::time::sleep(Duration::from_millis(50)).await;
    println!("charge while every worker is busy (admission = Reject):");
    match charge.call("ada".to_owned()).await {
        Ok(receipt) => println!("  charge ada   -> ok: {receipt}"),
        Err(err) => println!("  charge ada   -> {}: {err}", err.outcome()),
    }

    println!("render results:");
    for task in renders {
        let (job, result) = task.await?;
        match result {
            Ok(page) => println!("  render {job:5} -> ok: {page}"),
            // `outcome()` says what the failure means; `handler_error()` is
            // the handler's own error, when it got that far.
            Err(err) => {
                let cause = err.handler_error().map(|f| f.error().to_string());
                println!(
                    "  render {job:5} -> {}: {err}: {}",
                    err.outcome(),
                    cause.unwrap_or_default()
                );
            }
        }
    }

    // Workers are free again. Whether to charge again is the caller's call,
    // never the runtime's: a NonIdempotent operation is never retried.
    println!("charge with workers free:");
    for customer in ["ada", "grace"] {
        match charge.call(customer.to_owned()).await {
            Ok(receipt) => println!("  charge {customer:5} -> ok: {receipt}"),
            Err(err) => println!("  charge {customer:5} -> {}: {err}", err.outcome()),
        }
    }

    // What the runtime did, from its own counters.
    println!("stats:\n{}", rt.stats());

    // Stop admitting, wake anyone still waiting, and wait for running calls.
    rt.shutdown().await;
    Ok(())
}
