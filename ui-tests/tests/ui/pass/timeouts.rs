//! Every `timeout` unit (`ms`, `s`, `m`, `h`) and the limits (1 ms, 1 hour):
//! each is a per-attempt `Duration` in the contract.
use herta::{Failure, Runtime};
use std::time::Duration;

type Io<T> = Result<T, Failure<std::io::Error>>;

#[herta::operation(effect = Pure, resources("cpu" = 1), timeout = "1ms")]
async fn one_millisecond() -> Io<()> {
    Ok(())
}

#[herta::operation(effect = Pure, resources("cpu" = 1), timeout = "250ms")]
async fn millis() -> Io<()> {
    Ok(())
}

#[herta::operation(effect = Pure, resources("cpu" = 1), timeout = "2s")]
async fn seconds() -> Io<()> {
    Ok(())
}

#[herta::operation(effect = Pure, resources("cpu" = 1), timeout = "1m")]
async fn minutes() -> Io<()> {
    Ok(())
}

#[herta::operation(effect = Pure, resources("cpu" = 1), timeout = "1h")]
async fn hours() -> Io<()> {
    Ok(())
}

#[herta::operation(effect = Pure, resources("cpu" = 1), timeout = "3600s")]
async fn an_hour_in_seconds() -> Io<()> {
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let ms = Duration::from_millis;
    assert_eq!(OneMillisecond::CONTRACT.timeout(), Some(ms(1)));
    assert_eq!(Millis::CONTRACT.timeout(), Some(ms(250)));
    assert_eq!(Seconds::CONTRACT.timeout(), Some(ms(2_000)));
    assert_eq!(Minutes::CONTRACT.timeout(), Some(ms(60_000)));
    assert_eq!(Hours::CONTRACT.timeout(), Some(ms(3_600_000)));
    assert_eq!(AnHourInSeconds::CONTRACT.timeout(), Some(ms(3_600_000)));

    let rt = Runtime::builder()
        .resource(herta::Resource::new("cpu", 1))
        .build()
        .unwrap();
    Seconds::bind(&rt).unwrap().call().await.unwrap();
    Hours::bind(&rt).unwrap().call().await.unwrap();
}
