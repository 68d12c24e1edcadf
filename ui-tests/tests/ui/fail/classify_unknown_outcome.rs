#[derive(Debug, herta::Classify)]
pub enum DbError {
    #[outcome(Transeint)]
    Busy,
    #[outcome(Uncertain)]
    LostReply,
    Corrupt(String),
}

fn main() {
    let _ = DbError::Corrupt(String::new());
}
