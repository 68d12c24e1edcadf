use herta::Failure;

herta::breakers! {
    pub PAYMENTS: "payments" = breaker(failure_rate = 50);
    pub LEDGER: "ledger" = breaker(failure_rate = 50);
}

#[herta::operation(effect = Idempotent, breaker = PAYMENTS, breaker = LEDGER)]
async fn charge(amount: u64) -> Result<u64, Failure<String>> {
    Ok(amount)
}

#[herta::operation(effect = Idempotent, breaker = [PAYMENTS, LEDGER])]
async fn refund(amount: u64) -> Result<u64, Failure<String>> {
    Ok(amount)
}

fn main() {}
