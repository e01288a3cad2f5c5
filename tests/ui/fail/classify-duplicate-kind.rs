#[derive(Debug, resil::Classify)]
pub enum ApiError {
    Throttled,
    #[classify(kind = "Throttled")]
    TooManyRequests,
}

fn main() {}
