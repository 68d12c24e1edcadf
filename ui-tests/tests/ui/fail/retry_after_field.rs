#[derive(Debug, herta::Classify)]
#[outcome(Throttled)]
struct RateLimited {
    #[retry_after]
    seconds: u64,
}

#[derive(Debug, herta::Classify)]
enum ApiError {
    #[outcome(Throttled)]
    Limited {
        #[retry_after]
        first: std::time::Duration,
        #[retry_after]
        second: std::time::Duration,
    },
    #[outcome(Transient)]
    Busy(#[retry_after(secs)] std::time::Duration),
}

fn main() {}
