#[derive(Debug, herta::Classify)]
pub enum FetchError {
    #[outcome(Success)]
    Done,
    #[outcome]
    Busy,
    #[outcome(Transient)]
    #[outcome(Uncertain)]
    Twice,
    Io(#[outcome(Transient)] String),
}

fn main() {
    let _ = FetchError::Done;
}
