//! The stages of a call, written once and expanded twice by [`Bound::run`]
//! (`super::Bound::run`): once bounded by the call's
//! [`Limits`](super::waiting::Limits), once by the constant `Limits::NONE`,
//! for a call no limit can apply to (no `max_wait` or `deadline` declared,
//! no `herta::deadline` scope running in the process). In the second copy
//! every limit check compiles away, so bounded waiting costs a call that
//! uses none of it one load and one branch (`waiting::may_apply`), not one
//! check per stage (measured: 12 instructions per call; `profile_call`).
//!
//! A macro, not a generic `async fn`: a nested future per copy costs more
//! than the checks it saves (about 80 instructions per call, measured).
//! The macro takes the names of `run`'s locals it uses, so what a stage
//! reads is visible at the call site; the paths inside resolve there
//! (`call/mod.rs`).

/// Ends the stages (the block labelled `$end`) with a stage's refusal, or
/// gives what the stage took.
macro_rules! stage {
    ($end:lifetime, $stage:expr) => {
        match $stage {
            Ok(held) => held,
            Err(refused) => break $end Err(End::Refused(refused)),
        }
    };
}

/// The stages from the key to the last attempt, bounded by `$limits`; the
/// value is how the call ended (`Result<_, End<_>>`). `$attempt`,
/// `$held_key` and `$permit` are `run`'s, shared by both copies: the
/// attempt number, and the key guard and the permit, which the stages
/// assign (`$permit` is `None` while the call waits for its budgets, during
/// a backoff sleep, and after a refused re-acquisition).
macro_rules! stages {
    ($limits:expr, $inner:ident, $call:ident, $rt:ident, $contract:ident, $key:ident, $handler:ident, $classify:ident, $retry_after:ident, $attempt:ident, $held_key:ident, $permit:ident) => {
'stages: {
            let admission = $contract.admission();
            $held_key = match (&$inner.keys, $key) {
                (Some(table), Some(value)) => {
                    let key = TableKey {
                        key: value,
                        ops: $inner.key_ops,
                    };
                    Some(match admission {
                        Admission::Reject => {
                            stage!('stages, key::try_acquire(table, key, $contract, $inner.describe_key))
                        }
                        Admission::Wait => stage!('stages,
                            key::wait(
                                table,
                                key,
                                $call.events(),
                                &$limits,
                                $contract,
                                $inner.describe_key
                            )
                            .await
                        ),
                    })
                }
                _ => None,
            };
            // The lock-free try's result is matched in a statement of its
            // own, so that the call's state does not keep it across the
            // wait (see the attempt's block below).
            let busy = match budgets::try_acquire($rt, &$inner.needs) {
                Ok(taken) => {
                    $permit = Some(taken);
                    None
                }
                Err(error) => {
                    // Set on this path too, so that `$permit` is assigned on
                    // every path the compiler can follow past the wait.
                    $permit = None;
                    Some(error)
                }
            };
            if let Some(error) = busy {
                $permit = Some(stage!('stages,
                    budgets::contended($rt, &$inner.needs, error, admission, $call.events(), &$limits)
                        .await
                ));
            }
            if $limits.passed() {
                break 'stages Err(End::Refused(ended::Refusal::DeadlineExceeded));
            }
            $call.events().emit(Event::Started);
            backoff::first_attempt($rt, $contract);
            loop {
                // One attempt. Its locals end with this block, before the
                // backoff's await: an `async fn` keeps a local in its state
                // across an await while the local's scope lasts, even once
                // moved from, and the attempt's result written there and
                // read back at once stalled the load on the store (13-18 %
                // of an uncontended call's time, `perf annotate`).
                let end = {
                    $call.attempt($attempt);
                    let ctx = attempts::context($contract, $attempt, $limits.deadline);
                    let deadline = ctx.deadline;
                    let clock = AttemptClock::start();
                    let run = AssertUnwindSafe($handler(ctx)).catch_unwind();
                    let finished = match deadline {
                        Some(deadline) => tokio::time::timeout_at(deadline, run).await.ok(),
                        None => Some(run.await),
                    };
                    $call.events().emit(Event::AttemptEnded(clock));
                    let missed = finished.is_none() && deadline == $limits.deadline;
                    match attempts::classified(
                        $contract,
                        $attempt,
                        finished,
                        &$classify,
                        $call.events(),
                        missed,
                    ) {
                        Err(end)
                            if attempts::Policy::new($contract, &$rt.gate).retry($attempt, &end)
                                && !$limits.passed() =>
                        {
                            end
                        }
                        end => break end,
                    }
                };
                let next = backoff::between(
                    $rt,
                    $contract,
                    &$inner.needs,
                    &mut $permit,
                    backoff::Failed::new($attempt, &end, &$retry_after),
                    &$limits,
                    $call.events(),
                );
                match next.await {
                    Ok(()) => {}
                    Err(backoff::Stop::Last) => break Err(end),
                    Err(backoff::Stop::Refused(refused)) => break Err(End::Refused(refused)),
                }
                $attempt += 1;
                $call.events().emit(Event::Retrying { attempt: $attempt });
            }
        }
    };
}
