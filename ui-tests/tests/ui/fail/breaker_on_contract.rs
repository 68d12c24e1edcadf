herta::breakers! {
    pub PAYMENTS: "payments" = breaker(failure_rate = 50);
    pub LEDGER: "ledger" = breaker(failure_rate = 50);
}

herta::resources! {
    pub WORKER: "worker" = 4;
}

#[herta::contract(effect = Idempotent, breaker = (PAYMENTS, LEDGER))]
pub struct CallPayments;

#[herta::contract(effect = Idempotent, breaker = 5)]
pub struct CallLedger;

#[herta::contract(effect = Idempotent, breaker = WORKER)]
pub struct CallWorker;

fn main() {}
