//! `#[derive(Classify)]` on enums (variant outcomes, a type-level default,
//! generics, no variants) and on structs.
use herta::{Classify, Outcome};

#[derive(Debug, Classify)]
pub enum DbError {
    #[outcome(Transient)]
    Busy,
    #[outcome(Uncertain)]
    LostReply {
        attempt: u32,
    },
    #[outcome(Throttled)]
    TooMany(u32),
    Corrupt(String),
}

#[derive(Debug, Classify)]
#[outcome(Transient)]
pub enum NetError<E: std::fmt::Debug> {
    Reset,
    #[outcome(Permanent)]
    BadRequest(E),
}

#[derive(Debug, Classify)]
#[outcome(Uncertain)]
pub struct LostReply;

#[derive(Debug, Classify)]
pub struct Plain {
    pub code: u16,
}

#[derive(Debug, Classify)]
pub enum Never {}

fn main() {
    assert_eq!(DbError::Busy.outcome(), Outcome::Transient);
    assert_eq!(
        DbError::LostReply { attempt: 1 }.outcome(),
        Outcome::Uncertain
    );
    assert_eq!(DbError::TooMany(3).outcome(), Outcome::Throttled);
    assert_eq!(
        DbError::Corrupt(String::new()).outcome(),
        Outcome::Permanent
    );
    assert_eq!(NetError::<u8>::Reset.outcome(), Outcome::Transient);
    assert_eq!(NetError::BadRequest(1u8).outcome(), Outcome::Permanent);
    assert_eq!(LostReply.outcome(), Outcome::Uncertain);
    assert_eq!(Plain { code: 1 }.outcome(), Outcome::Permanent);
    let _ = |n: &Never| n.outcome();
}
