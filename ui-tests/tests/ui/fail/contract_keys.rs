// A contract takes an operation's keys (but `wrapper`) and rules: an
// unsafe retry is the same compile error as on an operation.

#[herta::contract(effect = NonIdempotent, retry(on = Uncertain, max = 3))]
struct ChargeCard;

#[herta::contract(effect = Idempotent, wrapper = CallUpstreamOp)]
struct CallUpstream;

#[herta::contract(resources("upstream" = 1))]
struct NoEffect;

#[herta::contract(effect = Idempotent, admission = Reject, max_wait = "1s")]
struct RejectWithWait;

fn main() {}
