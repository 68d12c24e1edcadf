//! A `Context` anywhere but first, by reference, or twice: one error at the
//! parameter each, and call sites written without it type-check.
use herta::{Context, Failure, Runtime};

#[herta::operation(effect = Pure)]
async fn later(value: u32, ctx: Context) -> Result<u32, Failure<std::io::Error>> {
    let _ = ctx;
    Ok(value)
}

#[herta::operation(effect = Pure)]
async fn borrowed(ctx: &Context, value: u32) -> Result<u32, Failure<std::io::Error>> {
    let _ = ctx;
    Ok(value)
}

#[herta::operation(effect = Pure)]
async fn twice(ctx: Context, value: u32, again: herta::Context) -> Result<u32, Failure<std::io::Error>> {
    let _ = (ctx, again);
    Ok(value)
}

async fn serve(rt: &Runtime) -> Result<u32, Box<dyn std::error::Error>> {
    let a = Later::bind(rt)?.call(1).await?;
    let b = Borrowed::bind(rt)?.call(2).await?;
    let c = Twice::bind(rt)?.call(3).await?;
    Ok(a + b + c)
}

fn main() {
    let _ = serve;
}
