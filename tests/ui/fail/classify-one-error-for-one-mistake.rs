// One mistake in the enum is one error: the code that uses the type as a
// `Classify` gets no second one.
#[derive(Debug, resil::Classify)]
pub enum ApiError {
    Unavailable,
    #[classify(kind = "Unavailable")]
    Down,
}

fn kind_of(e: &ApiError) -> &'static str {
    resil::Classify::kind(e)
}

fn main() {
    let _ = kind_of(&ApiError::Down);
}
